//! A database that is down, goes away, or is not a database: clear errors, nothing
//! half-written.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{T0, TestDb, lease, new_run, pg_base_url, waiting_run};
use mcpflow_store::{RecordRow, RunStatus, SessionStatus, StoreError, open};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

fn record(index: i64) -> RecordRow {
    RecordRow {
        index,
        node_id: format!("n{index}"),
        node_type: "mcp".into(),
        start_ms: 0.0,
        end_ms: 1.0,
        input: None,
        output: Some(json!(index)),
        error: None,
        parent: None,
    }
}

#[tokio::test]
async fn postgres_down_at_open_is_unavailable_without_the_password() {
    // A port that was free a moment ago: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("postgres://mcpflow:s3cret-pw@127.0.0.1:{port}/flows?schema=x");
    let e = open(&url).await.unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, StoreError::Unavailable { .. }), "{e:?}");
    assert!(msg.contains(&format!("127.0.0.1:{port}")), "{msg}");
    assert!(msg.contains("mcpflow:***@"), "{msg}");
    assert!(!msg.contains("s3cret"), "{msg}");
    assert!(!format!("{e:?}").contains("s3cret"));
    assert!(msg.contains("check that the database is running"), "{msg}");
}

#[tokio::test]
async fn bad_urls_say_what_is_accepted() {
    for url in [
        "mysql://h/db",
        "sqlite://",
        "sqlite://x.db?mode=ro",
        "postgres://h/db?schema=a-b",
    ] {
        let e = open(url).await.unwrap_err();
        assert!(matches!(e, StoreError::InvalidUrl { .. }), "{url}: {e:?}");
    }
    let e = open("redis://u:pw@h").await.unwrap_err();
    assert!(e.to_string().contains("sqlite://PATH"), "{e}");
    assert!(!e.to_string().contains("pw@"), "{e}");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(
        &file,
        "this is not a database, just some text that is long enough ".repeat(100),
    )
    .unwrap();
    let e = open(&format!("sqlite://{}", file.display()))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Corrupt(_)), "{e:?}");
    assert!(e.to_string().contains("not a database"), "{e}");
}

#[tokio::test]
async fn sqlite_runs_in_wal_mode_and_creates_its_directory() {
    let db = TestDb::sqlite();
    let store = db.open().await;
    store
        .create_run(&new_run("r1", "t", T0), &lease("a", T0 + 1))
        .await
        .unwrap();
    let path = db.url.trim_start_matches("sqlite://").to_owned();
    assert!(std::path::Path::new(&path).is_file());
    use sqlx::Connection;
    let mut conn = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    let mode: (String,) = sqlx::query_as("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(mode.0, "wal");
    assert!(std::path::Path::new(&format!("{path}-wal")).exists());
}

#[tokio::test]
async fn sqlite_in_memory_works_for_one_process() {
    let store = open("sqlite::memory:").await.unwrap();
    let s = waiting_run(&*store, "r1", "a", T0 + 10).await;
    assert_eq!(
        store.get_session(&s.id).await.unwrap().status,
        SessionStatus::Waiting
    );
    assert_eq!(store.backend(), "sqlite");
}

/// Forwards loopback connections to the PostgreSQL server until told to stop, then drops them
/// all and stops listening: the database "goes away".
async fn proxy(target: String) -> (u16, watch::Sender<bool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = watch::channel(false);
    let mut accept_stop = stopped.clone();
    tokio::spawn(async move {
        loop {
            let (mut client, _) = tokio::select! {
                conn = listener.accept() => match conn { Ok(c) => c, Err(_) => return },
                _ = accept_stop.changed() => return,
            };
            let target = target.clone();
            let mut conn_stop = stopped.clone();
            tokio::spawn(async move {
                let Ok(mut server) = TcpStream::connect(&target).await else {
                    return;
                };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                    _ = conn_stop.changed() => {}
                }
            });
        }
    });
    (port, stop)
}

/// The `host[:port]` of a `postgres://[user[:pw]@]host[:port]/db` URL, as written.
fn authority_host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    authority.rsplit_once('@').map_or(authority, |(_, h)| h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_going_away_mid_run_fails_calls_and_writes_nothing_partial() {
    let db = TestDb::postgres().await;
    let direct = db.open().await;
    let base = pg_base_url();
    let host = authority_host(&base);
    let target = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:5432")
    };
    let (port, stop) = proxy(target).await;
    let through = db.url.replacen(host, &format!("127.0.0.1:{port}"), 1);
    let store = open(&through).await.unwrap();

    let l = lease("a", T0 + 60_000);
    store.create_run(&new_run("r1", "t", T0), &l).await.unwrap();
    store
        .append_records("r1", &l, &[record(0), record(1)])
        .await
        .unwrap();
    let s = waiting_run(&*direct, "r2", "b", T0 + 3_600_000).await;

    stop.send(true).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;

    let batch: Vec<_> = (2..300).map(record).collect();
    let e = store.append_records("r1", &l, &batch).await.unwrap_err();
    assert!(matches!(e, StoreError::Unavailable { .. }), "{e:?}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    let e = store
        .claim_session(&s.id, 1, &lease("a", T0 + 60_000), T0 + 1)
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Unavailable { .. }), "{e:?}");

    // Seen from a process that still reaches the database: the step is absent, not partial,
    // and the session is still there to be continued.
    assert_eq!(direct.get_records("r1").await.unwrap().len(), 2);
    assert_eq!(
        direct.get_run("r1").await.unwrap().summary.status,
        RunStatus::Running
    );
    let s = direct.get_session(&s.id).await.unwrap();
    assert_eq!((s.status, s.version), (SessionStatus::Waiting, 1));
    let _keep: Arc<_> = direct;
}

#[tokio::test]
async fn a_missing_postgres_database_is_unavailable_and_named() {
    let _db = TestDb::postgres().await; // fails clearly when the server is down
    let base = pg_base_url();
    let after = base.find("://").map_or(0, |i| i + 3);
    let path_at = base[after..].find('/').map_or(base.len(), |i| after + i);
    let url = format!("{}/no_such_db_mcpflow", &base[..path_at]);
    let e = open(&url).await.unwrap_err();
    assert!(matches!(e, StoreError::Unavailable { .. }), "{e:?}");
    assert!(e.to_string().contains("no_such_db_mcpflow"), "{e}");
    assert!(e.to_string().contains("does not exist"), "{e}");
}
