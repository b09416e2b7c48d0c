//! Node options (retry, timeoutMs, onError, optional), parallel, foreach, call and
//! cancellation, against the fixture MCP server over real pipes.
mod common;

use std::time::Duration;

use common::{fixture_bin, load_str};
use mcpflow_engine::{Control, Engine, Event, RunErrorKind, RunRequest, RunStatus};
use serde_json::{Value as Json, json};

/// A config with two fixture processes (`fx`, `fx2`) and the given tools.
fn config(tools: &str) -> String {
    let bin = fixture_bin().display().to_string();
    format!(
        r#"
version: "1.0"
server: {{ name: "resilience", version: "1.0.0" }}
executionLimits: {{ maxNodeExecutions: 100000 }}
mcpServers:
  fx: {{ command: "{bin}", args: [] }}
  fx2: {{ command: "{bin}", args: [] }}
tools:
{tools}
"#
    )
}

fn engine(tools: &str) -> Engine {
    load_str(&config(tools)).1
}

async fn fixture_call(engine: &Engine, server: &str, tool: &str, args: Json) -> Json {
    let Json::Object(map) = args else {
        panic!("object args")
    };
    let r = engine
        .pool()
        .call_tool(server, tool, map)
        .await
        .expect("fixture answers");
    r.structured_content.expect("structured")
}

