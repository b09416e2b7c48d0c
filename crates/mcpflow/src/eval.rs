//! `mcpflow eval`: try an expression or a rule from the command line.

use std::process::ExitCode;

use serde_json::Value;

use crate::cli::{EvalArgs, json_arg};

/// `mcpflow eval`: one JSONata expression or JSON Logic rule, result JSON on stdout.
pub fn eval(args: EvalArgs) -> ExitCode {
    match evaluate(&args) {
        Ok(Some(v)) => crate::output::emit(&v.to_string(), ExitCode::SUCCESS),
        // JSONata's undefined has no JSON form: print nothing, as jsonata-js's CLI does.
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            ExitCode::FAILURE
        }
    }
}

fn evaluate(args: &EvalArgs) -> Result<Option<Value>, String> {
    let input = args
        .input
        .as_deref()
        .map(|t| json_arg("--input", t))
        .transpose()?;
    if args.logic {
        let rule = json_arg("the rule", &args.expr)?;
        let data = input.unwrap_or(Value::Null);
        let result = if args.classic {
            mcpflow_expr::Logic::compile_classic(&rule).and_then(|l| l.evaluate_json(&data))
        } else {
            mcpflow_expr::Logic::compile(&rule).and_then(|l| l.evaluate_json(&data))
        };
        return result.map(Some).map_err(|e| describe(&e));
    }
    let bindings = match args
        .bindings
        .as_deref()
        .map(|t| json_arg("--bindings", t))
        .transpose()?
    {
        None => serde_json::Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err("--bindings must be a JSON object".into()),
    };
    let expr = mcpflow_expr::Jsonata::compile(&args.expr).map_err(|e| describe(&e))?;
    expr.evaluate_json(input.as_ref(), &bindings, &mcpflow_expr::Limits::default())
        .map_err(|e| describe(&e))
}

fn describe(e: &mcpflow_expr::ExprError) -> String {
    match &e.code {
        Some(code) => format!("{e} [{code}]"),
        None => e.to_string(),
    }
}
