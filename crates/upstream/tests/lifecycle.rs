//! How the pool manages processes: one shared child, crashes, restarts, timeouts, start
//! failures, shutdown and cleanup.

mod common;

use std::time::Duration;

use common::{alive, args, count, eventually, fixture, fixture_pid, pool, structured};
use mcpflow_upstream::UpstreamError;
use serde_json::json;

const S: &str = "fixture";

#[tokio::test]
async fn concurrent_first_calls_share_one_child() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let calls = (0..8).map(|_| count(&pool, S));
    let mut counts = futures::future::join_all(calls).await;
    counts.sort_unstable();
    // One process numbered the calls 1..=8; two processes would have repeated a number.
    assert_eq!(counts, (1..=8).collect::<Vec<u64>>());
    assert_eq!(Some(fixture_pid(&pool, S).await), pool.pid(S));
}

#[tokio::test]
async fn calls_are_multiplexed_not_queued() {
    // Each rendezvous call returns only once all five are in the server at the same time.
    let pool = pool(vec![(S, fixture(&[], json!({"timeoutMs": 30000})))]);
    let calls = (0..5).map(|_| structured(&pool, S, "rendezvous", json!({"n": 5})));
    for result in futures::future::join_all(calls).await {
        assert_eq!(result, json!({"arrived": 5}));
    }
}

