//! Durable sessions driven by a real MCP client over `mcpflow serve`'s stdio, on SQLite and on
//! the PostgreSQL server (a schema per test, dropped afterwards).

mod common;
mod sessions_support;

use common::{call, cli, stderr};
use serde_json::{Value, json};
use sessions_support::*;

async fn multi_step_workflow(store: TestStore) {
    let config = store.config(&order_config(3600));
    let s = serve(&config, &store.url, "a").await;
    let c = &s.client;
    let names: Vec<String> = c
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for name in ["order", "order_continue", "order_cancel", "order_status"] {
        assert!(
            names.contains(&name.to_owned()),
            "{name} missing from {names:?}"
        );
    }

    let w = start(c, "order", json!({"item": "tea"})).await;
    let id = w["sessionId"].as_str().expect("a session id").to_owned();
    assert_eq!(id.len(), 32, "128 random bits in hex: {id}");
    assert_eq!(w["message"], "How many tea?");
    assert_eq!(w["options"][0]["tool"], "order_continue");
    assert_eq!(w["inputSchema"]["required"], json!(["quantity"]));

    // Rejected input: a clear error, and the session is unharmed.
    let bad = error_text(&cont(c, "order", &id, json!({"quantity": 0})).await);
    assert!(
        bad.contains("inputSchema of await node `quantity`"),
        "{bad}"
    );
    assert!(bad.contains("/quantity"), "names the pointer: {bad}");
    assert!(bad.contains("still waiting"), "{bad}");
    let st = structured(&call(c, "order_status", json!({"sessionId": id})).await);
    assert_eq!(st["status"], "waiting");
    assert_eq!(st["nodeId"], "quantity");

    let w2 = structured(&cont(c, "order", &id, json!({"quantity": 2})).await);
    assert_eq!(w2["status"], "waiting", "{w2}");
    assert_eq!(w2["sessionId"], id.as_str(), "the same session goes on");
    assert_eq!(w2["nodeId"], "address");
    assert_eq!(w2["message"], "Total 6: where to?");

    let done = structured(&cont(c, "order", &id, json!({"street": "Main St"})).await);
    assert_eq!(
        done,
        json!({"item": "tea", "quantity": 2, "total": 6, "street": "Main St"})
    );

    let late = error_text(&cont(c, "order", &id, json!({"street": "x"})).await);
    assert!(late.contains("has ended (completed)"), "{late}");
    let st = structured(&call(c, "order_status", json!({"sessionId": id})).await);
    assert_eq!(st["status"], "completed");
    s.client.cancel().await.ok();
}

#[tokio::test]
async fn multi_step_workflow_sqlite() {
    multi_step_workflow(TestStore::sqlite()).await;
}

#[tokio::test]
async fn multi_step_workflow_postgres() {
    multi_step_workflow(TestStore::postgres().await).await;
}

async fn cancel_and_bad_ids(store: TestStore) {
    let config = store.config(&order_config(3600));
    let s = serve(&config, &store.url, "a").await;
    let c = &s.client;
    let w = start(c, "approve", json!({"n": 1})).await;
    let id = w["sessionId"].as_str().expect("id").to_owned();
    let cancelled = structured(&call(c, "approve_cancel", json!({"sessionId": id})).await);
    assert_eq!(cancelled["status"], "cancelled");
    let after = error_text(&cont(c, "approve", &id, json!({"ok": true})).await);
    assert!(after.contains("has ended (cancelled)"), "{after}");

    let unknown = error_text(
        &cont(
            c,
            "approve",
            "0123456789abcdef0123456789abcdef",
            json!({"ok": true}),
        )
        .await,
    );
    assert!(unknown.contains("no session"), "{unknown}");
    let missing = error_text(&call(c, "approve_continue", json!({"input": {"ok": true}})).await);
    assert!(missing.contains("sessionId"), "{missing}");

    // A session of another tool is refused with the tool to use.
    let w = start(c, "order", json!({"item": "tea"})).await;
    let other = error_text(
        &cont(
            c,
            "approve",
            w["sessionId"].as_str().unwrap_or_default(),
            json!({"ok": true}),
        )
        .await,
    );
    assert!(other.contains("order_continue"), "{other}");
    s.client.cancel().await.ok();
}

#[tokio::test]
async fn cancel_and_bad_ids_sqlite() {
    cancel_and_bad_ids(TestStore::sqlite()).await;
}

#[tokio::test]
async fn cancel_and_bad_ids_postgres() {
    cancel_and_bad_ids(TestStore::postgres().await).await;
}

