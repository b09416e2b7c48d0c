//! What the engine does with its store over time: finished runs recorded even when the store
//! was unavailable for a while (a full disk), and finished runs deleted by the upkeep beyond
//! the configured retention, never one that is still needed.
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::load_str;
use mcpflow_engine::{Durability, Engine, RunRequest, RunStatus};
use mcpflow_model::{Retention, SessionsConfig};
use mcpflow_store::{RunFilter, RunStatus as Stored, SessionStatus, Store};
use serde_json::json;

const CONFIG: &str = r#"
version: "1.0"
server: { name: "upkeep", version: "1.0.0" }
tools:
  - name: big
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: pad }
      - { id: pad, type: transform, transform: { expr: "$pad($string($.start.i), 65536, 'y')" }, next: end }
      - { id: end, type: exit }
  - name: small
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: end }
      - { id: end, type: exit }
  - name: ask
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: wait }
      - { id: wait, type: await, message: "go on?", next: end }
      - { id: end, type: exit }
"#;

fn engine(store: &Arc<dyn Store>, retention: Retention) -> Engine {
    let (_, engine) = load_str(CONFIG);
    let d = Durability::new(
        store.clone(),
        "a".into(),
        "v1".into(),
        SessionsConfig::default(),
    )
    .with_retention(retention);
    assert!(engine.attach_durability(d).is_ok());
    engine
}

async fn finished(store: &dyn Store) -> Vec<String> {
    store
        .list_runs(&RunFilter {
            limit: 1000,
            ..RunFilter::default()
        })
        .await
        .expect("list runs")
        .into_iter()
        .filter(|r| r.status == Stored::Succeeded)
        .map(|r| r.id)
        .collect()
}

/// Polls `done` every 50 ms for up to `limit`.
async fn eventually<F: AsyncFnMut() -> bool>(limit: Duration, mut done: F) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if done().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A tmpfs mounted on a temporary directory for the test, unmounted on drop (also on panic).
/// Mounting needs root (CI and the development containers have it); without, the test says so
/// and does nothing.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("SKIPPED: cannot mount a tmpfs here (needs root)");
            return None;
        }
        Some(Tmpfs(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).expect("filler file");
    let chunk = vec![0u8; 16 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
    path
}

/// Issue #21: with the disk full, 7 of 8 finished runs were lost with only a warning. Now each
/// is kept for another try and written once space returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_runs_are_recorded_once_a_full_disk_has_room_again() {
    let Some(fs) = Tmpfs::mount("3M") else { return };
    let url = format!("sqlite://{}/state.db", fs.path().display());
    let store = mcpflow_store::open(&url).await.expect("store opens");
    let engine = engine(&store, Retention::default());
    let filler = fill(fs.path());

    let mut ids = Vec::new();
    for i in 0..8 {
        let run = engine.run(RunRequest::new("big", json!({"i": i}))).await;
        assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
        ids.push(run.id.to_string());
    }
    // The records are waiting for room, not written and not dropped.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(finished(&*store).await.len() < 8, "the disk was not full");
    std::fs::remove_file(filler).expect("remove the filler");

    let all_there = eventually(Duration::from_secs(30), async || {
        finished(&*store).await.len() == 8
    })
    .await;
    let stored = finished(&*store).await;
    assert!(
        all_there,
        "recorded after space returned: {stored:?} of {ids:?}"
    );
    let d = engine.durability().expect("attached");
    assert_eq!(d.unrecorded_runs(), 0);
}

/// `clients` tasks running `small` `each` times, all at once.
async fn run_small(engine: &Engine, clients: usize, each: usize) {
    let clients: Vec<_> = (0..clients)
        .map(|_| {
            let engine = engine.clone();
            tokio::spawn(async move {
                for _ in 0..each {
                    let run = engine.run(RunRequest::new("small", json!({}))).await;
                    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
                }
            })
        })
        .collect();
    for client in clients {
        client.await.expect("client");
    }
}

/// Every one of `runs` finished runs is in `store`, none given up.
async fn all_recorded(engine: &Engine, store: &dyn Store, runs: usize) {
    let d = engine.durability().expect("attached");
    assert!(
        d.settle_records(Duration::from_secs(60)).await,
        "every record reached the store"
    );
    assert_eq!(d.unrecorded_runs(), 0);
    let stats = store.run_stats().await.expect("stats");
    assert_eq!(stats.count(Stored::Succeeded), runs as u64);
}

/// Thousands of runs finishing at once, as a busy replica finishes them: each was a task of
/// its own waiting on the store's few connections, past their acquire timeout, and tens of
/// thousands of records were given up at ~4,600 calls/s (bench/README.md, fleet). Now they
/// queue for one writer that commits many at a time, and every one is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_runs_finishing_together_are_all_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/state.db", dir.path().display());
    let store = mcpflow_store::open(&url).await.expect("store opens");
    let engine = engine(&store, Retention::default());
    const CLIENTS: usize = 64;
    const RUNS_EACH: usize = 60;
    run_small(&engine, CLIENTS, RUNS_EACH).await;
    all_recorded(&engine, &*store, CLIENTS * RUNS_EACH).await;
}

/// `psql` on the test server (CI's PostgreSQL; `MCPFLOW_TEST_PG` names another).
fn psql(sql: &str) -> Command {
    let base = std::env::var("MCPFLOW_TEST_PG")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let mut psql = Command::new("psql");
    psql.args([
        &base,
        "-X",
        "-q",
        "-t",
        "-A",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        sql,
    ]);
    psql
}

