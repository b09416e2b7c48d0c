//! The one send path and what it promises: notifications that precede an answer are delivered
//! before it returns, feeds belong to their pool, one tool cache, and the options a caller
//! may set (cancellation, a deadline of its own).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{args, eventually, fixture, pool, structured};
use mcpflow_upstream::UpstreamError;
use mcpflow_upstream::passthrough::SendOptions;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
use serde_json::json;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

const S: &str = "fixture";

/// Rounds per ordering test: one lucky round proves little, a race shows within a few.
const ROUNDS: usize = 20;

fn call(tool: &str, arguments: serde_json::Value) -> ClientRequest {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args(arguments));
    ClientRequest::CallToolRequest(CallToolRequest::new(params))
}

#[tokio::test]
async fn progress_sent_before_the_answer_is_in_the_channel_when_it_returns() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    for round in 0..ROUNDS {
        let (sink, mut progress) = mpsc::unbounded_channel();
        let result = pool
            .call_tool_with_progress(S, "progress", args(json!({"steps": 3, "ms": 0})), sink)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert!(!result.is_error, "{result:?}");
        let mut got = Vec::new();
        while let Ok(p) = progress.try_recv() {
            got.push(p.progress);
        }
        assert_eq!(got, [1.0, 2.0, 3.0], "round {round}");
        // The call ended, and with it the route: the channel is closed.
        assert!(progress.recv().await.is_none(), "round {round}");
    }
}

#[tokio::test]
async fn log_lines_before_the_answer_are_published_when_it_returns() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let mut logs = pool.logs();
    for round in 0..ROUNDS {
        let answer = pool
            .send(
                S,
                call("test_logging_tool", json!({})),
                SendOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert!(
            matches!(answer, ServerResult::CallToolResult(_)),
            "{answer:?}"
        );
        let log = logs
            .try_recv()
            .unwrap_or_else(|e| panic!("round {round}: no log line yet ({e})"));
        assert_eq!(&*log.server, S);
        assert_eq!(log.params["logger"], "mcpflow-fixture", "{:?}", log.params);
        assert!(matches!(
            logs.try_recv(),
            Err(broadcast::error::TryRecvError::Empty)
        ));
    }
}

#[tokio::test]
async fn each_pool_hears_only_its_own_upstreams() {
    let (a, b) = (
        pool(vec![(S, fixture(&[], json!({})))]),
        pool(vec![(S, fixture(&[], json!({})))]),
    );
    let (mut changes_a, mut changes_b) = (a.list_changes(), b.list_changes());
    // Both connected, so that a process-wide feed would have a listener on either side.
    structured(&b, S, "count", json!({})).await;
    structured(&a, S, "tools_changed", json!({})).await;
    // Announced before the answer that followed it was returned.
    assert_eq!(changes_a.try_recv().as_deref().ok(), Some(S));
    structured(&b, S, "count", json!({})).await;
    assert!(
        matches!(
            changes_b.try_recv(),
            Err(broadcast::error::TryRecvError::Empty)
        ),
        "the other pool heard of a change of an upstream it does not have"
    );
}

#[tokio::test]
async fn one_tool_cache_dropped_before_the_change_is_announced() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let lists = async |pool| {
        structured(pool, S, "count", json!({})).await["lists"]
            .as_u64()
            .unwrap_or_default()
    };
    let whole = pool.tools(S).await.unwrap_or_else(|e| panic!("{e}"));
    let plain = pool.list_tools(S).await.unwrap_or_else(|e| panic!("{e}"));
    let again = pool.tools(S).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        Arc::ptr_eq(&whole, &again),
        "the same list until it changes"
    );
    assert_eq!(plain.len(), whole.len());
    assert_eq!(lists(&pool).await, 1, "one listing served all three");
    assert!(pool.current_tools(S).is_some());

    structured(&pool, S, "tools_changed", json!({})).await;
    assert!(
        pool.current_tools(S).is_none(),
        "dropped by the time the call returned"
    );
    let fresh = pool.tools(S).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!Arc::ptr_eq(&whole, &fresh));
    assert_eq!(lists(&pool).await, 2);
}

#[tokio::test]
async fn a_cancelled_send_fails_as_cancelled_and_is_cancelled_upstream() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let cancel = CancellationToken::new();
    let options = SendOptions::default().cancel(cancel.clone());
    let tracked = json!({"key": "cancel", "ms": 600000});
    let sending = pool.send(S, call("track", tracked), options);
    let canceller = async {
        eventually("the call is under way upstream", async || {
            structured(&pool, S, "track_stats", json!({"key": "cancel"})).await["in_flight"] == 1
        })
        .await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(sending, canceller);
    match result {
        Err(UpstreamError::Cancelled { server, operation }) => {
            assert_eq!(server, S);
            assert_eq!(operation, "tools/call track");
        }
        other => panic!("expected Cancelled, got {other:?}"),
    }
    eventually("the server saw the cancellation", async || {
        structured(&pool, S, "cancelled_count", json!({})).await["cancelled"] == 1
    })
    .await;
}

#[tokio::test]
async fn a_send_may_set_its_own_deadline() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let options = SendOptions::default().timeout(Duration::from_millis(100));
    let error = pool
        .send(S, call("sleep", json!({"ms": 600000})), options)
        .await
        .err();
    match error {
        Some(UpstreamError::Timeout { timeout_ms, .. }) => assert_eq!(timeout_ms, 100),
        other => panic!("expected Timeout, got {other:?}"),
    }
}