async fn expiry(store: TestStore) {
    let config = store.config(&order_config(1));
    let s = serve(&config, &store.url, "a").await;
    let c = &s.client;
    let w = start(c, "approve", json!({"n": 1})).await;
    let id = w["sessionId"].as_str().expect("id").to_owned();
    // Waiting out a one-second TTL (not a timing assertion: any delay past it will do).
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let late = error_text(&cont(c, "approve", &id, json!({"ok": true})).await);
    assert!(late.contains("expired"), "{late}");
    let st = structured(&call(c, "approve_status", json!({"sessionId": id})).await);
    assert_eq!(
        st["status"], "expired",
        "the sweep turned it into a tombstone: {st}"
    );
    s.client.cancel().await.ok();
}

#[tokio::test]
async fn expiry_sqlite() {
    expiry(TestStore::sqlite()).await;
}

#[tokio::test]
async fn expiry_postgres() {
    expiry(TestStore::postgres().await).await;
}

#[tokio::test]
async fn a_database_that_is_down_at_start_is_a_clear_error() {
    let store = TestStore::sqlite();
    let config = store.config(&order_config(60));
    let config = config.to_string_lossy().into_owned();
    let out = cli(
        &[
            "serve",
            &config,
            "--store",
            "postgres://postgres@127.0.0.1:1/test",
        ],
        None,
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("unavailable"), "{err}");
    assert!(err.contains("127.0.0.1:1"), "names the store: {err}");
}

