//! Group commit (`sql/group.rs`): the hot path's writes share transactions, and each still
//! behaves as its own. Each scenario runs on a SQLite file and on a fresh PostgreSQL schema.
//!
//! To put writes in one batch for certain, a test holds the database's write lock from a
//! connection of its own (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: the tables locked against
//! writes), sends [`PLUGS`] writes one by one (each writer takes one and waits on the lock),
//! then the writes under test, which queue behind them; releasing the lock lets one writer
//! take them all at once.

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{T0, TestDb, lease, new_run, new_session, pg_base_url, waiting_run};
use mcpflow_store::{RecordRow, RunStatus, SessionStatus, Store, StoreError};
use serde_json::json;
use sqlx::{AnyConnection, Connection};
use tokio::task::JoinHandle;

on_both_backends!(
    a_failed_write_leaves_the_rest_of_its_batch,
    claims_in_one_batch_have_one_winner,
    callers_are_answered_after_the_commit,
    a_write_whose_caller_left_before_its_batch_is_not_applied,
);

/// As many writes as PostgreSQL has writers (SQLite's one writer takes the first alone).
const PLUGS: usize = 4;

fn record(index: i64, node: &str) -> RecordRow {
    RecordRow {
        index,
        node_id: node.to_owned(),
        node_type: "mcp".to_owned(),
        start_ms: 0.0,
        end_ms: 1.0,
        input: None,
        output: Some(json!({"i": index})),
        error: None,
        parent: None,
    }
}

/// The database's write lock, held from a connection outside the store.
struct WriteLock {
    conn: AnyConnection,
}

impl WriteLock {
    async fn take(db: &TestDb) -> WriteLock {
        sqlx::any::install_default_drivers();
        let (url, sql) = match db.schema() {
            None => (db.url.clone(), "BEGIN IMMEDIATE".to_owned()),
            Some(schema) => (
                pg_base_url(),
                format!(
                    "BEGIN; LOCK TABLE {schema}.runs, {schema}.sessions, {schema}.records \
                     IN EXCLUSIVE MODE"
                ),
            ),
        };
        let mut conn = AnyConnection::connect(&url).await.expect("connect");
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut conn)
            .await
            .expect("take the write lock");
        WriteLock { conn }
    }

    async fn release(mut self) {
        sqlx::raw_sql("COMMIT")
            .execute(&mut self.conn)
            .await
            .expect("release the write lock");
        let _ = self.conn.close().await;
    }
}

/// Takes the write lock and occupies every writer with a write of its own (runs `plug-N`),
/// so that what is sent next queues up as one batch.
async fn plug_writers(db: &TestDb, store: &Arc<dyn Store>) -> (WriteLock, Vec<JoinHandle<()>>) {
    let lock = WriteLock::take(db).await;
    let mut plugs = Vec::new();
    for i in 0..PLUGS {
        let store = store.clone();
        plugs.push(tokio::spawn(async move {
            store
                .create_run(
                    &new_run(&format!("plug-{i}"), "plug", T0),
                    &lease("a", T0 + 30_000),
                )
                .await
                .expect("plug write");
        }));
        // Let a writer take this one alone before the next is sent.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (lock, plugs)
}

/// Lets the queued writes go once they are all sent (given time to reach the queue).
async fn unplug(lock: WriteLock, plugs: Vec<JoinHandle<()>>) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    lock.release().await;
    for p in plugs {
        p.await.expect("plug task");
    }
}

pub(crate) mod scenario {
    use super::*;

