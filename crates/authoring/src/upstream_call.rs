//! `mcpflow_call_upstream`: one upstream tool called as an mcp node calls it — `args` rendered
//! against a given context by the same template code, sent through the engine's pool, the
//! result turned into the node's output by [`mcpflow_engine::mcp_output`] — so a model sees
//! what its next node would read before it writes that node.

use std::time::Instant;

use mcpflow_expr::{Limits, Scope, Template};
use serde_json::{Value, json};

use crate::Served;
use crate::answer::Answer;
use crate::args::{Args, Malformed};
use crate::expression::{failed, input};
use crate::tools::Spec;

pub(crate) async fn answer(served: &Served, spec: &Spec, args: &Args<'_>) -> Answer {
    let (Some(server), Some(tool)) = (args.str("server"), args.str("tool")) else {
        return Malformed::new(spec, "both `server` and `tool` are required").into();
    };
    if !served.config.mcp_servers.contains_key(server) {
        let why = crate::discover::unknown_server(served, server);
        return Malformed::new(spec, why).into();
    }
    let template_src = args.value("args").cloned().unwrap_or_else(|| json!({}));
    let template = match Template::compile(&template_src) {
        Ok(t) => t,
        Err(e) => return failed("compile", &e, None),
    };
    let input = match input(spec, args) {
        Ok(i) => i,
        Err(m) => return m.into(),
    };
    // The scope borrows a history that is not `Sync`: it must not live across the call.
    let rendered = {
        let limits = Limits::default();
        let scope = Scope::new(&input.context, &input.history, &limits);
        template.render(&scope)
    };
    let rendered = match rendered {
        Ok(v) => v.unwrap_or_else(|| json!({})),
        Err(e) => return failed("evaluate", &e, None),
    };
    drop(input);
    let Value::Object(arguments) = rendered.clone() else {
        return Answer::Failed(json!({
            "arguments": rendered,
            "error": "args must render to an object (the tool's arguments); the node would fail here",
        }));
    };
    let started = Instant::now();
    let result = served
        .engine
        .pool()
        .call_tool(server, tool, arguments)
        .await;
    let took = (started.elapsed().as_secs_f64() * 1_000_000.0).round() / 1000.0;
    match result {
        Err(e) => Answer::Failed(json!({
            "arguments": rendered,
            "error": e.to_string(),
            "kind": if matches!(e, mcpflow_upstream::UpstreamError::Timeout { .. }) { "timeout" } else { "upstream" },
            "callMs": took,
        })),
        Ok(r) if r.is_error => {
            let message = r
                .content
                .iter()
                .find_map(|b| b.get("text").and_then(Value::as_str))
                .unwrap_or("the tool returned isError without a message")
                .to_owned();
            Answer::Failed(json!({
                "arguments": rendered,
                "error": format!("tool `{tool}` of `{server}` failed: {message}"),
                "kind": "toolError",
                "raw": r,
                "callMs": took,
                "fix": "check the arguments against the tool's inputSchema (mcpflow_get_upstream_tool)",
            }))
        }
        Ok(r) => {
            let raw = serde_json::to_value(&r).unwrap_or(Value::Null);
            let output = mcpflow_engine::mcp_output(r);
            let mut out = json!({
                "arguments": rendered,
                "output": output,
                "raw": raw,
                "callMs": took,
                "note": "`output` is what the next nodes read as $.<this node's id>",
            });
            if out["output"].is_null() {
                out["note"] = json!("the tool answered no content: the node's output is undefined");
            }
            Answer::Ok(out)
        }
    }
}
