//! `mcpflow run`: one run of one tool from the command line, its result on stdout.

use std::process::ExitCode;

use serde_json::json;

use crate::cli::{ConfigArgs, RunArgs, json_arg};
use crate::load::load;

/// `mcpflow run`: one run, its result (and history) as JSON on stdout.
pub async fn run(args: RunArgs) -> ExitCode {
    let config = ConfigArgs {
        config: args.config.clone(),
        mcp: args.mcp.clone(),
    };
    let (loaded, engine) = match load(&config) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let input = match json_arg("--args", &args.args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(graph) = engine.graph(&args.tool) else {
        let names: Vec<&str> = loaded
            .config
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        eprintln!(
            "mcpflow: no tool named `{}`; the config has: {}",
            args.tool,
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    if let Err(errors) = graph.input_validator().check(&input) {
        eprintln!(
            "mcpflow: invalid arguments for `{}`: {}",
            args.tool,
            errors.join("; ")
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) =
        crate::state::attach(&engine, &loaded, &args.state, crate::state::owner(None)).await
    {
        eprintln!("mcpflow: {e}");
        return ExitCode::FAILURE;
    }
    let run = engine
        .run(mcpflow_engine::RunRequest::new(args.tool.as_str(), input))
        .await;
    engine.pool().shutdown().await;
    let code = match run.error() {
        None => ExitCode::SUCCESS,
        Some(e) => {
            eprintln!("mcpflow: tool `{}` failed: {e}", args.tool);
            ExitCode::FAILURE
        }
    };
    // A run that waits prints its session handle, as a tool call would answer it.
    let result = match run.waiting() {
        Some(w) => Some(w.to_json()),
        None => run.output().map(|v| v.to_json()),
    };
    let out = if args.history {
        let mut o = json!({"result": result, "history": run.history});
        if let Some(e) = run.error() {
            o["error"] = json!(e);
        }
        o
    } else {
        match result {
            Some(v) => v,
            None => return code,
        }
    };
    match serde_json::to_string_pretty(&out) {
        Ok(s) => println!("{s}"),
        Err(e) => {
            eprintln!("mcpflow: cannot print the result: {e}");
            return ExitCode::FAILURE;
        }
    }
    code
}
