//! Durable runs against a real SQLite store: suspension at an await, continue from persisted
//! state (no in-memory state survives: a fresh engine continues), rejected input, and a
//! resumable run restarted from its last committed node after an interruption.
mod common;

use std::sync::Arc;

use common::load_str;
use mcpflow_engine::{Caller, Control, Durability, Engine, RunRequest, RunStatus, SessionError};
use mcpflow_store::{Lease, NewRun, RecordRow, RunStatus as Stored, Store, now_ms};
use serde_json::json;

const CONFIG: &str = r#"
version: "1.0"
server: { name: "durable", version: "1.0.0" }
tools:
  - name: wait_twice
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: first }
      - id: first
        type: await
        message: { expr: "'n is ' & $string($.start.n)" }
        inputSchema: { type: object, properties: { a: { type: integer } }, required: [a] }
        next: sum
      - { id: sum, type: transform, transform: { expr: "$.start.n + $.first.a" }, next: second }
      - id: second
        type: await
        message: { expr: "'sum is ' & $string($.sum)" }
        inputSchema: { type: object, properties: { b: { type: integer } }, required: [b] }
        next: total
      - { id: total, type: transform, transform: { expr: "{'total': $.sum * $.second.b, 'seen': $count($.first)}" }, next: end }
      - { id: end, type: exit }
  - name: plain
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: double }
      - { id: double, type: transform, transform: { expr: "$.start.n * 2" }, next: end }
      - { id: end, type: exit }
  - name: steps
    resumable: true
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: one }
      - { id: one, type: transform, transform: { expr: "$.start.n + 1" }, next: two }
      - { id: two, type: transform, transform: { expr: "$.one * 10" }, next: end }
      - { id: end, type: exit }
"#;

async fn durable_engine(store: &Arc<dyn Store>, owner: &str) -> Engine {
    let (_, engine) = load_str(CONFIG);
    let d = Durability::new(
        store.clone(),
        owner.into(),
        "v1".into(),
        mcpflow_model::SessionsConfig {
            ttl_seconds: Some(60),
            max_count: None,
        },
    );
    assert!(engine.attach_durability(d).is_ok());
    engine
}

async fn sqlite() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/state.db", dir.path().display());
    let store = mcpflow_store::open(&url).await.expect("store opens");
    (dir, store)
}

#[tokio::test]
async fn a_run_waits_and_a_fresh_engine_continues_it_from_the_store() {
    let (_dir, store) = sqlite().await;
    let engine = durable_engine(&store, "a").await;
    let run = engine
        .run(RunRequest::new("wait_twice", json!({"n": 2})))
        .await;
    assert_eq!(run.status, RunStatus::Waiting, "{:?}", run.end);
    let w = run.waiting().expect("waiting answer").to_json();
    assert_eq!(w["message"], "n is 2");
    let id = w["sessionId"].as_str().expect("session id").to_owned();
    drop(engine);

    // Nothing in memory: another engine (another process, in effect) continues.
    let engine = durable_engine(&store, "b").await;
    let control = Control::new();
    let refused = engine
        .continue_session(
            RunRequest::new("wait_twice", json!({"a": "x"})).with_control(control.clone()),
            &id,
        )
        .await;
    assert!(
        matches!(refused, Err(SessionError::InvalidInput { .. })),
        "{refused:?}"
    );
    let run = engine
        .continue_session(
            RunRequest::new("wait_twice", json!({"a": 3})).with_control(control.clone()),
            &id,
        )
        .await
        .expect("continues");
    assert_eq!(run.status, RunStatus::Waiting);
    assert_eq!(run.waiting().expect("w").to_json()["message"], "sum is 5");
    let run = engine
        .continue_session(
            RunRequest::new("wait_twice", json!({"b": 4})).with_control(control.clone()),
            &id,
        )
        .await
        .expect("continues");
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
    assert_eq!(
        run.output().expect("out").to_json(),
        json!({"total": 20, "seen": 1})
    );

    let stored = store.get_run(&run.id).await.expect("run stored");
    assert_eq!(stored.summary.status, Stored::Succeeded);
    assert_eq!(stored.summary.config_version, "v1");
    let nodes: Vec<String> = store
        .get_records(&run.id)
        .await
        .expect("records")
        .into_iter()
        .map(|r| r.node_id)
        .collect();
    assert_eq!(nodes, ["start", "first", "sum", "second", "total", "end"]);
}

