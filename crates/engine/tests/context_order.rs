//! mcpGraph compatibility: the context object's keys come most recently executed first (the
//! reference rebuilds it walking the history backwards), through a real run with a loop.
mod common;

use common::load_str;
use mcpflow_engine::{RunRequest, RunStatus};
use serde_json::json;

const CONFIG: &str = r#"
version: "1.0"
server: { name: "order", version: "1.0.0" }
tools:
  - name: count
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: increment }
      - id: increment
        type: transform
        transform: { expr: "$executionCount('increment') + 1" }
        next: check
      - id: check
        type: switch
        conditions:
          - rule: { "<": [{ var: "$.increment" }, { var: "$.entry.n" }] }
            next: increment
        next: keys
      - { id: keys, type: transform, transform: { expr: "{'keys': $keys($), 'text': $string($)}" }, next: whole }
      - { id: whole, type: transform, transform: { expr: "$" }, next: end }
      - { id: end, type: exit }
"#;

#[tokio::test]
async fn the_context_lists_the_most_recently_executed_node_first() {
    let (_, engine) = load_str(CONFIG);
    let run = engine.run(RunRequest::new("count", json!({"n": 2}))).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
    // History: entry, increment, check, increment, check, keys, whole. Walking it backwards,
    // `keys` meets check, increment, entry.
    let keys = run
        .history
        .records()
        .iter()
        .find(|r| &*r.node_id == "keys")
        .and_then(|r| r.output.as_ref())
        .map(|v| v.to_json())
        .expect("keys ran");
    assert_eq!(keys["keys"], json!(["check", "increment", "entry"]));
    assert_eq!(
        keys["text"],
        json!(r#"{"check":"keys","increment":2,"entry":{"n":2}}"#)
    );
    // An exit that returns `$`, serialised as the client sees it.
    let out = run.output().expect("result").to_json();
    assert_eq!(
        serde_json::to_string(&out).expect("json"),
        format!(
            r#"{{"keys":{},"check":"keys","increment":2,"entry":{{"n":2}}}}"#,
            serde_json::to_string(&keys).expect("json")
        )
    );
}
