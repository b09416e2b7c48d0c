//! The authoring loop of issue #15 in miniature, scripted: starting from a config holding only
//! an upstream, a client that knows nothing of mcpflow finds an upstream tool, builds a graph
//! tool from what the answers give it (the node an answer proposes, the fix a problem names),
//! submits a broken version first, repairs it from the problems alone, tests the pieces and
//! runs the result. Every step reads only the answers of the built-in tools.
mod common;

use common::{all_on, ok, setup};
use serde_json::json;

/// The suggestion in a message such as `… (did you mean "transform"?)`.
fn suggestion(message: &str) -> Option<&str> {
    let rest = message.split("did you mean \"").nth(1)?;
    rest.split('"').next()
}

#[tokio::test]
async fn a_tool_is_written_from_the_answers_alone() {
    let s = setup(&[], all_on());
    let a = &s.authoring;

    // Find a tool that adds numbers, and how to call it from a node.
    let found = ok(
        a,
        "mcpflow_search",
        json!({"query": "add numbers", "kinds": "upstreamTool"}),
    )
    .await;
    let hit = &found["results"][0];
    assert_eq!(hit["name"], "add", "{found}");
    let tool = ok(
        a,
        "mcpflow_get_upstream_tool",
        json!({"server": hit["server"], "tool": hit["name"]}),
    )
    .await;
    let mut call = tool["node"].clone();
    call["next"] = json!("shape");
    let call_id = call["id"].as_str().expect("the node has an id").to_owned();

    // What the next node will read: call the upstream as the node would.
    let args = json!({"a": 1, "b": 2});
    let tried = ok(
        a,
        "mcpflow_call_upstream",
        json!({"server": call["server"], "tool": call["tool"], "args": call["args"], "context": {"entry": args}}),
    )
    .await;
    let output = tried["output"].clone();
    assert!(output.is_object(), "{tried}");

    // A first version with two slips: a misspelt node type and a broken expression.
    let mut definition = json!({
        "name": "sum_two",
        "description": "Adds a and b through the upstream, answers {total}",
        "inputSchema": tool["inputSchema"],
        "nodes": [
            {"id": "entry", "type": "entry", "next": call_id},
            call,
            {"id": "shape", "type": "transfrom", "transform": {"expr": format!("{{\"total\": {call_id}.sum +}}")}, "next": "exit"},
            {"id": "exit", "type": "exit"}
        ]
    });
    let checked = ok(
        a,
        "mcpflow_validate_tool",
        json!({"definition": definition}),
    )
    .await;
    assert_eq!(checked["valid"], false);
    let problems = checked["problems"].as_array().expect("problems").clone();
    assert_eq!(
        problems.len(),
        2,
        "both slips at once, though they are in one node: {checked}"
    );

    // Repair from the problems alone.
    let mut context = json!({"entry": args});
    context[&call_id] = output;
    for p in &problems {
        let path = p["path"].as_str().expect("each problem has a path");
        let message = p["message"].as_str().unwrap_or_default();
        if let Some(fix) = suggestion(message) {
            *definition
                .pointer_mut(path)
                .expect("the path is in the definition") = json!(fix);
        } else {
            assert!(path.ends_with("/expr"), "an expression problem: {p}");
            let candidate = format!("{{\"total\": {call_id}.sum}}");
            let tested = ok(
                a,
                "mcpflow_test_expression",
                json!({"jsonata": candidate, "context": context}),
            )
            .await;
            assert_eq!(tested["result"]["total"].as_f64(), Some(3.0), "{tested}");
            *definition
                .pointer_mut(path)
                .expect("the path is in the definition") = json!(candidate);
        }
    }
    let checked = ok(
        a,
        "mcpflow_validate_tool",
        json!({"definition": definition}),
    )
    .await;
    assert_eq!(checked["valid"], true, "{checked}");

    let ran = ok(
        a,
        "mcpflow_run_tool",
        json!({"definition": definition, "arguments": args}),
    )
    .await;
    assert_eq!(ran["status"], "succeeded");
    assert_eq!(ran["result"]["total"].as_f64(), Some(3.0), "{ran}");
    let history: Vec<&str> = ran["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|r| r["nodeId"].as_str())
        .collect();
    assert_eq!(history, ["entry", call_id.as_str(), "shape", "exit"]);
    s.engine.pool().shutdown().await;
}
