//! Script nodes in durable runs are replayed when a run resumes, so their clock and randomness
//! come from the run: a run interrupted before its script's record was committed computes the
//! same value when it is resumed (here: by two fresh engines on two copies of the crashed
//! state), and another run a different one.
mod common;

use std::sync::Arc;

use common::load_str;
use mcpflow_engine::{Durability, RunStatus};
use mcpflow_store::{Lease, NewRun, RecordRow, Store, now_ms};
use serde_json::{Value, json};

const CONFIG: &str = r#"
version: "1.0"
server: { name: "clock", version: "1.0.0" }
tools:
  - name: keyed
    resumable: true
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: key }
      - id: key
        type: script
        source: |
          (ctx) => ({
            now: Date.now(),
            made: new Date().toISOString(),
            key: ctx.start.order + "-" + Math.random().toString(36).slice(2),
          })
        next: end
      - { id: end, type: exit }
"#;

const STARTED_AT: i64 = 1_700_000_000_000;

/// Resumes run `id` of `keyed` as a crashed process left it (only its entry committed), in a
/// fresh store with a fresh engine, and returns its output.
async fn resume_crashed(id: &str) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/state.db", dir.path().display());
    let store: Arc<dyn Store> = mcpflow_store::open(&url).await.expect("store opens");
    let lease = Lease::new("dead", now_ms() + 60_000);
    let args = json!({"order": "o-7"});
    let run = NewRun {
        id: id.into(),
        tool: "keyed".into(),
        config_version: "v1".into(),
        args: args.clone(),
        started_at: STARTED_AT,
        resumable: true,
        started_by: None,
        caller: None,
    };
    store.create_run(&run, &lease).await.expect("run");
    let entry = RecordRow {
        index: 0,
        node_id: "start".into(),
        node_type: "entry".into(),
        start_ms: 0.0,
        end_ms: 0.0,
        input: None,
        output: Some(args),
        error: None,
        parent: None,
    };
    store
        .append_records(id, &lease, &[entry])
        .await
        .expect("records");
    store
        .mark_interrupted(Some("dead"), now_ms())
        .await
        .expect("sweep");
    let (_, engine) = load_str(CONFIG);
    let durability = Durability::new(
        store.clone(),
        "new".into(),
        "v1".into(),
        mcpflow_model::SessionsConfig {
            ttl_seconds: Some(60),
            max_count: None,
        },
    );
    assert!(engine.attach_durability(durability).is_ok());
    let done = engine.resume_interrupted(id).await.expect("restarts");
    assert_eq!(done.status, RunStatus::Succeeded, "{:?}", done.end);
    done.output().expect("output").to_json()
}

#[tokio::test]
async fn a_resumed_run_computes_the_same_clock_and_random_values() {
    let first = resume_crashed("r1").await;
    let again = resume_crashed("r1").await;
    assert_eq!(first, again, "the replayed script made a different key");
    assert_eq!(first["now"], json!(STARTED_AT));
    assert_eq!(first["made"], json!("2023-11-14T22:13:20.000Z"));
    let other = resume_crashed("r2").await;
    assert_ne!(
        other["key"], first["key"],
        "another run draws other numbers"
    );
}
