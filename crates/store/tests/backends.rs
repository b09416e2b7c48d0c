//! Every store operation, on both backends: each scenario below runs once against a SQLite
//! file and once against a fresh PostgreSQL schema.

#[macro_use]
mod common;

use std::collections::HashSet;
use std::sync::Arc;

use common::{T0, TestDb, lease, new_run, new_session, waiting_run};
use mcpflow_store::{
    AuditFilter, AuditRow, Purge, RecordRow, RunEnd, RunFilter, RunStatus, SessionFilter,
    SessionStatus, SessionUpdate, StoreError,
};
use serde_json::json;

on_both_backends!(
    migrations_are_idempotent,
    run_lifecycle,
    duplicate_run_id_conflicts,
    records_append_is_idempotent_and_atomic,
    runs_are_listed_filtered_and_counted,
    finished_run_is_saved_at_once,
    session_lifecycle,
    concurrent_claims_have_one_winner,
    two_processes_share_sessions,
    sessions_expire,
    cancel_session_ends_its_run,
    released_claim_can_be_claimed_again,
    session_limit_is_enforced,
    interrupted_runs_respect_leases,
    data_survives_reopening,
    unknown_ids_are_not_found,
    ended_runs_are_purged,
    retention_keeps_the_newest_and_what_is_still_needed,
    config_sources_are_kept,
    versions_no_run_references_are_dropped,
    fleet_messages_reach_every_process,
    footprint_grows_with_data,
    who_started_a_run_is_kept,
    audit_rows_are_listed_by_time_and_purged,
);

fn record(index: i64, node: &str) -> RecordRow {
    RecordRow {
        index,
        node_id: node.to_owned(),
        node_type: "mcp".to_owned(),
        start_ms: 10.25 * index as f64,
        end_ms: 10.25 * index as f64 + 3.5,
        input: Some(json!({"i": index})),
        output: Some(json!({"out": index, "z": null, "a": [1, 2]})),
        error: None,
        parent: None,
    }
}

/// Deletes what ended before `before`, whatever the count.
fn by_age(before: i64) -> Purge {
    Purge {
        ended_before_ms: before,
        keep_latest: u64::MAX,
        restartable_since_ms: i64::MAX,
        batch: 1000,
    }
}