    /// A duplicate run, a lost lease and a session over the limit fail alone (the last one
    /// after its run was already marked waiting in the batch's transaction: that must be
    /// rolled back with it); the other writes of their batch land.
    pub async fn a_failed_write_leaves_the_rest_of_its_batch(db: &TestDb) {
        let store = db.open().await;
        for i in 0..10 {
            store
                .create_run(
                    &new_run(&format!("r{i}"), "order", T0),
                    &lease("a", T0 + 30_000),
                )
                .await
                .unwrap();
        }
        let (lock, plugs) = plug_writers(db, &store).await;
        let mut appends = Vec::new();
        for i in 1..9 {
            let store = store.clone();
            appends.push(tokio::spawn(async move {
                store
                    .append_records(
                        &format!("r{i}"),
                        &lease("a", T0 + 60_000),
                        &[record(0, "price"), record(1, "pay")],
                    )
                    .await
            }));
        }
        let duplicate = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .create_run(&new_run("r0", "order", T0), &lease("a", T0 + 30_000))
                    .await
            })
        };
        let not_owner = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .append_records("r0", &lease("b", T0 + 60_000), &[record(0, "x")])
                    .await
            })
        };
        let over_limit = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .create_session(&new_session("r9", T0 + 10, T0 + 3_600_000), "a", Some(0))
                    .await
            })
        };
        unplug(lock, plugs).await;

        for (i, a) in appends.into_iter().enumerate() {
            assert_eq!(a.await.unwrap().unwrap(), 2, "append to r{}", i + 1);
        }
        let e = duplicate.await.unwrap().unwrap_err();
        assert!(matches!(e, StoreError::Conflict { .. }), "{e:?}");
        let e = not_owner.await.unwrap().unwrap_err();
        assert!(matches!(e, StoreError::Conflict { .. }), "{e:?}");
        assert!(e.to_string().contains("\"a\""), "names the owner: {e}");
        let e = over_limit.await.unwrap().unwrap_err();
        assert!(matches!(e, StoreError::LimitReached { limit: 0 }), "{e:?}");

        for i in 1..9 {
            let records = store.get_records(&format!("r{i}")).await.unwrap();
            assert_eq!(records.len(), 2, "r{i}");
        }
        assert!(store.get_records("r0").await.unwrap().is_empty());
        let r9 = store.get_run("r9").await.unwrap();
        assert_eq!(r9.summary.status, RunStatus::Running, "rolled back: {r9:?}");
        assert_eq!(r9.summary.owner.as_deref(), Some("a"));
        assert_eq!(store.count_sessions().await.unwrap().live(), 0);
    }

    /// Claims of one session that share a batch: the first wins, the others see its claim.
    pub async fn claims_in_one_batch_have_one_winner(db: &TestDb) {
        let store = db.open().await;
        let session = waiting_run(&*store, "r1", "a", T0 + 3_600_000).await;
        let (lock, plugs) = plug_writers(db, &store).await;
        let mut claims = Vec::new();
        for i in 0..16 {
            let store = store.clone();
            let id = session.id.clone();
            claims.push(tokio::spawn(async move {
                let owner = format!("replica-{i}");
                store
                    .claim_session_with_records(
                        &id,
                        1,
                        &lease(&owner, T0 + 60_000),
                        T0 + 100,
                        &[record(0, "ask")],
                    )
                    .await
                    .map(|s| (owner, s))
            }));
        }
        unplug(lock, plugs).await;
        let mut winners = Vec::new();
        for c in claims {
            match c.await.unwrap() {
                Ok(won) => winners.push(won),
                Err(StoreError::Conflict { .. }) => {}
                Err(other) => panic!("a losing claim fails as a conflict, not {other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "exactly one claim wins");
        let (owner, claimed) = winners.pop().unwrap();
        assert_eq!(claimed.status, SessionStatus::Claimed);
        assert_eq!(claimed.version, 2);
        assert_eq!(claimed.claimed_by.as_deref(), Some(owner.as_str()));
        let run = store.get_run("r1").await.unwrap();
        assert_eq!(run.summary.status, RunStatus::Running);
        assert_eq!(run.summary.owner.as_deref(), Some(owner.as_str()));
        // The input went in once, with the winning claim.
        let records = store.get_records("r1").await.unwrap();
        assert_eq!(records.len(), 1, "{records:?}");
    }

    /// A caller that stops waiting (its future dropped: a cancelled request) before its write
    /// reached a writer leaves nothing behind, as a dropped transaction did.
    pub async fn a_write_whose_caller_left_before_its_batch_is_not_applied(db: &TestDb) {
        let store = db.open().await;
        let (lock, plugs) = plug_writers(db, &store).await;
        let left = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .create_run(&new_run("left", "order", T0), &lease("a", T0 + 30_000))
                    .await
            })
        };
        let stayed = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .create_run(&new_run("stayed", "order", T0), &lease("a", T0 + 30_000))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        left.abort();
        unplug(lock, plugs).await;
        stayed.await.unwrap().unwrap();
        let e = store.get_run("left").await.unwrap_err();
        assert!(matches!(e, StoreError::NotFound { .. }), "{e:?}");
    }

    /// Whoever is told a write succeeded finds it durable: another store (its own pool and
    /// connections) reads it at once.
    pub async fn callers_are_answered_after_the_commit(db: &TestDb) {
        let store = db.open().await;
        let other = db.open().await;
        let mut tasks = Vec::new();
        for i in 0..64 {
            let store = store.clone();
            let other = other.clone();
            tasks.push(tokio::spawn(async move {
                let id = format!("r{i}");
                store
                    .create_run(&new_run(&id, "order", T0), &lease("a", T0 + 30_000))
                    .await
                    .unwrap();
                let seen = other.get_run(&id).await;
                assert!(
                    seen.is_ok(),
                    "{id} answered before it was committed: {seen:?}"
                );
                store
                    .append_records(&id, &lease("a", T0 + 30_000), &[record(0, "n")])
                    .await
                    .unwrap();
                assert_eq!(other.get_records(&id).await.unwrap().len(), 1, "{id}");
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    }
}

/// A COMMIT that fails (here a deferred constraint trigger that refuses a run named
/// `poison` when the transaction commits) fails every write of its batch with its error,
/// and none of them is applied; the writers go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_failed_commit_fails_every_write_of_its_batch() {
    let db = TestDb::postgres().await;
    let store = db.open().await;
    let schema = db.schema().expect("a PostgreSQL schema").to_owned();
    let mut conn = AnyConnection::connect(&pg_base_url()).await.unwrap();
    let sql = format!(
        "CREATE FUNCTION {schema}.refuse_poison() RETURNS trigger AS $$ BEGIN \
         IF NEW.tool = 'poison' THEN RAISE EXCEPTION 'poisoned at commit'; END IF; \
         RETURN NEW; END $$ LANGUAGE plpgsql; \
         CREATE CONSTRAINT TRIGGER refuse_poison AFTER INSERT ON {schema}.runs \
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {schema}.refuse_poison()"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut conn)
        .await
        .unwrap();
    let _ = conn.close().await;

    let (lock, plugs) = plug_writers(&db, &store).await;
    let mut writes = Vec::new();
    for i in 0..10 {
        let store = store.clone();
        let tool = if i == 5 { "poison" } else { "order" };
        writes.push(tokio::spawn(async move {
            store
                .create_run(
                    &new_run(&format!("r{i}"), tool, T0),
                    &lease("a", T0 + 30_000),
                )
                .await
        }));
    }
    unplug(lock, plugs).await;
    for (i, w) in writes.into_iter().enumerate() {
        let e = w.await.unwrap().unwrap_err();
        assert!(e.to_string().contains("poisoned at commit"), "r{i}: {e}");
        let missing = store.get_run(&format!("r{i}")).await.unwrap_err();
        assert!(
            matches!(missing, StoreError::NotFound { .. }),
            "r{i}: {missing:?}"
        );
    }
    // The writers survived the failed batch.
    store
        .create_run(&new_run("after", "order", T0), &lease("a", T0 + 30_000))
        .await
        .unwrap();
}