/// Polls the fixture until it has seen `n` cancellations (a notification is asynchronous).
async fn wait_cancellations(engine: &Engine, server: &str, n: u64) -> u64 {
    let mut seen = 0;
    for _ in 0..500 {
        seen = fixture_call(engine, server, "cancelled_count", json!({})).await["cancelled"]
            .as_u64()
            .unwrap_or(0);
        if seen >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    seen
}

#[tokio::test]
async fn a_tool_failing_twice_is_retried_to_success() {
    let e = engine(
        r#"
  - name: flaky
    nodes:
      - { id: entry, type: entry, next: call }
      - id: call
        type: mcp
        server: fx
        tool: flaky
        args: { key: "twice", failures: 2 }
        retry: { maxAttempts: 3, backoffMs: 1, retryOn: [toolError] }
        next: exit
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("flaky", json!({}))).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
    assert_eq!(
        run.output().unwrap().to_json(),
        json!({"key": "twice", "attempt": 3})
    );
    let call = &run.history.records()[1];
    assert_eq!(call.attempts, Some(3));
    assert_eq!(call.error, None);
    // A successful mcp node's record keeps what it sent, as a failed one's does.
    assert_eq!(call.input, Some(json!({"key": "twice", "failures": 2})));
}

#[tokio::test]
async fn tool_errors_are_not_retried_unless_retry_on_says_so() {
    let e = engine(
        r#"
  - name: flaky
    nodes:
      - { id: entry, type: entry, next: call }
      - id: call
        type: mcp
        server: fx
        tool: flaky
        args: { key: "default", failures: 1 }
        retry: { maxAttempts: 5, backoffMs: 1 }
        next: exit
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("flaky", json!({}))).await;
    let err = run.error().expect("the run fails");
    assert_eq!(err.kind, RunErrorKind::ToolError);
    assert_eq!(run.history.records()[1].attempts, Some(1));
}

#[tokio::test]
async fn a_hanging_call_times_out_and_takes_the_on_error_path() {
    let e = engine(
        r#"
  - name: hang
    nodes:
      - { id: entry, type: entry, next: slow }
      - id: slow
        type: mcp
        server: fx
        tool: sleep
        args: { ms: 60000 }
        timeoutMs: 100
        retry: { maxAttempts: 2, backoffMs: 1 }
        onError: handle
        next: exit
      - { id: handle, type: transform, transform: { expr: '{"handled": $.slow, "prev": $previousNode().kind}' }, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("hang", json!({}))).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
    let out = run.output().unwrap().to_json();
    assert_eq!(out["handled"]["kind"], "timeout");
    assert_eq!(out["handled"]["nodeId"], "slow");
    assert_eq!(out["handled"]["attempts"], 2);
    assert_eq!(out["prev"], "timeout");
    let ids: Vec<&str> = run.history.records().iter().map(|r| &*r.node_id).collect();
    assert_eq!(ids, ["entry", "slow", "handle", "exit"]);
    let slow = &run.history.records()[1];
    assert!(
        slow.error.as_deref().unwrap().contains("timed out"),
        "{slow:?}"
    );
    assert_eq!(slow.attempts, Some(2));
    // Both timed-out attempts were cancelled at the upstream, not left running.
    assert_eq!(wait_cancellations(&e, "fx", 2).await, 2);
}

#[tokio::test]
async fn an_optional_node_records_its_failure_and_goes_on() {
    let e = engine(
        r#"
  - name: opt
    nodes:
      - { id: entry, type: entry, next: bad }
      - { id: bad, type: mcp, server: fx, tool: fail, args: { message: "nope" }, optional: true, next: after }
      - { id: after, type: transform, transform: { expr: '{"msg": $.bad.message, "kind": $.bad.kind}' }, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("opt", json!({}))).await;
    let out = run.output().expect("succeeds").to_json();
    assert!(out["msg"].as_str().unwrap().contains("nope"), "{out}");
    assert_eq!(out["kind"], "toolError");
    assert!(run.history.records()[1].error.is_some());
}

#[tokio::test]
async fn expression_errors_are_routed_but_never_retried() {
    let e = engine(
        r#"
  - name: expr
    nodes:
      - { id: entry, type: entry, next: call }
      - id: call
        type: mcp
        server: fx
        tool: echo
        args: { x: { expr: '$error("bad input")' } }
        retry: { maxAttempts: 3, backoffMs: 1, retryOn: [timeout, transport, toolError] }
        onError: handle
        next: exit
      - { id: handle, type: transform, transform: { expr: '$.call' }, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("expr", json!({}))).await;
    let out = run.output().expect("routed").to_json();
    assert_eq!(out["kind"], "expression");
    assert_eq!(out["attempts"], 1);
}

const PARALLEL: &str = r#"
  - name: par
    nodes:
      - { id: entry, type: entry, next: par }
      - id: par
        type: parallel
        mode: MODE
        branches: { slow: slow, boom: boom, quick: quick }
        next: join
      - { id: slow, type: mcp, server: fx, tool: sleep, args: { ms: SLOW }, next: join }
      - { id: boom, type: mcp, server: fx2, tool: crash, args: {}, next: join }
      - { id: quick, type: transform, transform: { expr: '"quick"' }, next: join }
      - { id: join, type: transform, transform: { expr: '$.par' }, next: exit }
      - { id: exit, type: exit }
"#;

#[tokio::test]
async fn fail_fast_cancels_the_other_branches_when_one_crashes() {
    let e = engine(
        &PARALLEL
            .replace("MODE", "failFast")
            .replace("SLOW", "60000"),
    );
    // Start `fx` first: on a loaded machine a cold `fx` could still be starting when `fx2`
    // crashes, and a request never sent has nothing to cancel.
    assert_eq!(wait_cancellations(&e, "fx", 0).await, 0);
    let run = e.run(RunRequest::new("par", json!({}))).await;
    let err = run.error().expect("the run fails");
    assert_eq!(err.kind, RunErrorKind::Upstream);
    assert_eq!(err.node_id.as_deref(), Some("par"));
    assert!(err.message.contains("branch `boom`"), "{err}");
    // The slow branch never finished: its call was cancelled at the upstream.
    assert!(!run.history.records().iter().any(|r| &*r.node_id == "slow"));
    assert_eq!(wait_cancellations(&e, "fx", 1).await, 1);
    let boom = run
        .history
        .records()
        .iter()
        .find(|r| &*r.node_id == "boom")
        .expect("the crashed branch is recorded");
    let parent = boom.parent.as_ref().unwrap();
    assert_eq!(&*parent.node, "par");
    assert_eq!(parent.branch.as_deref(), Some("boom"));
    let par = run.history.last().unwrap();
    assert_eq!(&*par.node_id, "par");
    assert_eq!(parent.index, Some(par.index));
}

#[tokio::test]
async fn wait_all_lets_every_branch_finish_and_lists_the_failures() {
    let e = engine(
        &PARALLEL
            .replace("MODE", "waitAll")
            .replace("SLOW", "20")
            .replace(
                "next: join\n      - { id: slow",
                "onError: join\n        next: join\n      - { id: slow",
            ),
    );
    let run = e.run(RunRequest::new("par", json!({}))).await;
    let out = run.output().expect("onError handles it").to_json();
    assert_eq!(out["kind"], "upstream");
    let errors = out["errors"].as_object().unwrap();
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["boom"]);
    let ids: Vec<(&str, Option<&str>)> = run
        .history
        .records()
        .iter()
        .map(|r| {
            (
                &*r.node_id,
                r.parent.as_ref().and_then(|p| p.branch.as_deref()),
            )
        })
        .collect();
    // Branch records come in declaration order, then the parallel node's own record.
    assert_eq!(
        ids,
        [
            ("entry", None),
            ("slow", Some("slow")),
            ("boom", Some("boom")),
            ("quick", Some("quick")),
            ("par", None),
            ("join", None),
            ("exit", None)
        ]
    );
}

#[tokio::test]
async fn parallel_joins_branch_outputs_and_branches_see_their_own_work() {
    let e = engine(
        r#"
  - name: par
    nodes:
      - { id: entry, type: entry, next: par }
      - id: par
        type: parallel
        branches: { a: a1, b: b1 }
        next: join
      - { id: a1, type: transform, transform: { expr: 'entry.x + 1' }, next: a2 }
      - { id: a2, type: transform, transform: { expr: '{"mine": $.a1, "other": $exists($.b1), "prev": $previousNode(), "count": $executionCount("a1")}' }, next: join }
      - { id: b1, type: mcp, server: fx, tool: echo, args: { y: { expr: 'entry.x * 10' } }, next: join }
      - { id: join, type: transform, transform: { expr: '{"par": $.par, "a1": $.a1}' }, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("par", json!({"x": 1}))).await;
    let out = run.output().expect("succeeds").to_json();
    assert_eq!(
        out["par"],
        json!({"a": {"mine": 2, "other": false, "prev": 2, "count": 1}, "b": {"y": 10}})
    );
    // After the join the main flow sees the branches' records too.
    assert_eq!(out["a1"], 2);
}

#[tokio::test]
async fn foreach_keeps_order_and_never_exceeds_its_concurrency() {
    let e = engine(
        r#"
  - name: each
    nodes:
      - { id: entry, type: entry, next: fe }
      - { id: fe, type: foreach, items: '[1..1000]', concurrency: 8, body: work, next: exit }
      - { id: work, type: mcp, server: fx, tool: track, args: { key: "fe", ms: 2 }, next: pick }
      - { id: pick, type: transform, transform: { expr: '$.fe.item * 2 + $.fe.index * 0' }, next: fe }
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("each", json!({}))).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
    let out = run.output().unwrap().to_json();
    let expected: Vec<Json> = (1..=1000).map(|i| json!(i * 2)).collect();
    assert_eq!(out, Json::Array(expected));
    let stats = fixture_call(&e, "fx", "track_stats", json!({"key": "fe"})).await;
    assert_eq!(stats["calls"], 1000);
    let max = stats["max_in_flight"].as_u64().unwrap();
    assert!((2..=8).contains(&max), "max in flight {max}");
    // Item records come in input order and name their item.
    let items: Vec<usize> = run
        .history
        .records()
        .iter()
        .filter(|r| &*r.node_id == "pick")
        .map(|r| r.parent.as_ref().unwrap().item.unwrap())
        .collect();
    assert_eq!(items, (0..1000).collect::<Vec<_>>());
}

#[tokio::test]
async fn foreach_with_a_call_body_runs_another_tool_per_item() {
    let e = engine(
        r#"
  - name: double
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: d }
      - { id: d, type: transform, transform: { expr: 'entry.n * 2' }, next: exit }
      - { id: exit, type: exit }
  - name: each
    nodes:
      - { id: entry, type: entry, next: fe }
      - { id: fe, type: foreach, items: 'entry.list', body: dbl, next: exit }
      - { id: dbl, type: call, tool: double, args: { n: { expr: '$.fe.item' } }, next: fe }
      - { id: exit, type: exit }
"#,
    );
    let run = e
        .run(RunRequest::new("each", json!({"list": [1, 2, 3]})))
        .await;
    // Exit turns a falsy value into {}: the doubled numbers are not falsy.
    assert_eq!(run.output().expect("ok").to_json(), json!([2, 4, 6]));
    let call = run
        .history
        .records()
        .iter()
        .find(|r| &*r.node_id == "dbl")
        .unwrap();
    let sub = call.sub_history.as_ref().expect("the sub-run's history");
    let ids: Vec<&str> = sub.records().iter().map(|r| &*r.node_id).collect();
    assert_eq!(ids, ["entry", "d", "exit"]);
}

#[tokio::test]
async fn call_depth_is_limited() {
    let e = load_str(
        &config(
            r#"
  - name: a
    nodes:
      - { id: entry, type: entry, next: c }
      - { id: c, type: call, tool: b, next: exit }
      - { id: exit, type: exit }
  - name: b
    nodes:
      - { id: entry, type: entry, next: c }
      - { id: c, type: call, tool: c, next: exit }
      - { id: exit, type: exit }
  - name: c
    nodes:
      - { id: entry, type: entry, next: exit }
      - { id: exit, type: exit }
"#,
        )
        .replace(
            "maxNodeExecutions: 100000",
            "maxNodeExecutions: 100000, maxCallDepth: 1",
        ),
    )
    .1;
    let run = e.run(RunRequest::new("a", json!({}))).await;
    let err = run.error().expect("the run fails");
    assert_eq!(err.kind, RunErrorKind::Limit);
    assert!(err.message.contains("maxCallDepth is 1"), "{err}");
    assert!(
        e.run(RunRequest::new("b", json!({})))
            .await
            .output()
            .is_some()
    );
}

#[tokio::test]
async fn a_tool_timeout_bounds_the_whole_run() {
    let e = engine(
        r#"
  - name: slow
    timeoutMs: 100
    nodes:
      - { id: entry, type: entry, next: s }
      - { id: s, type: mcp, server: fx, tool: sleep, args: { ms: 60000 }, onError: exit, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("slow", json!({}))).await;
    let err = run.error().expect("the run fails");
    assert_eq!(
        err.kind,
        RunErrorKind::Limit,
        "a tool timeout is not routed"
    );
    assert!(err.message.contains("timeoutMs is 100"), "{err}");
}

#[tokio::test]
async fn cancelling_a_run_cancels_the_upstream_call() {
    let e = engine(
        r#"
  - name: hang
    nodes:
      - { id: entry, type: entry, next: s }
      - { id: s, type: mcp, server: fx, tool: sleep, args: { ms: 60000 }, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let control = Control::new();
    let mut handle = e.spawn(RunRequest::new("hang", json!({})).with_control(control.clone()));
    let mut events = handle.events();
    while let Ok(ev) = events.recv().await {
        if matches!(&ev, Event::NodeStarted { node_id, .. } if &**node_id == "s") {
            break;
        }
    }
    // Let the request reach the fixture before cancelling it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    control.cancel();
    let run = handle.wait().await;
    assert_eq!(run.status, RunStatus::Cancelled);
    assert!(
        run.error()
            .expect("the run fails")
            .message
            .contains("cancelled")
    );
    assert_eq!(wait_cancellations(&e, "fx", 1).await, 1);
}

#[tokio::test]
async fn history_functions_in_a_branch_read_the_fork_prefix_then_the_branch() {
    let e = engine(
        r#"
  - name: hist
    nodes:
      - { id: entry, type: entry, next: t }
      - { id: t, type: transform, transform: { expr: '"before"' }, next: par }
      - id: par
        type: parallel
        branches: { a: a1, b: b1 }
        next: join
      - { id: a1, type: transform, transform: { expr: '{"prev": $previousNode(), "t": $executionCount("t"), "a1": $executionCount("a1")}' }, next: a2 }
      - { id: a2, type: transform, transform: { expr: '{"prev": $previousNode().prev, "last": $nodeExecution("a1", -1).t, "all": $count($nodeExecutions("t"))}' }, next: join }
      - { id: b1, type: foreach, items: '[10, 20]', concurrency: 2, body: item, next: join }
      - { id: item, type: transform, transform: { expr: '{"prev": $previousNode(), "n": $executionCount("item"), "x": $.b1.item}' }, next: b1 }
      - { id: join, type: transform, transform: { expr: '{"par": $.par, "items": $executionCount("item"), "prev": $previousNode() = $.par}' }, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("hist", json!({}))).await;
    let out = run.output().expect("succeeds").to_json();
    assert_eq!(
        out["par"]["a"],
        json!({"prev": "before", "last": 1, "all": 1})
    );
    // Each item sees the prefix at the fork (the branch had nothing yet) and only its own work.
    assert_eq!(
        out["par"]["b"],
        json!([{"prev": "before", "n": 0, "x": 10}, {"prev": "before", "n": 0, "x": 20}])
    );
    // After the join everything is in the run's history.
    assert_eq!(out["items"], 2);
    assert_eq!(out["prev"], true);
    let indices: Vec<usize> = run.history.records().iter().map(|r| r.index).collect();
    assert_eq!(indices, (0..run.history.len()).collect::<Vec<_>>());
    let b1 = run
        .history
        .records()
        .iter()
        .find(|r| &*r.node_id == "b1")
        .unwrap();
    let item = run
        .history
        .records()
        .iter()
        .find(|r| &*r.node_id == "item")
        .unwrap();
    let p = item.parent.as_ref().unwrap();
    assert_eq!((&*p.node, p.item, p.index), ("b1", Some(0), Some(b1.index)));
    assert_eq!(b1.parent.as_ref().unwrap().branch.as_deref(), Some("b"));
}

/// An mcp node naming a tool its upstream does not have fails with the upstream's tools listed,
/// the closest name first, whatever words the upstream itself chose for the refusal.
#[tokio::test]
async fn a_misspelt_upstream_tool_fails_with_the_tools_the_upstream_has() {
    let e = engine(
        r#"
  - name: typo
    nodes:
      - { id: entry, type: entry, next: call }
      - { id: call, type: mcp, server: fx, tool: ecoh, args: { x: 1 }, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let run = e.run(RunRequest::new("typo", json!({}))).await;
    let err = run.error().expect("the run fails");
    assert!(
        err.message
            .contains("upstream `fx` has no tool `ecoh`; its tools: echo, "),
        "{}",
        err.message
    );
}