fn conflict_reason(e: StoreError) -> String {
    match e {
        StoreError::Conflict { reason, .. } => reason,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

mod scenario {
    use super::*;

    pub async fn migrations_are_idempotent(db: &TestDb) {
        let a = db.open().await;
        a.create_run(&new_run("r1", "t", T0), &lease("a", T0 + 1))
            .await
            .unwrap();
        // Opening again runs the migrator again: nothing to apply, nothing lost.
        let b = db.open().await;
        let c = db.open().await;
        assert_eq!(b.get_run("r1").await.unwrap().summary.tool, "t");
        assert_eq!(c.list_runs(&RunFilter::default()).await.unwrap().len(), 1);
    }

    pub async fn run_lifecycle(db: &TestDb) {
        let store = db.open().await;
        let l = lease("a", T0 + 30_000);
        store
            .create_run(&new_run("r1", "order", T0), &l)
            .await
            .unwrap();
        let run = store.get_run("r1").await.unwrap();
        assert_eq!(run.summary.status, RunStatus::Running);
        assert_eq!(run.summary.owner.as_deref(), Some("a"));
        assert_eq!(run.lease_until, Some(T0 + 30_000));
        assert!(run.resumable);
        // Key order survives the round trip.
        assert_eq!(run.args.to_string(), r#"{"n":3,"b":{"z":1,"a":2}}"#);

        let renewed = lease("a", T0 + 60_000);
        let n = store
            .append_records("r1", &renewed, &[record(0, "entry"), record(1, "price")])
            .await
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            store.get_run("r1").await.unwrap().lease_until,
            Some(T0 + 60_000)
        );
        let mut failed = record(2, "ship");
        failed.output = None;
        failed.input = None;
        failed.error = Some("upstream died".into());
        failed.parent = Some(1);
        store
            .append_records("r1", &renewed, &[failed.clone()])
            .await
            .unwrap();
        let records = store.get_records("r1").await.unwrap();
        assert_eq!(
            records,
            vec![record(0, "entry"), record(1, "price"), failed]
        );

        store
            .finish_run(
                "r1",
                "a",
                &RunEnd::Succeeded(json!({"total": 36})),
                T0 + 500,
            )
            .await
            .unwrap();
        let run = store.get_run("r1").await.unwrap();
        assert_eq!(run.summary.status, RunStatus::Succeeded);
        assert_eq!(run.summary.ended_at, Some(T0 + 500));
        assert_eq!(run.summary.owner, None);
        assert_eq!(run.result, Some(json!({"total": 36})));

        let again = store
            .finish_run("r1", "a", &RunEnd::Failed(json!("late")), T0 + 600)
            .await
            .unwrap_err();
        assert!(conflict_reason(again).contains("already ended as succeeded"));
        let late = store
            .append_records("r1", &renewed, &[record(3, "x")])
            .await
            .unwrap_err();
        assert!(conflict_reason(late).contains("cannot write"));
        assert_eq!(store.get_records("r1").await.unwrap().len(), 3);
    }

    pub async fn duplicate_run_id_conflicts(db: &TestDb) {
        let store = db.open().await;
        let l = lease("a", T0 + 1);
        store.create_run(&new_run("r1", "t", T0), &l).await.unwrap();
        let e = store
            .create_run(&new_run("r1", "t", T0), &l)
            .await
            .unwrap_err();
        assert!(conflict_reason(e).contains("already exists"));
    }

    pub async fn records_append_is_idempotent_and_atomic(db: &TestDb) {
        let store = db.open().await;
        let l = lease("a", T0 + 30_000);
        store.create_run(&new_run("r1", "t", T0), &l).await.unwrap();
        let batch: Vec<_> = (0..450)
            .map(|i| record(i, &format!("n{}", i % 7)))
            .collect();
        assert_eq!(store.append_records("r1", &l, &batch).await.unwrap(), 450);
        // A retried step (its commit outcome unknown) is harmless.
        assert_eq!(store.append_records("r1", &l, &batch).await.unwrap(), 0);
        assert_eq!(
            store.append_records("r1", &l, &batch[440..]).await.unwrap(),
            0
        );
        // A batch that contradicts a stored record is refused whole: index 450 is not kept.
        let bad = vec![record(450, "new"), record(3, "not-n3")];
        let e = store.append_records("r1", &l, &bad).await.unwrap_err();
        assert!(conflict_reason(e).contains("record 3 is already stored"));
        let stored = store.get_records("r1").await.unwrap();
        assert_eq!(stored.len(), 450);
        assert_eq!(stored, batch);
        // Another owner cannot write at all.
        let e = store
            .append_records("r1", &lease("b", T0 + 30_000), &[record(451, "x")])
            .await
            .unwrap_err();
        assert!(conflict_reason(e).contains("executed by \"a\""));
    }

    pub async fn runs_are_listed_filtered_and_counted(db: &TestDb) {
        let store = db.open().await;
        let l = lease("a", T0 + 100_000);
        for (i, tool) in ["alpha", "beta", "alpha", "alpha", "beta"]
            .iter()
            .enumerate()
        {
            let id = format!("r{i}");
            store
                .create_run(&new_run(&id, tool, T0 + i as i64 * 10), &l)
                .await
                .unwrap();
        }
        store
            .finish_run("r0", "a", &RunEnd::Succeeded(json!(1)), T0 + 100)
            .await
            .unwrap();
        store
            .finish_run(
                "r2",
                "a",
                &RunEnd::Failed(json!({"message": "x"})),
                T0 + 20 + 300,
            )
            .await
            .unwrap();
        store
            .finish_run("r3", "a", &RunEnd::Succeeded(json!(2)), T0 + 30 + 50)
            .await
            .unwrap();

        let all = store.list_runs(&RunFilter::default()).await.unwrap();
        let ids: Vec<_> = all.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["r4", "r3", "r2", "r1", "r0"]);
        let alpha_ok = store
            .list_runs(&RunFilter {
                status: Some(RunStatus::Succeeded),
                tool: Some("alpha".into()),
                ..RunFilter::default()
            })
            .await
            .unwrap();
        let ids: Vec<_> = alpha_ok.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["r3", "r0"]);
        let page = store
            .list_runs(&RunFilter {
                limit: 2,
                offset: 1,
                ..RunFilter::default()
            })
            .await
            .unwrap();
        let ids: Vec<_> = page.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["r3", "r2"]);

        let stats = store.run_stats().await.unwrap();
        assert_eq!(stats.total(), 5);
        assert_eq!(stats.count(RunStatus::Running), 2);
        assert_eq!(stats.count(RunStatus::Succeeded), 2);
        let ok = stats
            .rows
            .iter()
            .find(|r| r.tool == "alpha" && r.status == RunStatus::Succeeded)
            .unwrap();
        assert_eq!(
            (ok.count, ok.ended, ok.total_ms, ok.max_ms),
            (2, 2, 150, 100)
        );
        assert_eq!(ok.mean_ms(), Some(75.0));
        let running = stats
            .rows
            .iter()
            .find(|r| r.tool == "beta" && r.status == RunStatus::Running)
            .unwrap();
        assert_eq!(
            (running.count, running.ended, running.mean_ms()),
            (2, 0, None)
        );
    }

    pub async fn finished_run_is_saved_at_once(db: &TestDb) {
        let store = db.open().await;
        let records: Vec<_> = (0..5).map(|i| record(i, "n")).collect();
        store
            .save_finished_run(
                &new_run("r1", "t", T0),
                &records,
                &RunEnd::Failed(json!({"node": "n"})),
                T0 + 9,
            )
            .await
            .unwrap();
        let run = store.get_run("r1").await.unwrap();
        assert_eq!(run.summary.status, RunStatus::Failed);
        assert_eq!(run.error, Some(json!({"node": "n"})));
        assert_eq!(run.lease_until, None);
        assert_eq!(store.get_records("r1").await.unwrap(), records);
    }

    pub async fn session_lifecycle(db: &TestDb) {
        let store = db.open().await;
        let s = waiting_run(&*store, "r1", "a", T0 + 3_600_000).await;
        assert_eq!(s.status, SessionStatus::Waiting);
        assert_eq!(s.version, 1);
        assert_eq!(
            (s.tool.as_str(), s.config_version.as_str()),
            ("order", "cfg-1")
        );
        assert_eq!(store.get_session(&s.id).await.unwrap(), s);
        let run = store.get_run("r1").await.unwrap();
        assert_eq!(run.summary.status, RunStatus::Waiting);
        assert_eq!((run.summary.owner, run.lease_until), (None, None));
        // The run now belongs to no process: its old owner cannot write to it.
        let e = store
            .append_records("r1", &lease("a", T0 + 1), &[record(0, "x")])
            .await
            .unwrap_err();
        assert!(conflict_reason(e).contains("waiting on a session"));

        let b = lease("b", T0 + 90_000);
        let stale = store
            .claim_session(&s.id, 7, &b, T0 + 100)
            .await
            .unwrap_err();
        assert!(conflict_reason(stale).contains("read it again"));
        let claimed = store.claim_session(&s.id, 1, &b, T0 + 100).await.unwrap();
        assert_eq!(claimed.status, SessionStatus::Claimed);
        assert_eq!(claimed.version, 2);
        assert_eq!(claimed.claimed_by.as_deref(), Some("b"));
        assert_eq!(claimed.state, s.state);
        let run = store.get_run("r1").await.unwrap();
        assert_eq!(run.summary.status, RunStatus::Running);
        assert_eq!(run.summary.owner.as_deref(), Some("b"));
        store
            .append_records("r1", &b, &[record(0, "ask")])
            .await
            .unwrap();

        // Suspends again at a second await, same handle.
        let update = SessionUpdate {
            node_id: "confirm".into(),
            state: json!({"next": "confirm"}),
            input_schema: json!({"type": "string"}),
            updated_at: T0 + 200,
            expires_at: T0 + 7_200_000,
        };
        let waiting = store.update_session(&s.id, 2, &update).await.unwrap();
        assert_eq!(
            (waiting.status, waiting.version, waiting.node_id.as_str()),
            (SessionStatus::Waiting, 3, "confirm")
        );
        assert_eq!(waiting.expires_at, T0 + 7_200_000);
        assert_eq!(
            store.get_run("r1").await.unwrap().summary.status,
            RunStatus::Waiting
        );
        let lost = store.update_session(&s.id, 2, &update).await.unwrap_err();
        assert!(conflict_reason(lost).contains("not claimed at version 2"));

        let c = lease("c", T0 + 90_000);
        store.claim_session(&s.id, 3, &c, T0 + 300).await.unwrap();
        store
            .finish_run("r1", "c", &RunEnd::Succeeded(json!("done")), T0 + 400)
            .await
            .unwrap();
        let ended = store.get_session(&s.id).await.unwrap();
        assert_eq!(ended.status, SessionStatus::Completed);
        assert_eq!(ended.state, serde_json::Value::Null);
        let late = store
            .claim_session(&s.id, ended.version, &c, T0 + 500)
            .await
            .unwrap_err();
        assert!(conflict_reason(late).contains("has ended (completed)"));
        // A finished run frees its slot: a new session count sees none live.
        assert_eq!(store.count_sessions().await.unwrap().live(), 0);
        assert_eq!(store.count_sessions().await.unwrap().completed, 1);
    }

    pub async fn concurrent_claims_have_one_winner(db: &TestDb) {
        let store = db.open().await;
        for round in 0..3 {
            let run_id = format!("r{round}");
            let s = waiting_run(&*store, &run_id, "a", T0 + 3_600_000).await;
            let mut tasks = Vec::new();
            for i in 0..10 {
                let store = Arc::clone(&store);
                let id = s.id.clone();
                tasks.push(tokio::spawn(async move {
                    let l = lease(&format!("claimer-{i}"), T0 + 60_000);
                    store.claim_session(&id, 1, &l, T0 + 100).await
                }));
            }
            let mut winners = Vec::new();
            for t in tasks {
                match t.await.unwrap() {
                    Ok(s) => winners.push(s),
                    Err(e) => {
                        conflict_reason(e);
                    }
                }
            }
            assert_eq!(winners.len(), 1, "round {round}: exactly one claim wins");
            let run = store.get_run(&run_id).await.unwrap();
            assert_eq!(run.summary.owner, winners[0].claimed_by);
        }
    }

    pub async fn two_processes_share_sessions(db: &TestDb) {
        let a = db.open().await;
        let b = db.open().await;
        let s = waiting_run(&*a, "r1", "a", T0 + 3_600_000).await;
        let seen = b.get_session(&s.id).await.unwrap();
        assert_eq!(seen, s);
        let claimed = b
            .claim_session(&s.id, seen.version, &lease("b", T0 + 60_000), T0 + 5)
            .await
            .unwrap();
        let e = a
            .claim_session(&s.id, seen.version, &lease("a", T0 + 60_000), T0 + 6)
            .await
            .unwrap_err();
        assert!(conflict_reason(e).contains("already continuing"));
        b.finish_run(&claimed.run_id, "b", &RunEnd::Succeeded(json!(1)), T0 + 9)
            .await
            .unwrap();
        assert_eq!(
            a.get_run("r1").await.unwrap().summary.status,
            RunStatus::Succeeded
        );

        // Concurrent continues arriving at both processes.
        let s = waiting_run(&*a, "r2", "a", T0 + 3_600_000).await;
        let mut tasks = Vec::new();
        for i in 0..6 {
            let store = if i % 2 == 0 {
                Arc::clone(&a)
            } else {
                Arc::clone(&b)
            };
            let id = s.id.clone();
            tasks.push(tokio::spawn(async move {
                store
                    .claim_session(&id, 1, &lease(&format!("p{i}"), T0 + 60_000), T0 + 7)
                    .await
            }));
        }
        let mut ok = 0;
        for t in tasks {
            if t.await.unwrap().is_ok() {
                ok += 1;
            }
        }
        assert_eq!(ok, 1);
    }

    pub async fn sessions_expire(db: &TestDb) {
        let store = db.open().await;
        let soon = waiting_run(&*store, "r1", "a", T0 + 1_000).await;
        let later = waiting_run(&*store, "r2", "a", T0 + 5_000).await;
        // Past its expiry a session cannot be claimed, even before the sweep.
        let e = store
            .claim_session(&soon.id, 1, &lease("b", T0 + 9_000), T0 + 1_000)
            .await
            .unwrap_err();
        assert!(
            matches!(e, StoreError::Expired { expired_at_ms, .. } if expired_at_ms == T0 + 1_000)
        );
        assert_eq!(store.expire_sessions(T0 + 999).await.unwrap(), 0);
        assert_eq!(store.expire_sessions(T0 + 2_000).await.unwrap(), 1);
        assert_eq!(store.expire_sessions(T0 + 2_000).await.unwrap(), 0);
        let gone = store.get_session(&soon.id).await.unwrap();
        assert_eq!(gone.status, SessionStatus::Expired);
        assert_eq!(gone.state, serde_json::Value::Null);
        let run = store.get_run("r1").await.unwrap();
        assert_eq!(run.summary.status, RunStatus::Expired);
        assert_eq!(run.summary.ended_at, Some(T0 + 2_000));
        assert!(
            run.error.unwrap()["message"]
                .as_str()
                .unwrap()
                .contains("expired")
        );
        assert_eq!(
            store.get_run("r2").await.unwrap().summary.status,
            RunStatus::Waiting
        );
        let e = store
            .claim_session(&soon.id, gone.version, &lease("b", T0 + 9_000), T0 + 2_001)
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::Expired { .. }), "{e}");
        assert!(e.to_string().contains("call the tool again"));

        let counts = store.count_sessions().await.unwrap();
        assert_eq!((counts.waiting, counts.expired, counts.live()), (1, 1, 1));
        // A claimed session is not expired under its run.
        store
            .claim_session(&later.id, 1, &lease("b", T0 + 90_000), T0 + 4_000)
            .await
            .unwrap();
        assert_eq!(store.expire_sessions(T0 + 10_000).await.unwrap(), 0);
        assert_eq!(
            store.get_run("r2").await.unwrap().summary.status,
            RunStatus::Running
        );
    }

    pub async fn cancel_session_ends_its_run(db: &TestDb) {
        let store = db.open().await;
        let s = waiting_run(&*store, "r1", "a", T0 + 3_600_000).await;
        let cancelled = store.cancel_session(&s.id, T0 + 50).await.unwrap();
        assert_eq!(cancelled.status, SessionStatus::Cancelled);
        let run = store.get_run("r1").await.unwrap();
        assert_eq!(run.summary.status, RunStatus::Cancelled);
        assert_eq!(run.summary.ended_at, Some(T0 + 50));
        let e = store.cancel_session(&s.id, T0 + 60).await.unwrap_err();
        assert!(conflict_reason(e).contains("already ended (cancelled)"));

        let s2 = waiting_run(&*store, "r2", "a", T0 + 3_600_000).await;
        store
            .claim_session(&s2.id, 1, &lease("b", T0 + 60_000), T0 + 5)
            .await
            .unwrap();
        let e = store.cancel_session(&s2.id, T0 + 6).await.unwrap_err();
        assert!(conflict_reason(e).contains("a continue is running it"));
        // Cancelling through the run's owner instead ends the session with it.
        store
            .finish_run("r2", "b", &RunEnd::Cancelled, T0 + 7)
            .await
            .unwrap();
        assert_eq!(
            store.get_session(&s2.id).await.unwrap().status,
            SessionStatus::Cancelled
        );
    }

    pub async fn released_claim_can_be_claimed_again(db: &TestDb) {
        let store = db.open().await;
        let s = waiting_run(&*store, "r1", "a", T0 + 3_600_000).await;
        let claimed = store
            .claim_session(&s.id, 1, &lease("b", T0 + 60_000), T0 + 5)
            .await
            .unwrap();
        let back = store
            .release_session(&s.id, claimed.version, T0 + 6)
            .await
            .unwrap();
        assert_eq!((back.status, back.version), (SessionStatus::Waiting, 3));
        assert_eq!(back.state, s.state);
        assert_eq!(store.get_run("r1").await.unwrap().summary.owner, None);
        let e = store
            .release_session(&s.id, claimed.version, T0 + 7)
            .await
            .unwrap_err();
        conflict_reason(e);
        store
            .claim_session(&s.id, 3, &lease("c", T0 + 60_000), T0 + 8)
            .await
            .unwrap();
    }

    pub async fn session_limit_is_enforced(db: &TestDb) {
        let store = db.open().await;
        let l = lease("a", T0 + 60_000);
        for i in 0..3 {
            store
                .create_run(&new_run(&format!("r{i}"), "t", T0), &l)
                .await
                .unwrap();
        }
        let far = T0 + 3_600_000;
        store
            .create_session(&new_session("r0", T0, far), "a", Some(2))
            .await
            .unwrap();
        store
            .create_session(&new_session("r1", T0, far), "a", Some(2))
            .await
            .unwrap();
        let e = store
            .create_session(&new_session("r2", T0, far), "a", Some(2))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::LimitReached { limit: 2 }), "{e}");
        assert!(e.to_string().contains("raise the limit"));
        // Refused whole: r2 still runs under its owner.
        let r2 = store.get_run("r2").await.unwrap();
        assert_eq!(r2.summary.status, RunStatus::Running);
        assert_eq!(r2.summary.owner.as_deref(), Some("a"));
        assert_eq!(store.count_sessions().await.unwrap().live(), 2);
        // A run cannot suspend twice at once.
        let e = store
            .create_session(&new_session("r0", T0, far), "a", None)
            .await
            .unwrap_err();
        assert!(conflict_reason(e).contains("cannot write"));
    }

    pub async fn interrupted_runs_respect_leases(db: &TestDb) {
        let store = db.open().await;
        store
            .create_run(&new_run("ra", "t", T0), &lease("a", T0 + 1_000))
            .await
            .unwrap();
        store
            .append_records(
                "ra",
                &lease("a", T0 + 1_000),
                &[record(0, "n"), record(1, "m")],
            )
            .await
            .unwrap();
        store
            .create_run(&new_run("rb", "t", T0), &lease("b", T0 + 5_000))
            .await
            .unwrap();
        let waiting = waiting_run(&*store, "rw", "c", T0 + 3_600_000).await;
        let resumed = waiting_run(&*store, "rc", "c", T0 + 3_600_000).await;
        store
            .claim_session(&resumed.id, 1, &lease("d", T0 + 2_000), T0 + 100)
            .await
            .unwrap();

        // Replica "a" restarts: its own runs go at once, whatever their lease; b's stay.
        assert_eq!(
            store.mark_interrupted(Some("a"), T0 + 500).await.unwrap(),
            ["ra"]
        );
        let ra = store.get_run("ra").await.unwrap();
        assert_eq!(ra.summary.status, RunStatus::Interrupted);
        assert_eq!(ra.summary.ended_at, Some(T0 + 500));
        assert_eq!(store.get_records("ra").await.unwrap().len(), 2);
        // A sweep without owner only takes lapsed leases.
        assert!(
            store
                .mark_interrupted(None, T0 + 1_500)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store.mark_interrupted(None, T0 + 2_001).await.unwrap(),
            ["rc"]
        );
        assert_eq!(
            store.get_session(&resumed.id).await.unwrap().status,
            SessionStatus::Interrupted
        );
        // b heartbeats and outlives the sweeps.
        assert_eq!(store.heartbeat(&lease("b", T0 + 20_000)).await.unwrap(), 1);
        assert!(
            store
                .mark_interrupted(None, T0 + 10_000)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store.mark_interrupted(None, T0 + 20_001).await.unwrap(),
            ["rb"]
        );
        // A process that stalled past its lease learns it on its next write.
        let e = store
            .append_records("rb", &lease("b", T0 + 30_000), &[record(0, "n")])
            .await
            .unwrap_err();
        assert!(conflict_reason(e).contains("interrupted"));
        // A waiting run has no owner and survives every sweep.
        assert!(
            store
                .mark_interrupted(Some("c"), T0 + 99_999)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store.get_session(&waiting.id).await.unwrap().status,
            SessionStatus::Waiting
        );
        assert_eq!(
            store
                .run_stats()
                .await
                .unwrap()
                .count(RunStatus::Interrupted),
            3
        );
    }

    pub async fn data_survives_reopening(db: &TestDb) {
        let id = {
            let store = db.open().await;
            let s = waiting_run(&*store, "r1", "a", T0 + 3_600_000).await;
            store
                .save_config("cfg-1", "version: 1\ntools: []\n", None, T0)
                .await
                .unwrap();
            store.close().await;
            let e = store.get_session(&s.id).await.unwrap_err();
            assert!(matches!(e, StoreError::Unavailable { .. }), "{e}");
            s.id
        };
        let store = db.open().await;
        let s = store.get_session(&id).await.unwrap();
        assert_eq!(s.status, SessionStatus::Waiting);
        assert_eq!(s.state["context"]["price"], 12);
        assert_eq!(
            store.get_config(&s.config_version).await.unwrap(),
            "version: 1\ntools: []\n"
        );
        store
            .claim_session(&id, s.version, &lease("after-restart", T0 + 60_000), T0 + 1)
            .await
            .unwrap();
    }

    pub async fn unknown_ids_are_not_found(db: &TestDb) {
        let store = db.open().await;
        let missing = "0123456789abcdef0123456789abcdef";
        let l = lease("a", T0 + 1);
        for e in [
            store.get_session(missing).await.unwrap_err(),
            store.claim_session(missing, 1, &l, T0).await.unwrap_err(),
            store.cancel_session(missing, T0).await.unwrap_err(),
            store.release_session(missing, 2, T0).await.unwrap_err(),
            store.get_run("nope").await.unwrap_err(),
            store.get_records("nope").await.unwrap_err(),
            store
                .append_records("nope", &l, &[record(0, "n")])
                .await
                .unwrap_err(),
            store
                .finish_run("nope", "a", &RunEnd::Cancelled, T0)
                .await
                .unwrap_err(),
            store.get_config("nope").await.unwrap_err(),
        ] {
            assert!(matches!(e, StoreError::NotFound { .. }), "{e:?}");
            assert!(e.to_string().contains("check the id"));
        }
        let e = store
            .create_session(&new_session("nope", T0, T0 + 1), "a", None)
            .await
            .unwrap_err();
        assert!(
            matches!(e, StoreError::NotFound { what: "run", .. }),
            "{e:?}"
        );
    }

    pub async fn ended_runs_are_purged(db: &TestDb) {
        let store = db.open().await;
        let l = lease("a", T0 + 60_000);
        let s = waiting_run(&*store, "old", "a", T0 + 1_000).await;
        store.expire_sessions(T0 + 2_000).await.unwrap();
        store
            .create_run(&new_run("live", "t", T0), &l)
            .await
            .unwrap();
        store
            .append_records("live", &l, &[record(0, "n")])
            .await
            .unwrap();
        assert_eq!(store.purge_runs(&by_age(T0 + 1_999)).await.unwrap(), 0);
        assert_eq!(store.purge_runs(&by_age(T0 + 3_000)).await.unwrap(), 1);
        assert!(matches!(
            store.get_session(&s.id).await.unwrap_err(),
            StoreError::NotFound { .. }
        ));
        assert_eq!(store.get_records("live").await.unwrap().len(), 1);
        let left: HashSet<_> = store
            .list_sessions(&SessionFilter::default())
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert!(left.is_empty());
    }

    /// Retention by count and age, in bounded batches, never touching a run that is running,
    /// waiting, or interrupted recently enough to be restarted.
    pub async fn retention_keeps_the_newest_and_what_is_still_needed(db: &TestDb) {
        let store = db.open().await;
        for i in 0..30_i64 {
            let mut run = new_run(&format!("done{i:02}"), "t", T0);
            run.resumable = false;
            store
                .save_finished_run(
                    &run,
                    &[record(0, "n")],
                    &RunEnd::Succeeded(json!(i)),
                    T0 + 1_000 * i,
                )
                .await
                .unwrap();
        }
        let l = lease("a", T0 + 60_000);
        store
            .create_run(&new_run("running", "t", T0), &l)
            .await
            .unwrap();
        waiting_run(&*store, "waiting", "b", T0 + 3_600_000).await;
        // An interrupted run of a resumable tool, ended "now": it may still be restarted.
        store
            .create_run(&new_run("interrupted", "t", T0), &lease("dead", T0 + 1))
            .await
            .unwrap();
        let swept = store
            .mark_interrupted(Some("dead"), T0 + 40_000)
            .await
            .unwrap();
        assert_eq!(swept, ["interrupted"]);

        // Keep the 10 that ended last, 7 per call at most.
        let rule = Purge {
            ended_before_ms: 0,
            keep_latest: 10,
            restartable_since_ms: T0 + 30_000,
            batch: 7,
        };
        let mut deleted = 0;
        loop {
            let n = store.purge_runs(&rule).await.unwrap();
            assert!(n <= 7, "{n} deleted in one call of batch 7");
            deleted += n;
            if n < 7 {
                break;
            }
        }
        assert_eq!(deleted, 20);
        let left: HashSet<String> = store
            .list_runs(&RunFilter {
                limit: 100,
                ..RunFilter::default()
            })
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        let mut expected: HashSet<String> = (20..30).map(|i| format!("done{i:02}")).collect();
        expected.extend(["running", "waiting", "interrupted"].map(String::from));
        assert_eq!(left, expected);
        assert!(matches!(
            store.get_records("done05").await.unwrap_err(),
            StoreError::NotFound { .. }
        ));

        // By age: what ended before done25 goes; the restartable run is kept while it is young.
        let rule = Purge {
            ended_before_ms: T0 + 25_000,
            keep_latest: u64::MAX,
            restartable_since_ms: T0 + 30_000,
            batch: 100,
        };
        assert_eq!(store.purge_runs(&rule).await.unwrap(), 5);
        // Once older than the restart window, an interrupted run is an ended run like any.
        let rule = Purge {
            ended_before_ms: T0 + 50_000,
            keep_latest: u64::MAX,
            restartable_since_ms: T0 + 45_000,
            batch: 100,
        };
        assert_eq!(store.purge_runs(&rule).await.unwrap(), 6);
        let left: HashSet<String> = store
            .list_runs(&RunFilter::default())
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(left, ["running", "waiting"].map(String::from).into());
    }

    pub async fn config_sources_are_kept(db: &TestDb) {
        let store = db.open().await;
        store.save_config("v1", "a: 1", None, T0).await.unwrap();
        // First write wins: a version is a content hash, so a second source is the same text;
        // the files a row stored before they were kept lacks are filled in.
        store
            .save_config("v1", "a: 2", Some(r#"{"a.yaml": "a: 1"}"#), T0 + 1)
            .await
            .unwrap();
        store.save_config("v2", "b: 1", None, T0 + 2).await.unwrap();
        assert_eq!(store.get_config("v1").await.unwrap(), "a: 1");
        assert_eq!(store.get_config("v2").await.unwrap(), "b: 1");
        assert_eq!(
            store.get_config_files("v1").await.unwrap().as_deref(),
            Some(r#"{"a.yaml": "a: 1"}"#)
        );
        assert_eq!(store.get_config_files("v2").await.unwrap(), None);
        assert!(matches!(
            store.get_config_files("v3").await.unwrap_err(),
            StoreError::NotFound { .. }
        ));
    }

    /// A version is dropped once no run references it and no process has pinned it for a
    /// while; the one a process serves, and any a run started on, stay.
    pub async fn versions_no_run_references_are_dropped(db: &TestDb) {
        let store = db.open().await;
        let files = Some("{}");
        for v in ["cfg-1", "old", "served", "fresh"] {
            store.save_config(v, v, files, T0).await.unwrap();
        }
        // `cfg-1` is the version `new_run` pins its runs to.
        waiting_run(&*store, "r1", "a", T0 + 3_600_000).await;
        // `fresh` is pinned again later: another replica serves it now.
        store
            .save_config("fresh", "fresh", files, T0 + 5_000)
            .await
            .unwrap();
        let dropped = store
            .purge_configs("served", T0 + 10_000, T0 + 1_000)
            .await
            .unwrap();
        assert_eq!(dropped, 1, "only `old` is dropped");
        assert!(matches!(
            store.get_config("old").await.unwrap_err(),
            StoreError::NotFound { .. }
        ));
        for kept in ["cfg-1", "served", "fresh"] {
            assert_eq!(store.get_config(kept).await.unwrap(), kept);
        }
        // `served` was pinned by the purge itself, so a later one with a later horizon keeps
        // it; once its last run is gone, `cfg-1` goes too.
        store
            .cancel_session(
                &store
                    .list_sessions(&SessionFilter::default())
                    .await
                    .unwrap()[0]
                    .id,
                T0 + 20_000,
            )
            .await
            .unwrap();
        let rule = Purge {
            ended_before_ms: T0 + 30_000,
            keep_latest: 0,
            restartable_since_ms: T0 + 30_000,
            batch: 100,
        };
        assert_eq!(store.purge_runs(&rule).await.unwrap(), 1);
        let dropped = store
            .purge_configs("other", T0 + 30_000, T0 + 9_000)
            .await
            .unwrap();
        assert_eq!(dropped, 2, "`cfg-1` and `fresh`, not `served`");
        assert_eq!(store.get_config("served").await.unwrap(), "served");
    }

    /// What one process sends on a PostgreSQL store, another one listening hears; SQLite has
    /// no fleet.
    pub async fn fleet_messages_reach_every_process(db: &TestDb) {
        let a = db.open().await;
        let b = db.open().await;
        let Some(mut heard) = a.listen().await.unwrap() else {
            assert_eq!(a.backend(), "sqlite");
            assert!(!b.notify("hello").await.unwrap());
            return;
        };
        assert!(b.notify("hello").await.unwrap());
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), heard.recv())
            .await
            .expect("heard within 10 s")
            .unwrap();
        assert_eq!(got, "hello");
        let too_long = "x".repeat(mcpflow_store::FLEET_MESSAGE_BYTES + 1);
        assert!(b.notify(&too_long).await.is_err());
    }

    pub async fn footprint_grows_with_data(db: &TestDb) {
        let store = db.open().await;
        let before = store.footprint().await.unwrap();
        for i in 0..50 {
            waiting_run(&*store, &format!("r{i}"), "a", T0 + 3_600_000).await;
        }
        let after = store.footprint().await.unwrap();
        assert!(
            after.sessions_bytes > before.sessions_bytes,
            "{before:?} {after:?}"
        );
        assert!(after.total() > before.total());
        let listed = store
            .list_sessions(&SessionFilter {
                status: Some(SessionStatus::Waiting),
                limit: 10,
                ..SessionFilter::default()
            })
            .await
            .unwrap();
        assert_eq!(listed.len(), 10);
        let one = store
            .list_sessions(&SessionFilter {
                run_id: Some("r7".into()),
                ..SessionFilter::default()
            })
            .await
            .unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].run_id, "r7");
    }

    /// Issue #18: a run records who started it, and its session reads it (the owner check of
    /// a continue); a run started without access control records nothing.
    pub async fn who_started_a_run_is_kept(db: &TestDb) {
        let store = db.open().await;
        let mut run = new_run("r1", "order", T0);
        run.started_by = Some("alice".into());
        run.caller = Some(json!({"subject": "alice", "scopes": ["tools:call"]}));
        store
            .create_run(&run, &lease("a", T0 + 30_000))
            .await
            .unwrap();
        let read = store.get_run("r1").await.unwrap();
        assert_eq!(read.summary.started_by.as_deref(), Some("alice"));
        assert_eq!(read.caller, run.caller);
        let session = store
            .create_session(&new_session("r1", T0 + 10, T0 + 99_000), "a", None)
            .await
            .unwrap();
        assert_eq!(session.started_by.as_deref(), Some("alice"));
        let again = store.get_session(&session.id).await.unwrap();
        assert_eq!(again.started_by.as_deref(), Some("alice"));

        let open = waiting_run(&*store, "r2", "a", T0 + 99_000).await;
        assert_eq!(open.started_by, None);
        let listed = store.list_runs(&RunFilter::default()).await.unwrap();
        let by: HashSet<(String, Option<String>)> =
            listed.into_iter().map(|r| (r.id, r.started_by)).collect();
        assert!(by.contains(&("r1".into(), Some("alice".into()))), "{by:?}");
        assert!(by.contains(&("r2".into(), None)), "{by:?}");
        assert_eq!(store.get_run("r2").await.unwrap().caller, None);
    }

    pub async fn audit_rows_are_listed_by_time_and_purged(db: &TestDb) {
        let store = db.open().await;
        assert!(
            store
                .list_audit(&AuditFilter::default())
                .await
                .unwrap()
                .is_empty()
        );
        // One batch of 1200 rows (more than one INSERT statement), a second of one.
        let rows: Vec<AuditRow> = (0..1200).map(|i| audit_row(T0 + i, i)).collect();
        store.append_audit(&rows).await.unwrap();
        let refused = AuditRow {
            subject: None,
            via: None,
            key: None,
            outcome: "unauthenticated".into(),
            run_id: None,
            ..audit_row(T0 + 5000, 0)
        };
        store
            .append_audit(std::slice::from_ref(&refused))
            .await
            .unwrap();
        store.append_audit(&[]).await.unwrap();

        let newest = store
            .list_audit(&AuditFilter {
                since_ms: None,
                limit: 3,
            })
            .await
            .unwrap();
        assert_eq!(newest.len(), 3);
        // Every field comes back as written, NULLs included, the newest first.
        assert_eq!(newest[0], refused);
        assert_eq!(newest[1], rows[1199]);
        assert_eq!(newest[2], rows[1198]);

        let since = store
            .list_audit(&AuditFilter {
                since_ms: Some(T0 + 1190),
                limit: 100,
            })
            .await
            .unwrap();
        assert_eq!(since.len(), 11, "{since:?}");
        assert!(since.iter().all(|r| r.at >= T0 + 1190));

        // Retention: the oldest first, in bounded batches.
        assert_eq!(store.purge_audit(T0 + 1000, 600).await.unwrap(), 600);
        assert_eq!(store.purge_audit(T0 + 1000, 600).await.unwrap(), 400);
        assert_eq!(store.purge_audit(T0 + 1000, 600).await.unwrap(), 0);
        let left = store
            .list_audit(&AuditFilter {
                since_ms: None,
                limit: 10_000,
            })
            .await
            .unwrap();
        assert_eq!(left.len(), 201);
        assert!(left.iter().all(|r| r.at >= T0 + 1000), "{:?}", left.last());
        // Audit rows are not runs: purging runs leaves them be.
        store.purge_runs(&by_age(i64::MAX)).await.unwrap();
        assert_eq!(
            store
                .list_audit(&AuditFilter {
                    since_ms: None,
                    limit: 10_000
                })
                .await
                .unwrap()
                .len(),
            201
        );
    }
}

fn audit_row(at: i64, i: i64) -> AuditRow {
    AuditRow {
        at,
        subject: Some(format!("key-{}", i % 3)),
        via: Some("apiKey".into()),
        key: Some(format!("key-{}", i % 3)),
        tool: "order".into(),
        outcome: if i % 2 == 0 { "ok" } else { "tool_error" }.into(),
        duration_ms: i,
        run_id: (i % 5 != 0).then(|| format!("run-{i}")),
    }
}
