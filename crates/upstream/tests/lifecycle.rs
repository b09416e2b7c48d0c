//! How the pool manages processes: one shared child, crashes, restarts, timeouts, start
//! failures, shutdown and cleanup.

mod common;

use std::time::{Duration, Instant};

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

#[tokio::test]
async fn a_stdio_server_may_set_its_own_connect_timeout() {
    // The pool's default would wait 20 s; the server's own key says 300 ms.
    let pool = pool(vec![(
        S,
        fixture(&["--hang-on-initialize"], json!({"connectTimeoutMs": 300})),
    )]);
    let started = Instant::now();
    let error = pool.list_tools(S).await.unwrap_err();
    assert!(
        matches!(
            &error,
            UpstreamError::ConnectTimeout {
                timeout_ms: 300,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// A listing never waits for a start: an upstream that does not answer `initialize` fails it
/// at once, every time, while its start goes on in the background (here for 20 s).
#[tokio::test]
async fn listings_do_not_wait_for_a_start() {
    let pool = pool(vec![(S, fixture(&["--hang-on-initialize"], json!({})))]);
    for _ in 0..3 {
        let started = Instant::now();
        let error = pool.tools_now(S).await.unwrap_err();
        assert!(
            matches!(&error, UpstreamError::Starting { .. }),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("`fixture` is starting"),
            "{error}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "waited {:?} for a start",
            started.elapsed()
        );
    }
}

/// A program that cannot start: listings fail at once with why, never waiting out the
/// growing pause between restarts (0.25, 0.5, 1, 2, 4, 8 s), which runs in the background.
#[tokio::test]
async fn listings_of_a_dead_upstream_do_not_wait_out_its_restart_pause() {
    let pool = pool(vec![(
        S,
        common::server(json!({"command": "/nonexistent/mcp-server"})),
    )]);
    let started = Instant::now();
    let mut spawn_errors = 0;
    for _ in 0..8 {
        match pool.tools_now(S).await {
            Err(UpstreamError::Spawn { .. }) => spawn_errors += 1,
            Err(UpstreamError::Starting { .. }) => {}
            other => panic!("expected a start failure, got {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(spawn_errors > 0, "the start failure is reported");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "8 listings took {:?}",
        started.elapsed()
    );
}

/// A listing that went without an upstream (it was starting) is owed a list change: the pool
/// announces one once the upstream is up, and the next listing has its tools.
#[tokio::test]
async fn a_listing_made_while_starting_is_followed_by_a_list_change() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let mut changes = pool.list_changes();
    let missed = pool.tools_now(S).await.unwrap_err();
    assert!(
        matches!(missed, UpstreamError::Starting { .. }),
        "{missed:?}"
    );
    let changed = tokio::time::timeout(Duration::from_secs(20), changes.recv())
        .await
        .expect("a list change once the upstream is up")
        .expect("the feed is open");
    assert_eq!(&*changed, S);
    let tools = pool.tools_now(S).await.expect("listed once up");
    assert!(tools.iter().any(|t| t.name == "echo"));
}

/// `mcpflow run` abandons a call (a failFast sibling failed) and shuts the pool down at once:
/// the `notifications/cancelled` must still reach the upstream, every time.
#[tokio::test]
async fn shutdown_sends_the_cancels_of_abandoned_calls_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    for round in 0..20 {
        let record = dir.path().join(format!("received-{round}.jsonl"));
        let record_arg = record.to_str().expect("a UTF-8 path");
        let pool = pool(vec![(S, fixture(&["--record", record_arg], json!({})))]);
        assert_eq!(count(&pool, S).await, 1);
        let sleeping = pool.call_tool(S, "sleep", args(json!({"ms": 600_000})));
        // Abandoned once it is surely on the wire (the record shows it arrived).
        let abandoned = tokio::time::timeout(Duration::from_secs(20), async {
            let mut sleeping = std::pin::pin!(sleeping);
            loop {
                tokio::select! {
                    _ = &mut sleeping => panic!("the sleep ended"),
                    () = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
                let received = std::fs::read_to_string(&record).unwrap_or_default();
                if received.contains(r#""name":"sleep""#) {
                    return;
                }
            }
        });
        abandoned.await.expect("the sleep reaches the fixture");
        pool.shutdown().await;
        let received = std::fs::read_to_string(&record).expect("the record");
        assert!(
            received.contains("notifications/cancelled"),
            "round {round}: the cancel never reached the upstream; it received:\n{received}"
        );
    }
}