#[tokio::test]
async fn a_crash_fails_calls_in_flight_with_the_stderr_tail_and_the_next_call_restarts() {
    // The sleep's own deadline is far away: it must fail because the process died.
    let pool = pool(vec![(S, fixture(&[], json!({"timeoutMs": 600000})))]);
    let first_pid = fixture_pid(&pool, S).await;

    let sleeping = pool.call_tool(S, "sleep", args(json!({"ms": 600000})));
    let crashing = async {
        // Let the sleep reach the server before the crash.
        eventually("the sleep is in flight", async || {
            count(&pool, S).await >= 3
        })
        .await;
        pool.call_tool(S, "crash", args(json!({"code": 3}))).await
    };
    let (slept, crashed) = tokio::join!(sleeping, crashing);

    for outcome in [slept, crashed] {
        match outcome {
            Err(UpstreamError::Crashed {
                server,
                status,
                stderr_tail,
                ..
            }) => {
                assert_eq!(server, S);
                assert_eq!(status, "exited with code 3");
                assert!(
                    stderr_tail.contains("fixture: crashing on purpose"),
                    "{stderr_tail}"
                );
            }
            other => panic!("expected Crashed, got {other:?}"),
        }
    }
    let message = pool
        .call_tool(S, "crash", args(json!({})))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("`fixture`") && message.contains("restarted"),
        "{message}"
    );

    // A new process: its call counter starts again.
    assert_eq!(count(&pool, S).await, 1);
    assert_ne!(fixture_pid(&pool, S).await, first_pid);
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_a_clear_spawn_error() {
    let pool = pool(vec![(
        "ghost",
        common::server(json!({"command": "/nonexistent/mcp-server", "args": ["--flag"]})),
    )]);
    let error = pool.list_tools("ghost").await.unwrap_err();
    assert!(matches!(error, UpstreamError::Spawn { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("`ghost`"), "{message}");
    assert!(
        message.contains("/nonexistent/mcp-server --flag"),
        "{message}"
    );
    assert!(message.contains("program not found"), "{message}");
    // It keeps failing the same way, without a child left behind.
    let again = pool.list_tools("ghost").await.unwrap_err();
    assert!(matches!(again, UpstreamError::Spawn { .. }), "{again:?}");
}

#[tokio::test]
async fn a_missing_working_directory_is_named() {
    let pool = pool(vec![(S, fixture(&[], json!({"cwd": "/nonexistent/dir"})))]);
    let message = pool.list_tools(S).await.unwrap_err().to_string();
    assert!(message.contains("/nonexistent/dir"), "{message}");
}

#[tokio::test]
async fn a_server_that_exits_at_once_reports_its_status_and_stderr() {
    let pool = pool(vec![(
        "broken",
        common::server(json!({
            "command": "sh",
            "args": ["-c", "echo 'error: API_KEY is not set' >&2; exit 3"],
        })),
    )]);
    let error = pool
        .call_tool("broken", "echo", args(json!({})))
        .await
        .unwrap_err();
    match &error {
        UpstreamError::Start {
            server,
            reason,
            stderr_tail,
            ..
        } => {
            assert_eq!(server, "broken");
            assert!(reason.contains("exited with code 3"), "{reason}");
            assert!(stderr_tail.contains("API_KEY is not set"), "{stderr_tail}");
        }
        other => panic!("expected Start, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("sh -c") && message.contains("API_KEY"),
        "{message}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_times_out() {
    let pool = common::pool_in(
        vec![(S, fixture(&["--hang-on-initialize"], json!({})))],
        std::env::temp_dir(),
        Duration::from_millis(300),
    );
    let error = pool.list_tools(S).await.unwrap_err();
    match &error {
        UpstreamError::ConnectTimeout {
            server, timeout_ms, ..
        } => {
            assert_eq!(server, S);
            assert_eq!(*timeout_ms, 300);
        }
        other => panic!("expected ConnectTimeout, got {other:?}"),
    }
    assert!(error.to_string().contains("initialize"));
}

#[tokio::test]
async fn a_slow_call_times_out_and_is_cancelled_upstream() {
    let pool = pool(vec![(S, fixture(&[], json!({"timeoutMs": 200})))]);
    let error = pool
        .call_tool(S, "sleep", args(json!({"ms": 600000})))
        .await
        .unwrap_err();
    match &error {
        UpstreamError::Timeout {
            server,
            operation,
            timeout_ms,
        } => {
            assert_eq!(server, S);
            assert_eq!(operation, "tools/call sleep");
            assert_eq!(*timeout_ms, 200);
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    // The fixture logs when a sleep is cancelled by notifications/cancelled.
    eventually("the server saw the cancellation", async || {
        pool.stderr_tail(S)
            .is_some_and(|tail| tail.contains("fixture: sleep cancelled"))
    })
    .await;
    // The connection survives a timeout.
    assert_eq!(count(&pool, S).await, 2);
}

#[tokio::test]
async fn a_slow_listing_times_out_too() {
    let pool = pool(vec![(
        S,
        fixture(&["--list-delay-ms", "600000"], json!({"timeoutMs": 200})),
    )]);
    let error = pool.list_tools(S).await.unwrap_err();
    assert!(
        matches!(&error, UpstreamError::Timeout { operation, .. } if operation == "tools/list"),
        "{error:?}"
    );
}

#[tokio::test]
async fn dropping_the_pool_kills_the_child() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let pid = fixture_pid(&pool, S).await;
    assert!(alive(pid));
    drop(pool);
    eventually("the child is gone", async || !alive(pid)).await;
}

#[tokio::test]
async fn dropping_the_pool_kills_grandchildren_too() {
    // `sh` stays the direct child and runs the fixture as its own child, as `npx` runs `node`.
    let server = common::server(json!({
        "command": "sh",
        "args": ["-c", "\"$0\"; exit $?", common::fixture_path().to_str().unwrap()],
    }));
    let pool = pool(vec![(S, server)]);
    let grandchild = fixture_pid(&pool, S).await;
    let child = pool.pid(S).expect("a running child");
    assert_ne!(
        child, grandchild,
        "the fixture must run under sh for this test to mean anything"
    );
    drop(pool);
    eventually("the child and the grandchild are gone", async || {
        !alive(child) && !alive(grandchild)
    })
    .await;
}

#[tokio::test]
async fn shutdown_stops_the_children_and_later_calls_fail() {
    let pool = pool(vec![
        (S, fixture(&[], json!({}))),
        ("other", fixture(&[], json!({}))),
    ]);
    let pids = [
        fixture_pid(&pool, S).await,
        fixture_pid(&pool, "other").await,
    ];
    pool.shutdown().await;
    for pid in pids {
        assert!(!alive(pid), "pid {pid} survived shutdown");
    }
    let error = pool
        .call_tool(S, "echo", args(json!({})))
        .await
        .unwrap_err();
    assert!(matches!(error, UpstreamError::ShutDown { .. }), "{error:?}");
}
