//! Debug control inside `parallel` branches and `foreach` items, and conditional breakpoints.
mod common;

use std::time::Duration;

use mcpflow_engine::{Breakpoint, Control, Event, RunRequest, RunStatus};
use serde_json::json;
use tokio::sync::broadcast::Receiver;
use tokio::time::timeout;

const TOOLS: &str = r#"
version: "1.0"
server: { name: dbg, version: "1.0.0" }
mcpServers: {}
tools:
  - name: each
    description: doubles every item of a list, one at a time
    inputSchema: { type: object, properties: { list: { type: array } } }
    nodes:
      - { id: entry, type: entry, next: fe }
      - { id: fe, type: foreach, items: 'entry.list', concurrency: 1, body: dbl, next: exit }
      - { id: dbl, type: transform, transform: { expr: '$.fe.item * 2' }, next: fe }
      - { id: exit, type: exit }
  - name: par
    description: two branches
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: p }
      - id: p
        type: parallel
        branches: { a: a1, b: b1 }
        next: join
      - { id: a1, type: transform, transform: { expr: '"a"' }, next: join }
      - { id: b1, type: transform, transform: { expr: '"b"' }, next: join }
      - { id: join, type: transform, transform: { expr: '$.p' }, next: exit }
      - { id: exit, type: exit }
"#;

async fn next_paused(rx: &mut Receiver<Event>) -> Event {
    timeout(Duration::from_secs(10), async {
        loop {
            let e = rx.recv().await.expect("event stream open");
            if matches!(e, Event::Paused { .. }) {
                return e;
            }
        }
    })
    .await
    .expect("the run pauses")
}

#[tokio::test]
async fn a_conditional_breakpoint_inside_a_foreach_pauses_only_where_it_holds() {
    let (_, engine) = common::load_str(TOOLS);
    let control = Control::new();
    let bp = Breakpoint::new(Some("$.fe.index >= 2")).expect("compiles");
    control.set_breakpoint("dbl", bp);
    let mut handle = engine.spawn(
        RunRequest::new("each", json!({"list": [1, 2, 3, 4]})).with_control(control.clone()),
    );
    let mut rx = handle.events();
    let Event::Paused {
        node_id,
        item,
        reason,
        ..
    } = next_paused(&mut rx).await
    else {
        unreachable!()
    };
    assert_eq!(
        (&*node_id, item, reason.as_str()),
        ("dbl", Some(2), "breakpoint")
    );
    let state = control.state();
    assert_eq!(state.paused.len(), 1);
    assert_eq!(
        state.paused[0].context["fe"],
        json!({"item": 3, "index": 2})
    );

    control.resume();
    let Event::Paused { item, .. } = next_paused(&mut rx).await else {
        unreachable!()
    };
    assert_eq!(item, Some(3));
    control.resume();
    let run = handle.wait().await;
    assert_eq!(run.status, RunStatus::Succeeded);
    assert_eq!(run.output().map(|v| v.to_json()), Some(json!([2, 4, 6, 8])));
}

#[tokio::test]
async fn step_inside_an_item_goes_one_node_and_stop_ends_the_run() {
    let (_, engine) = common::load_str(TOOLS);
    let control = Control::with_breakpoints(["dbl"]);
    let mut handle = engine
        .spawn(RunRequest::new("each", json!({"list": [1, 2, 3]})).with_control(control.clone()));
    let mut rx = handle.events();
    let Event::Paused { item, .. } = next_paused(&mut rx).await else {
        unreachable!()
    };
    assert_eq!(item, Some(0));
    control.remove_breakpoint("dbl");
    control.step();
    // The item's body ends at the foreach, so the next node is the next item's `dbl`.
    let Event::Paused {
        node_id,
        item,
        reason,
        ..
    } = next_paused(&mut rx).await
    else {
        unreachable!()
    };
    assert_eq!((&*node_id, item, reason.as_str()), ("dbl", Some(1), "step"));
    control.stop();
    let run = handle.wait().await;
    assert_eq!(run.status, RunStatus::Stopped);
}

#[tokio::test]
async fn a_breakpoint_reaches_a_parallel_branch() {
    let (_, engine) = common::load_str(TOOLS);
    let control = Control::with_breakpoints(["b1"]);
    let mut handle = engine.spawn(RunRequest::new("par", json!({})).with_control(control.clone()));
    let mut rx = handle.events();
    let Event::Paused {
        node_id, branch, ..
    } = next_paused(&mut rx).await
    else {
        unreachable!()
    };
    assert_eq!((&*node_id, branch.as_deref()), ("b1", Some("b")));
    assert!(control.is_paused());
    control.resume();
    let run = handle.wait().await;
    assert_eq!(run.status, RunStatus::Succeeded);
    assert_eq!(
        run.output().map(|v| v.to_json()),
        Some(json!({"a": "a", "b": "b"}))
    );
    assert!(!control.is_paused());
}

#[test]
fn a_broken_condition_is_refused_with_its_position() {
    let err = Breakpoint::new(Some("$.fe.index >= ")).expect_err("does not compile");
    assert!(err.code.is_some(), "{err:?}");
    assert!(err.position.is_some(), "{err:?}");
}

#[tokio::test]
async fn a_condition_that_fails_to_evaluate_pauses_and_says_why() {
    let (_, engine) = common::load_str(TOOLS);
    let control = Control::new();
    control.set_breakpoint(
        "dbl",
        Breakpoint::new(Some("$.fe.item + 'x'")).expect("compiles"),
    );
    let mut handle =
        engine.spawn(RunRequest::new("each", json!({"list": [1]})).with_control(control.clone()));
    let mut rx = handle.events();
    let Event::Paused { reason, .. } = next_paused(&mut rx).await else {
        unreachable!()
    };
    assert!(
        reason.starts_with("breakpoint condition failed"),
        "{reason}"
    );
    control.resume();
    assert_eq!(handle.wait().await.status, RunStatus::Succeeded);
}