/// Crash test: many sessions waiting, kill -9, a new process continues every one.
async fn crash(store: TestStore, count: usize) {
    let config = store.config(&order_config(3600));
    let first = serve(&config, &store.url, "crashing").await;
    let mut ids = Vec::with_capacity(count);
    for chunk in (0..count).collect::<Vec<_>>().chunks(50) {
        let starts = chunk
            .iter()
            .map(|n| start(&first.client, "approve", json!({"n": n})));
        for w in futures::future::join_all(starts).await {
            ids.push(w["sessionId"].as_str().expect("id").to_owned());
        }
    }
    kill_hard(first.pid);
    drop(first);

    let second = serve(&config, &store.url, "restarted").await;
    let c = &second.client;
    let mut done = 0;
    for (chunk_no, chunk) in ids.chunks(50).enumerate() {
        let conts = chunk
            .iter()
            .map(|id| cont(c, "approve", id, json!({"ok": true})));
        for (k, r) in futures::future::join_all(conts)
            .await
            .into_iter()
            .enumerate()
        {
            let out = structured(&r);
            assert_eq!(out, json!({"n": chunk_no * 50 + k, "ok": true}));
            done += 1;
        }
    }
    assert_eq!(done, count);
    second.client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_waiting_sessions_survive_kill_9_sqlite() {
    crash(TestStore::sqlite(), 1000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_waiting_sessions_survive_kill_9_postgres() {
    crash(TestStore::postgres().await, 1000).await;
}

/// Two processes on one PostgreSQL: started through one, continued through the other; of two
/// concurrent continues of one session exactly one wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_sessions_on_postgres() {
    let store = TestStore::postgres().await;
    let config = store.config(&order_config(3600));
    let a = serve(&config, &store.url, "replica-a").await;
    let b = serve(&config, &store.url, "replica-b").await;

    let w = start(&a.client, "order", json!({"item": "jam"})).await;
    let id = w["sessionId"].as_str().expect("id").to_owned();
    let w2 = structured(&cont(&b.client, "order", &id, json!({"quantity": 3})).await);
    assert_eq!(w2["message"], "Total 9: where to?");
    let done = structured(&cont(&a.client, "order", &id, json!({"street": "Elm"})).await);
    assert_eq!(done["total"], 9);

    for n in 0..20 {
        let w = start(&a.client, "approve", json!({"n": n})).await;
        let id = w["sessionId"].as_str().expect("id").to_owned();
        let (ra, rb) = tokio::join!(
            cont(&a.client, "approve", &id, json!({"ok": true})),
            cont(&b.client, "approve", &id, json!({"ok": false}))
        );
        let wins: Vec<Value> = [&ra, &rb]
            .iter()
            .filter(|r| r.is_error != Some(true))
            .map(|r| structured(r))
            .collect();
        assert_eq!(wins.len(), 1, "exactly one continue wins: {ra:?} / {rb:?}");
        let loser = if ra.is_error == Some(true) { &ra } else { &rb };
        let text = error_text(loser);
        assert!(
            text.contains("being continued by another request") || text.contains("has ended"),
            "{text}"
        );
    }
    a.client.cancel().await.ok();
    b.client.cancel().await.ok();
}

/// The database goes away while a durable run waits on an upstream: the call fails clearly,
/// and the store holds only what was committed (the run, no half-written step).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_gone_mid_run_fails_the_call_clearly() {
    let store = TestStore::postgres().await;
    let relay = Relay::start("127.0.0.1:5432").await;
    let schema = store
        .url
        .rsplit("schema=")
        .next()
        .unwrap_or_default()
        .to_owned();
    let relayed = format!(
        "postgres://postgres@127.0.0.1:{}/test?schema={schema}",
        relay.port
    );
    let config = store.config(
        r#"
version: "1.0"
server: {name: slow, version: "1.0.0"}
mcpServers:
  fx: {command: "{fixture}"}
tools:
  - name: slow
    resumable: true
    nodes:
      - {id: start, type: entry, next: nap}
      - {id: nap, type: mcp, server: fx, tool: sleep, args: {ms: 3000}, next: finish}
      - {id: finish, type: exit}
"#,
    );
    let s = serve(&config, &relayed, "a").await;
    let call_fut = call(&s.client, "slow", json!({}));
    tokio::pin!(call_fut);
    // Cut the database once the run is recorded as running (read directly, not through the relay).
    let run_id = loop {
        tokio::select! {
            r = &mut call_fut => panic!("the call ended before the database went away: {r:?}"),
            () = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
        }
        let out = cli(&["runs", "list", "--store", &store.url, "--json"], None);
        if out.status.success()
            && let Ok(Value::Array(runs)) = serde_json::from_slice::<Value>(&out.stdout)
            && let Some(run) = runs.first()
        {
            assert_eq!(run["status"], "running");
            break run["id"].as_str().unwrap_or_default().to_owned();
        }
    };
    relay.cut();
    let failed = error_text(&call_fut.await);
    assert!(failed.contains("could not be recorded"), "{failed}");
    assert!(failed.contains("unavailable"), "{failed}");

    let out = cli(
        &["runs", "show", &run_id, "--store", &store.url, "--json"],
        None,
    );
    let shown: Value = serde_json::from_slice(&out.stdout).expect("runs show prints JSON");
    assert_eq!(
        shown["run"]["status"], "running",
        "left for the lease sweep: {shown}"
    );
    assert_eq!(
        shown["history"],
        json!([]),
        "no step was half-written: {shown}"
    );
}

/// A tool that can wait and declares an `outputSchema`: the waiting handle is its structured
/// content for a while, so the listed schema admits it (a client that checks structured
/// content against the schema, as the Python SDK does, would otherwise refuse the handle and
/// never learn the session id), and the finished result still has to match what was declared.
#[tokio::test]
async fn a_waiting_tool_with_an_output_schema_lists_one_the_handle_passes() {
    let store = TestStore::sqlite();
    let yaml = order_config(3600).replace(
        "    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}",
        "    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}\n    \
         outputSchema: {type: object, properties: {ok: {type: boolean}}, required: [ok], $defs: {unused: {type: string}}}",
    );
    assert!(
        yaml.contains("outputSchema"),
        "the approve tool declares one"
    );
    let config = store.config(&yaml);
    let s = serve(&config, &store.url, "a").await;
    let c = &s.client;
    let tools = c.list_all_tools().await.expect("tools/list");
    let approve = tools.iter().find(|t| t.name == "approve").expect("listed");
    let listed = Value::Object((*approve.output_schema.clone().expect("an outputSchema")).clone());
    assert_eq!(listed["type"], "object");
    assert!(
        listed["$defs"].is_object(),
        "root keywords stay at the root: {listed}"
    );
    let schema = mcpflow_engine::SchemaValidator::new(&listed).expect("a valid schema");
    let w = start(c, "approve", json!({"n": 1})).await;
    assert_eq!(
        schema.check(&w),
        Ok(()),
        "the handle passes the listed schema: {w}"
    );
    assert!(
        schema.check(&json!({"ok": "yes"})).is_err(),
        "a result the declared schema refuses is still refused"
    );
    let id = w["sessionId"].as_str().expect("a session id");
    let done = structured(&cont(c, "approve", id, json!({"ok": true})).await);
    assert_eq!(done, json!({"n": 1, "ok": true}));
    assert_eq!(schema.check(&done), Ok(()));
    s.client.cancel().await.ok();
}
