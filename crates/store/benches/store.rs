//! What durability costs, per backend:
//! - `session_round_trip`: a run suspends at an await and is continued to its end
//!   (create_run + create_session + claim_session + finish_run), one transaction each;
//! - `append_step`: one run step (one history record) committed, as before every node that
//!   touched the outside world;
//! - printed before those: bytes on disk per waiting session, over 1,000 of them.
//!
//! PostgreSQL is the server named by `MCPFLOW_TEST_PG` (default: the local test server), in a
//! schema of its own dropped at the end; it is skipped, saying so, when unreachable.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use mcpflow_store::{Lease, NewRun, NewSession, RecordRow, RunEnd, Store, open};
use serde_json::json;
use sqlx::Connection;
use tokio::runtime::Runtime;

const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/test";
const T0: i64 = 1_700_000_000_000;

struct Backend {
    name: &'static str,
    url: String,
    /// PostgreSQL: the schema to drop at the end.
    cleanup: Option<(String, String)>,
    _dir: Option<tempfile::TempDir>,
}

fn backends(rt: &Runtime) -> Vec<Backend> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut out = vec![Backend {
        name: "sqlite",
        url: format!("sqlite://{}/bench.db", dir.path().display()),
        cleanup: None,
        _dir: Some(dir),
    }];
    let base = std::env::var("MCPFLOW_TEST_PG").unwrap_or_else(|_| DEFAULT_PG.to_owned());
    sqlx::any::install_default_drivers();
    match rt.block_on(sqlx::AnyConnection::connect(&base)) {
        Ok(_) => {
            let schema = format!("bench_{}", &mcpflow_store::new_session_id().unwrap()[..12]);
            let sep = if base.contains('?') { '&' } else { '?' };
            out.push(Backend {
                name: "postgres",
                url: format!("{base}{sep}schema={schema}"),
                cleanup: Some((base, schema)),
                _dir: None,
            });
        }
        Err(e) => eprintln!(
            "PostgreSQL at {} is unreachable ({e}): benchmarking SQLite only",
            mcpflow_store::redact_url(&base)
        ),
    }
    out
}

fn drop_schema(rt: &Runtime, base: &str, schema: &str) {
    rt.block_on(async {
        if let Ok(mut conn) = sqlx::AnyConnection::connect(base).await {
            let sql = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
            let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&mut conn)
                .await;
        }
    });
}

fn run(id: String) -> NewRun {
    NewRun {
        id,
        tool: "order".into(),
        config_version: "sha256:0f3a".into(),
        args: json!({"customer": "c-1042", "items": [{"sku": "A-1", "qty": 2}]}),
        started_at: T0,
        resumable: true,
        started_by: None,
        caller: None,
    }
}

/// A typical await: the context so far and a small input schema.
fn session(run_id: String) -> NewSession {
    NewSession {
        run_id,
        node_id: "confirm_order".into(),
        state: json!({
            "resumeAt": "confirm_order",
            "context": {"quote": {"total": 41.5, "currency": "EUR"}, "stock": {"A-1": 17}}
        }),
        input_schema: json!({
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}, "note": {"type": "string"}},
            "required": ["confirm"]
        }),
        created_at: T0,
        expires_at: T0 + 3_600_000,
    }
}

async fn round_trip(store: &dyn Store, n: u64) {
    let owner = Lease::new("bench-a", T0 + 60_000);
    let claimer = Lease::new("bench-b", T0 + 60_000);
    let id = format!("rt-{n}-{}", mcpflow_store::new_session_id().unwrap());
    store.create_run(&run(id.clone()), &owner).await.unwrap();
    let s = store
        .create_session(&session(id.clone()), "bench-a", Some(1_000_000))
        .await
        .unwrap();
    store
        .claim_session(&s.id, s.version, &claimer, T0 + 1)
        .await
        .unwrap();
    store
        .finish_run(
            &id,
            "bench-b",
            &RunEnd::Succeeded(json!({"ok": true})),
            T0 + 2,
        )
        .await
        .unwrap();
}

fn bytes_per_waiting_session(rt: &Runtime, b: &Backend) {
    let store = rt.block_on(open(&b.url)).unwrap();
    let before = rt.block_on(store.footprint()).unwrap();
    let owner = Lease::new("fp", T0 + 60_000);
    rt.block_on(async {
        for i in 0..1_000 {
            let id = format!("fp-{i}");
            store.create_run(&run(id.clone()), &owner).await.unwrap();
            store
                .create_session(&session(id), "fp", None)
                .await
                .unwrap();
        }
    });
    let after = rt.block_on(store.footprint()).unwrap();
    let state_len = session(String::new()).state.to_string().len()
        + session(String::new()).input_schema.to_string().len();
    println!(
        "{}: per waiting session over 1,000: sessions table {} B, with its run row {} B \
         (state + input schema JSON: {state_len} B)",
        b.name,
        (after.sessions_bytes - before.sessions_bytes) / 1_000,
        (after.sessions_bytes + after.runs_bytes - before.sessions_bytes - before.runs_bytes)
            / 1_000,
    );
    rt.block_on(store.close());
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let backends = backends(&rt);
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(5));
    for b in &backends {
        bytes_per_waiting_session(&rt, b);
        let store: Arc<dyn Store> = rt.block_on(open(&b.url)).unwrap();
        let mut group = c.benchmark_group(b.name);
        group.throughput(Throughput::Elements(1));
        group.bench_function("session_round_trip", |bench| {
            bench.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for i in 0..iters {
                        round_trip(&*store, i).await;
                    }
                    start.elapsed()
                })
            })
        });
        let lease = Lease::new("steps", T0 + 60_000);
        let run_id = format!("steps-{}", mcpflow_store::new_session_id().unwrap());
        rt.block_on(store.create_run(&run(run_id.clone()), &lease))
            .unwrap();
        let mut next = 0i64;
        group.bench_function("append_step", |bench| {
            bench.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let rec = RecordRow {
                            index: next,
                            node_id: "fetch_quote".into(),
                            node_type: "mcp".into(),
                            start_ms: next as f64,
                            end_ms: next as f64 + 1.25,
                            input: Some(json!({"sku": "A-1", "qty": 2})),
                            output: Some(json!({"total": 41.5, "currency": "EUR"})),
                            error: None,
                            parent: None,
                        };
                        next += 1;
                        store
                            .append_records(&run_id, &lease, std::slice::from_ref(&rec))
                            .await
                            .unwrap();
                    }
                    start.elapsed()
                })
            })
        });
        group.finish();
        rt.block_on(store.close());
    }
    c.final_summary();
    for b in &backends {
        if let Some((base, schema)) = &b.cleanup {
            drop_schema(&rt, base, schema);
        }
    }
}
