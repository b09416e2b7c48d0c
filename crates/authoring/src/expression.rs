//! `mcpflow_test_expression`: one JSONata expression, JSON Logic rule or mcp `args` template
//! evaluated exactly as a node evaluates it (the engine's expression layer, with the history
//! functions over the records given), so a model can try each piece before writing a graph.

use mcpflow_expr::{
    Context, ExprError, Jsonata, Limits, Logic, MemoryHistory, Scope, Template, Value as ExprValue,
};
use serde_json::{Value, json};

use crate::answer::Answer;
use crate::args::{Args, Malformed};
use crate::tools::Spec;

/// What expressions read: the context and the history.
pub(crate) struct Input {
    pub context: Context,
    pub history: MemoryHistory,
}

/// The context and history of a call: `history` records in run order (the context built from
/// them), `context` given outright (it wins).
pub(crate) fn input(spec: &Spec, args: &Args<'_>) -> Result<Input, Malformed> {
    let mut history = MemoryHistory::new();
    let mut context = Context::new();
    for (i, record) in args.array("history").into_iter().flatten().enumerate() {
        let Some(node_id) = record.get("nodeId").and_then(Value::as_str) else {
            return Err(Malformed::new(
                spec,
                format!(
                    "`history[{i}]` must be an object {{\"nodeId\": \"<id>\", \"output\": <value>}}, got {}",
                    mcpflow_model::describe(record)
                ),
            ));
        };
        let output = record.get("output").cloned().map(ExprValue::from_json);
        history.push(node_id, output.clone());
        context.set(node_id, output);
    }
    if let Some(given) = args.object("context") {
        context = Context::from_json(Value::Object(given.clone()));
    }
    Ok(Input { context, history })
}

pub(crate) fn answer(spec: &Spec, args: &Args<'_>) -> Answer {
    let given: Vec<&str> = ["jsonata", "logic", "args"]
        .into_iter()
        .filter(|k| args.value(k).is_some())
        .collect();
    if given.len() != 1 {
        let problem = if given.is_empty() {
            "give the expression to test: `jsonata` (a string), `logic` (a JSON Logic rule) or `args` (mcp node arguments)".to_owned()
        } else {
            format!(
                "give exactly one of `jsonata`, `logic` and `args`, not {}",
                given.join(" and ")
            )
        };
        return Malformed::new(spec, problem).into();
    }
    let input = match input(spec, args) {
        Ok(i) => i,
        Err(m) => return m.into(),
    };
    let limits = Limits::default();
    let scope = Scope::new(&input.context, &input.history, &limits);
    let context_keys: Vec<&str> = input.context.iter().map(|(k, _)| k).collect();
    match given[0] {
        "jsonata" => {
            let src = args.str("jsonata").unwrap_or_default();
            let expr = match Jsonata::compile(src) {
                Ok(e) => e,
                Err(e) => return failed("compile", &e, Some(src)),
            };
            match expr.evaluate(&scope) {
                Ok(Some(v)) => Answer::Ok(json!({"result": v.to_json()})),
                Ok(None) => Answer::Ok(json!({
                    "result": null,
                    "undefined": true,
                    "note": format!(
                        "the expression is undefined: a path that matches nothing. The context's node ids are: [{}]; a transform whose expr is undefined outputs nothing, and an args key holding it is dropped",
                        context_keys.join(", ")
                    ),
                })),
                Err(e) => failed("evaluate", &e, Some(src)),
            }
        }
        "logic" => {
            let rule = args.value("logic").cloned().unwrap_or(Value::Null);
            let logic = match Logic::compile(&rule) {
                Ok(l) => l,
                Err(e) => return failed("compile", &e, None),
            };
            match logic.evaluate(&scope) {
                Ok(v) => {
                    let holds = mcpflow_expr::truthy(&v);
                    Answer::Ok(json!({
                        "result": v,
                        "holds": holds,
                        "note": if holds { "as a switch condition this rule holds: the switch goes to its `next`" } else { "as a switch condition this rule does not hold: the switch tries the next condition" },
                    }))
                }
                Err(e) => failed("evaluate", &e, None),
            }
        }
        _ => {
            let value = args.value("args").cloned().unwrap_or(Value::Null);
            let template = match Template::compile(&value) {
                Ok(t) => t,
                Err(e) => return failed("compile", &e, None),
            };
            match template.render(&scope) {
                Ok(rendered) => {
                    // What an mcp node sends: undefined becomes {}.
                    let sent = rendered.unwrap_or_else(|| json!({}));
                    let mut out = json!({"result": sent});
                    if !out["result"].is_object() {
                        out["warning"] = json!(
                            "an mcp node's args must render to an object; this would fail the node"
                        );
                    }
                    Answer::Ok(out)
                }
                Err(e) => failed("evaluate", &e, None),
            }
        }
    }
}

/// A failed expression: its message, code and position, and what usually fixes that code.
pub(crate) fn failed(stage: &str, e: &ExprError, src: Option<&str>) -> Answer {
    let mut error = json!({"stage": stage, "message": e.message});
    if let Some(code) = &e.code {
        error["code"] = json!(code);
    }
    if let (Some(pos), Some(src)) = (e.position, src) {
        error["position"] = json!(pos);
        error["at"] = json!(pointer_at(src, pos));
    }
    Answer::Failed(json!({"error": error, "fix": fix(e.code.as_deref())}))
}

/// The expression with a caret under the place an error was found.
pub(crate) fn pointer_at(src: &str, pos: usize) -> String {
    let shown: String = src.chars().take(200).collect();
    let caret = " ".repeat(pos.min(shown.chars().count()).saturating_sub(1));
    format!("{shown}\n{caret}^")
}

/// What usually fixes an error with this code.
pub(crate) fn fix(code: Option<&str>) -> &'static str {
    match code {
        Some(c) if c.starts_with('S') => {
            "a syntax error: check quotes (JSON keys need \"...\"), brackets and operators near the position; JSONata compares with `=`, not `==`, and joins strings with `&`"
        }
        Some("T2001" | "T2002") => {
            "arithmetic on something that is not a number: convert with $number(...), or check the path reads the field you expect"
        }
        Some(c) if c.starts_with('T') => {
            "a value of the wrong type was given to an operator or function: check the path, or convert with $string()/$number()/$boolean()"
        }
        Some("D1012") => "the expression ran too long: avoid recursion over large inputs",
        Some("D1011") => "the expression recursed too deep",
        Some(c) if c.starts_with('D') => {
            "the expression failed while running: check the function's arguments (mcpflow_test_expression shows the context it read)"
        }
        Some(c) if c.starts_with('L') => {
            "a malformed JSON Logic rule: {\"operator\": [operands]}, one operator per object; `var` takes a JSONata string"
        }
        Some(c) if c.starts_with('A') => {
            "a malformed args template: an object with \"expr\" must have only that key, and its value must be a JSONata string"
        }
        Some(c) if c.starts_with('H') => "a history function was called outside a node",
        _ => "see mcpflow_syntax for the language's rules and examples",
    }
}