#[tokio::test]
async fn a_changed_config_is_refused_clearly() {
    let (_dir, store) = sqlite().await;
    let engine = durable_engine(&store, "a").await;
    let run = engine
        .run(RunRequest::new("wait_twice", json!({"n": 1})))
        .await;
    let id = run.waiting().expect("w").to_json()["sessionId"]
        .as_str()
        .expect("id")
        .to_owned();
    let (_, other) = load_str(CONFIG);
    let d = Durability::new(
        store.clone(),
        "b".into(),
        "v2".into(),
        mcpflow_model::SessionsConfig {
            ttl_seconds: Some(60),
            max_count: None,
        },
    );
    assert!(other.attach_durability(d).is_ok());
    let err = other
        .continue_session(RunRequest::new("wait_twice", json!({"a": 1})), &id)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("config version v1"), "{err}");
    // Still waiting for a server on the right version.
    let s = store.get_session(&id).await.expect("session");
    assert!(s.is_waiting_at(now_ms()));
}

#[tokio::test]
async fn an_interrupted_resumable_run_restarts_from_its_last_committed_node() {
    let (_dir, store) = sqlite().await;
    // What a crashed process left: the run and its first two nodes.
    let lease = Lease::new("dead", now_ms() + 60_000);
    let run = NewRun {
        id: "r1".into(),
        tool: "steps".into(),
        config_version: "v1".into(),
        args: json!({"n": 4}),
        started_at: now_ms(),
        resumable: true,
        started_by: None,
        caller: None,
    };
    store.create_run(&run, &lease).await.expect("run");
    let row = |index, node: &str, ty: &str, out| RecordRow {
        index,
        node_id: node.into(),
        node_type: ty.into(),
        start_ms: 0.0,
        end_ms: 0.0,
        input: None,
        output: Some(out),
        error: None,
        parent: None,
    };
    store
        .append_records(
            "r1",
            &lease,
            &[
                row(0, "start", "entry", json!({"n": 4})),
                row(1, "one", "transform", json!(5)),
            ],
        )
        .await
        .expect("records");
    let ids = store
        .mark_interrupted(Some("dead"), now_ms())
        .await
        .expect("sweep");
    assert_eq!(ids, ["r1"]);

    let engine = durable_engine(&store, "new").await;
    let done = engine.resume_interrupted("r1").await.expect("restarts");
    assert_eq!(done.status, RunStatus::Succeeded, "{:?}", done.end);
    assert_eq!(done.output().expect("out").to_json(), json!(50));
    let stored = store.get_run("r1").await.expect("run");
    assert_eq!(stored.summary.status, Stored::Succeeded);
    let nodes: Vec<String> = store
        .get_records("r1")
        .await
        .expect("records")
        .into_iter()
        .map(|r| r.node_id)
        .collect();
    assert_eq!(
        nodes,
        ["start", "one", "two", "end"],
        "history kept, then continued"
    );
}

#[tokio::test]
async fn a_run_that_cannot_wait_is_recorded_once_it_ended() {
    let (_dir, store) = sqlite().await;
    let engine = durable_engine(&store, "a").await;
    let run = engine.run(RunRequest::new("plain", json!({"n": 21}))).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
    assert_eq!(run.output().expect("result").to_json(), json!(42));
    // Written in the background after the answer: wait for it, bounded.
    let mut stored = None;
    for _ in 0..500 {
        if let Ok(r) = store.get_run(&run.id).await {
            stored = Some(r);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let stored = stored.expect("the finished run reaches the store");
    assert_eq!(stored.summary.status, Stored::Succeeded);
    assert_eq!(stored.summary.tool, "plain");
    assert_eq!(stored.args, json!({"n": 21}));
    let records = store.get_records(&run.id).await.expect("records");
    let nodes: Vec<&str> = records.iter().map(|r| r.node_id.as_str()).collect();
    assert_eq!(nodes, ["start", "double", "end"]);
    assert_eq!(records[1].output, Some(json!(42)));
}

const OWNED: &str = r#"
version: "1.0"
server: { name: "owned", version: "1.0.0" }
tools:
  - name: approve
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: ask }
      - id: ask
        type: await
        message: { expr: "'approve, ' & $caller.subject & '?'" }
        inputSchema: { type: object, properties: { ok: { type: boolean } }, required: [ok] }
        next: done
      - { id: done, type: transform, transform: { expr: "{'by': $caller.subject, 'ok': $.ask.ok}" }, next: end }
      - { id: end, type: exit }
  - name: steps
    resumable: true
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: one }
      - { id: one, type: transform, transform: { expr: "$.start.n + 1" }, next: two }
      - { id: two, type: transform, transform: { expr: "{'n': $.one, 'by': $caller.subject}" }, next: end }
      - { id: end, type: exit }
