//! What the store reads back from its database, through its public API: rows of a real SQLite
//! store holding any text where JSON is kept, any status, id and number the schema lets in
//! (a database damaged, or written by something else). Reading them is a value or
//! `StoreError::Corrupt`, never a panic. Also the store URL a user gives: its redacted form,
//! which goes into logs, never holds the password.
#![no_main]

use std::sync::{Arc, OnceLock};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mcpflow_store::{RunFilter, SessionFilter, Store};
use sqlx::SqlitePool;

const RUN_STATUSES: [&str; 7] = [
    "running",
    "waiting",
    "succeeded",
    "failed",
    "cancelled",
    "interrupted",
    "expired",
];
const SESSION_STATUSES: [&str; 6] = [
    "waiting",
    "claimed",
    "completed",
    "cancelled",
    "expired",
    "interrupted",
];

#[derive(Arbitrary, Debug)]
struct Rows {
    run_id: String,
    run_status: u8,
    args: String,
    resumable: i64,
    owner: Option<String>,
    lease_until: Option<i64>,
    started_at: i64,
    ended_at: Option<i64>,
    result: Option<String>,
    error: Option<String>,
    records: Vec<Record>,
    session_id: String,
    session_status: u8,
    version: i64,
    state: Option<String>,
    input_schema: Option<String>,
    times: (i64, i64, i64),
    claimed_by: Option<String>,
    url: String,
}

#[derive(Arbitrary, Debug)]
struct Record {
    idx: i64,
    node_id: String,
    start_ms: f64,
    end_ms: f64,
    input: Option<String>,
    output: Option<String>,
    error: Option<String>,
    parent: Option<i64>,
}

struct Fixture {
    runtime: tokio::runtime::Runtime,
    store: Arc<dyn Store>,
    raw: SqlitePool,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("state.db");
        let (store, raw) = runtime.block_on(async {
            let store = mcpflow_store::open(&format!("sqlite://{}", path.display()))
                .await
                .expect("store opens");
            let raw = SqlitePool::connect(&format!("sqlite://{}", path.display()))
                .await
                .expect("raw connection");
            (store, raw)
        });
        Fixture {
            runtime,
            store,
            raw,
            _dir: dir,
        }
    })
}

fuzz_target!(|rows: Rows| {
    check_redaction(&rows.url);
    let f = fixture();
    f.runtime.block_on(async {
        write(&f.raw, &rows).await;
        let s = &f.store;
        let _ = s.get_run(&rows.run_id).await;
        let _ = s.get_records(&rows.run_id).await;
        let _ = s.get_session(&rows.session_id).await;
        let _ = s.list_runs(&RunFilter::default()).await;
        let _ = s.list_sessions(&SessionFilter::default()).await;
        let _ = s.run_stats().await;
        let _ = s.count_sessions().await;
        let _ = s.footprint().await;
        let _ = s.mark_interrupted(None, rows.times.0).await;
        let _ = s.expire_sessions(rows.times.1).await;
    });
});

/// The rows as written straight into the tables; what the schema refuses is left out.
async fn write(db: &SqlitePool, r: &Rows) {
    for sql in [
        "DELETE FROM sessions",
        "DELETE FROM records",
        "DELETE FROM runs",
    ] {
        sqlx::query(sql).execute(db).await.expect("delete");
    }
    let pick = |list: &[&'static str], i: u8| list.get(usize::from(i)).copied().unwrap_or("bogus");
    let _ = sqlx::query(
        "INSERT INTO runs (id, tool, config_version, args, resumable, status, owner, lease_until, \
         started_at, ended_at, result, error) VALUES (?, 't', 'sha256:0', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&r.run_id)
    .bind(&r.args)
    .bind(r.resumable)
    .bind(pick(&RUN_STATUSES, r.run_status % 8))
    .bind(&r.owner)
    .bind(r.lease_until)
    .bind(r.started_at)
    .bind(r.ended_at)
    .bind(&r.result)
    .bind(&r.error)
    .execute(db)
    .await;
    for rec in r.records.iter().take(4) {
        let _ = sqlx::query(
            "INSERT INTO records (run_id, idx, node_id, node_type, start_ms, end_ms, input, \
             output, error, parent) VALUES (?, ?, ?, 'mcp', ?, ?, ?, ?, ?, ?)",
        )
        .bind(&r.run_id)
        .bind(rec.idx)
        .bind(&rec.node_id)
        .bind(rec.start_ms)
        .bind(rec.end_ms)
        .bind(&rec.input)
        .bind(&rec.output)
        .bind(&rec.error)
        .bind(rec.parent)
        .execute(db)
        .await;
    }
    let _ = sqlx::query(
        "INSERT INTO sessions (id, run_id, node_id, status, version, state, input_schema, \
         created_at, updated_at, expires_at, claimed_by) VALUES (?, ?, 'ask', ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&r.session_id)
    .bind(&r.run_id)
    .bind(pick(&SESSION_STATUSES, r.session_status % 7))
    .bind(r.version)
    .bind(&r.state)
    .bind(&r.input_schema)
    .bind(r.times.0)
    .bind(r.times.1)
    .bind(r.times.2)
    .bind(&r.claimed_by)
    .execute(db)
    .await;
}

/// `scheme://user:PASSWORD@host…`: the redacted URL never shows the password (one of letters
/// and digits, so that it cannot be mistaken for what redaction writes).
fn check_redaction(url: &str) {
    let redacted = mcpflow_store::redact_url(url);
    let Some((_, rest)) = url.split_once("://") else {
        return;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if let Some((userinfo, _)) = authority.rsplit_once('@')
        && let Some((_, password)) = userinfo.split_once(':')
        && password.len() >= 4
        && password.bytes().all(|b| b.is_ascii_alphanumeric())
        // The user name, host or path may hold the same text by chance.
        && url.matches(password).count() == 1
    {
        assert!(
            !redacted.contains(password),
            "{url:?} redacted to {redacted:?}"
        );
    }
}
