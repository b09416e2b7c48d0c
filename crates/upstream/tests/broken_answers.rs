//! A stdio upstream whose answer cannot be read (not JSON-RPC, over the line cap, under an id
//! never sent) fails the call at once with what was wrong, instead of letting it wait out its
//! timeout and blame slowness; the connection serves the next call.
//!
//! The call timeout here is 60 s: an answer within 10 s shows the call did not wait for it
//! (a bound against hanging, not a measure of speed).

mod common;

use std::time::{Duration, Instant};

use common::{args, count, fixture, structured};
use indexmap::IndexMap;
use mcpflow_upstream::{PoolOptions, UpstreamError, UpstreamPool};
use serde_json::json;

const S: &str = "fixture";

fn pool(max_line_bytes: usize) -> UpstreamPool {
    let servers: IndexMap<String, _> = [(S.to_string(), fixture(&[], json!({})))]
        .into_iter()
        .collect();
    let options = PoolOptions {
        connect_timeout: common::CONNECT_TIMEOUT,
        call_timeout: Duration::from_secs(60),
        max_line_bytes,
        ..PoolOptions::default()
    };
    UpstreamPool::with_options(servers, std::env::temp_dir(), options)
}

/// Calls `bad_answer` in `mode` and returns the error's message, checking it came at once.
async fn broken(pool: &UpstreamPool, mode: &str) -> String {
    // Started first: the bound below is about the answer, not the start.
    assert_eq!(count(pool, S).await, 1);
    let started = Instant::now();
    let error = pool
        .call_tool(
            S,
            "bad_answer",
            args(json!({"mode": mode, "bytes": 200_000})),
        )
        .await
        .expect_err("no usable answer");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{mode}: failed only after {:?}, as if waiting for the timeout",
        started.elapsed()
    );
    let message = error.to_string();
    match &error {
        UpstreamError::BrokenAnswer {
            server, operation, ..
        } => {
            assert_eq!(server, S);
            assert_eq!(operation, "tools/call bad_answer");
        }
        other => panic!("{mode}: expected BrokenAnswer, got {other:?}"),
    }
    assert!(
        !message.contains("raise `timeoutMs`"),
        "{mode}: blames slowness: {message}"
    );
    // The connection survives: the next call is answered by the same process.
    assert_eq!(
        structured(pool, S, "add", json!({"a": 1, "b": 2})).await,
        json!({"sum": 3})
    );
    message
}

#[tokio::test]
async fn an_answer_that_is_not_json_fails_its_call_at_once_showing_its_start() {
    let message = broken(&pool(1 << 20), "unparsable").await;
    assert!(message.contains("not valid JSON-RPC"), "{message}");
    assert!(
        message.contains(r#"it began: `{"jsonrpc":"2.0","id":"#),
        "{message}"
    );
}

#[tokio::test]
async fn an_answer_over_the_line_cap_fails_its_call_at_once_naming_the_cap() {
    // 200 000 bytes of answer against a cap of 64 KiB.
    let message = broken(&pool(64 * 1024), "oversized").await;
    assert!(message.contains("longer than 65536 bytes"), "{message}");
    assert!(message.contains("it began:"), "{message}");
    // Only the first bytes are shown, however long the line.
    assert!(message.len() < 1000, "{} bytes: {message}", message.len());
}

#[tokio::test]
async fn an_answer_under_an_id_never_sent_fails_the_calls_in_flight_at_once() {
    let message = broken(&pool(1 << 20), "wrong_id").await;
    assert!(
        message.contains("which names no request mcpflow sent"),
        "{message}"
    );
}

#[tokio::test]
async fn the_late_answer_of_a_call_given_up_on_fails_nothing() {
    // The fixture answers a cancelled sleep anyway ("sleep: cancelled"); that answer comes
    // under an id no longer awaited, which must not be taken for a wrong id and fail the
    // call still in flight beside it.
    let pool = pool(1 << 20);
    assert_eq!(count(&pool, S).await, 1);
    let beside = structured(&pool, S, "sleep", json!({"ms": 2000}));
    let given_up = async {
        let options = mcpflow_upstream::passthrough::SendOptions::default()
            .timeout(Duration::from_millis(300));
        let params = rmcp::model::CallToolRequestParams::new("sleep")
            .with_arguments(args(json!({"ms": 600_000})));
        let request =
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        pool.send(S, request, options).await
    };
    let (beside, given_up) = tokio::join!(beside, given_up);
    assert!(
        matches!(given_up, Err(UpstreamError::Timeout { .. })),
        "{given_up:?}"
    );
    assert_eq!(beside, json!({"slept": 2000}));
}