"#;

fn caller(subject: &str, admin: bool) -> Caller {
    Caller::new(subject, admin, json!({"subject": subject}))
}

/// Issue #18: a run records who started it; its session is continued, read or cancelled only
/// by that principal or an admin; the continued run reads the continuing caller.
#[tokio::test]
async fn only_the_starter_or_an_admin_acts_on_a_session() {
    let (_dir, store) = sqlite().await;
    let (_, engine) = load_str(OWNED);
    let d = Durability::new(store.clone(), "a".into(), "v1".into(), Default::default());
    assert!(engine.attach_durability(d).is_ok());
    let (alice, bob, root) = (
        caller("alice", false),
        caller("bob", false),
        caller("root", true),
    );
    let start = |who: &Caller| RunRequest::new("approve", json!({})).with_caller(who.clone());
    let run = engine.run(start(&alice)).await;
    let w = run.waiting().expect("waits").to_json();
    assert_eq!(w["message"], "approve, alice?");
    let id = w["sessionId"].as_str().expect("id").to_owned();
    let stored = store.get_run(&run.id).await.expect("run");
    assert_eq!(stored.summary.started_by.as_deref(), Some("alice"));
    assert_eq!(stored.caller, Some(json!({"subject": "alice"})));

    let not_yours = |r: &Result<_, SessionError>| matches!(r, Err(SessionError::NotYours(_)));
    let input =
        |who: &Caller| RunRequest::new("approve", json!({"ok": true})).with_caller(who.clone());
    assert!(not_yours(
        &engine.continue_session(input(&bob), &id).await.map(|_| ())
    ));
    assert!(not_yours(
        &engine.session("approve", &id, &bob).await.map(|_| ())
    ));
    assert!(not_yours(
        &engine
            .cancel_session("approve", &id, &bob)
            .await
            .map(|_| ())
    ));
    // Refused before the tool is checked: another principal learns nothing of the session.
    assert!(not_yours(
        &engine.session("steps", &id, &bob).await.map(|_| ())
    ));
    assert!(engine.session("approve", &id, &root).await.is_ok());
    let done = engine
        .continue_session(input(&alice), &id)
        .await
        .expect("the starter continues");
    assert_eq!(
        done.output().expect("out").to_json(),
        json!({"by": "alice", "ok": true})
    );

    // Started without access control: nobody's, so only an admin's (the open caller is one).
    let open = engine.run(RunRequest::new("approve", json!({}))).await;
    let open_id = open.waiting().expect("waits").session_id.clone();
    assert_eq!(
        open.waiting().expect("w").suspension.message,
        json!("approve, anonymous?")
    );
    assert!(not_yours(
        &engine
            .session("approve", &open_id, &alice)
            .await
            .map(|_| ())
    ));
    assert!(
        engine
            .cancel_session("approve", &open_id, &root)
            .await
            .is_ok()
    );
    let other = engine.run(start(&bob)).await;
    let other_id = other.waiting().expect("waits").session_id.clone();
    assert!(
        engine
            .cancel_session("approve", &other_id, &Caller::open())
            .await
            .is_ok()
    );
}

/// A resumable run restarted after an interruption runs for the caller that started it.
#[tokio::test]
async fn a_restarted_run_keeps_the_caller_that_started_it() {
    let (_dir, store) = sqlite().await;
    let lease = Lease::new("dead", now_ms() + 60_000);
    let run = NewRun {
        id: "r1".into(),
        tool: "steps".into(),
        config_version: "v1".into(),
        args: json!({"n": 4}),
        started_at: now_ms(),
        resumable: true,
        started_by: Some("alice".into()),
        caller: Some(json!({"subject": "alice"})),
    };
    store.create_run(&run, &lease).await.expect("run");
    store
        .mark_interrupted(Some("dead"), now_ms())
        .await
        .expect("sweep");
    let (_, engine) = load_str(OWNED);
    let d = Durability::new(store.clone(), "new".into(), "v1".into(), Default::default());
    assert!(engine.attach_durability(d).is_ok());
    let done = engine.resume_interrupted("r1").await.expect("restarts");
    assert_eq!(
        done.output().expect("out").to_json(),
        json!({"n": 5, "by": "alice"})
    );
}