/// A schema of its own on the test server, dropped at the end (also on panic).
struct PgSchema(String);

impl Drop for PgSchema {
    fn drop(&mut self) {
        let _ = psql(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.0)).output();
    }
}

/// PostgreSQL stalls on the runs table for longer than the pool's 5 s acquire timeout (a
/// migration's lock, a stalled disk) while a replica keeps finishing runs. With a task per
/// run, every task past the pool's eight connections timed out into "store unavailable" and
/// all but 256 of them were given up; now they wait in the queue (up to 4,096) for the writer,
/// which goes on once the table is free, and none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_stalls_for_seconds_loses_no_record() {
    let probe = psql("SELECT 1").output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "PostgreSQL (psql) is needed in CI: {probe:?}"
        );
        eprintln!("SKIPPED: no PostgreSQL reachable with psql: {probe:?}");
        return;
    }
    let schema = PgSchema(format!(
        "t_{}",
        &mcpflow_store::new_session_id().expect("an id")[..16]
    ));
    let base = std::env::var("MCPFLOW_TEST_PG")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let url = format!("{base}?schema={}", schema.0);
    let store = mcpflow_store::open(&url).await.expect("store opens");
    let engine = engine(&store, Retention::default());

    let mut stall = psql(&format!(
        "BEGIN; LOCK TABLE {}.runs IN EXCLUSIVE MODE; SELECT pg_sleep(7); COMMIT;",
        schema.0
    ))
    .spawn()
    .expect("psql starts");
    let held = format!(
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = '{}' AND c.relname = 'runs' AND l.mode = 'ExclusiveLock' AND l.granted",
        schema.0
    );
    let locked = eventually(Duration::from_secs(10), async || {
        psql(&held)
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "1")
    })
    .await;
    assert!(locked, "the stall holds its lock");

    const CLIENTS: usize = 32;
    const RUNS_EACH: usize = 50;
    run_small(&engine, CLIENTS, RUNS_EACH).await;
    let status = tokio::task::spawn_blocking(move || stall.wait())
        .await
        .expect("join")
        .expect("psql ends");
    assert!(status.success(), "the stall ran: {status:?}");
    all_recorded(&engine, &*store, CLIENTS * RUNS_EACH).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upkeep_deletes_finished_runs_beyond_the_retention_and_keeps_waiting_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/state.db", dir.path().display());
    let store = mcpflow_store::open(&url).await.expect("store opens");
    let retention = Retention {
        max_age_seconds: None,
        max_runs: Some(3),
    };
    let engine = engine(&store, retention);

    // A waiting run first: the oldest, yet never deleted while its session waits.
    let waiting = engine.run(RunRequest::new("ask", json!({}))).await;
    let session = match &waiting.end {
        mcpflow_engine::RunEnd::Waiting(w) => w.session_id.clone(),
        other => panic!("expected a wait, got {other:?}"),
    };
    let mut ids = Vec::new();
    for i in 0..6 {
        let run = engine.run(RunRequest::new("big", json!({"i": i}))).await;
        assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
        ids.push(run.id.to_string());
        // Distinct end times, so "the newest three" is well defined.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        eventually(Duration::from_secs(10), async || finished(&*store)
            .await
            .len()
            == 6)
        .await,
        "the six runs were recorded"
    );

    let upkeep = engine.spawn_upkeep().expect("a store is attached");
    let trimmed = eventually(Duration::from_secs(10), async || {
        finished(&*store).await.len() == 3
    })
    .await;
    upkeep.abort();
    let mut left = finished(&*store).await;
    left.sort();
    let mut newest = ids[3..].to_vec();
    newest.sort();
    assert!(trimmed, "left after the upkeep: {left:?}");
    assert_eq!(left, newest);
    let s = store
        .get_session(&session)
        .await
        .expect("the session is kept");
    assert_eq!(s.status, SessionStatus::Waiting);
    assert_eq!(
        store
            .get_run(&waiting.id)
            .await
            .expect("kept")
            .summary
            .status,
        Stored::Waiting
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upkeep_deletes_audit_rows_older_than_the_retention() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/state.db", dir.path().display());
    let store = mcpflow_store::open(&url).await.expect("store opens");
    let retention = Retention {
        max_age_seconds: Some(3600),
        max_runs: Some(1),
    };
    let engine = engine(&store, retention);
    let now = mcpflow_store::now_ms();
    let row = |at: i64, tool: &str| mcpflow_store::AuditRow {
        at,
        subject: Some("ci".into()),
        via: Some("apiKey".into()),
        key: Some("ci".into()),
        tool: tool.into(),
        outcome: "ok".into(),
        duration_ms: 1,
        run_id: None,
    };
    // Two days old, then three recent ones: more than `maxRuns`, which counts runs only.
    let rows = [
        row(now - 2 * 86_400_000, "old"),
        row(now - 60_000, "a"),
        row(now - 30_000, "b"),
        row(now, "c"),
    ];
    store.append_audit(&rows).await.expect("audit rows written");
    let upkeep = engine.spawn_upkeep().expect("a store is attached");
    let listed = async || {
        store
            .list_audit(&mcpflow_store::AuditFilter::default())
            .await
            .expect("audit rows listed")
            .into_iter()
            .map(|r| r.tool)
            .collect::<Vec<_>>()
    };
    let purged = eventually(Duration::from_secs(10), async || listed().await.len() == 3).await;
    upkeep.abort();
    assert!(purged, "left after the upkeep: {:?}", listed().await);
    assert_eq!(listed().await, ["c", "b", "a"]);
}
