//! Retry policy and the error objects `onError` and `optional` expose.

use std::time::{Duration, Instant};

use mcpflow_expr::Value;
use mcpflow_model::{Retry, RetryOn};
use serde_json::{Value as Json, json};

use crate::error::{RunError, RunErrorKind};

pub(crate) fn retryable(retry: &Retry, kind: RunErrorKind) -> bool {
    match kind {
        RunErrorKind::Timeout => retry.retries(RetryOn::Timeout),
        RunErrorKind::Upstream => retry.retries(RetryOn::Transport),
        RunErrorKind::ToolError => retry.retries(RetryOn::ToolError),
        _ => false,
    }
}

/// The wait after failed attempt `attempt` (from 1): exponential, capped, optionally jittered.
pub(crate) fn backoff(retry: &Retry, attempt: u32) -> Duration {
    let base = retry.backoff_ms.unwrap_or(Retry::DEFAULT_BACKOFF_MS);
    let cap = retry
        .max_backoff_ms
        .unwrap_or(Retry::DEFAULT_MAX_BACKOFF_MS);
    let ms = base.saturating_mul(1u64 << (attempt - 1).min(32)).min(cap);
    let ms = if retry.jitter.unwrap_or(true) {
        // In [ms/2, ms]: spreads retries of concurrent runs without a random-number crate.
        use std::hash::{BuildHasher, RandomState};
        let r = RandomState::new().hash_one((attempt, Instant::now())) % 1024;
        ms / 2 + (ms / 2) * r / 1023
    } else {
        ms
    };
    Duration::from_millis(ms)
}

/// What `onError` and `optional` expose as the failed node's output.
pub(crate) fn error_object(err: &RunError, attempts: u32) -> Value {
    let mut obj = error_json(err);
    if let Json::Object(m) = &mut obj {
        m.insert("attempts".into(), json!(attempts));
    }
    Value::from_json(obj)
}

pub(crate) fn error_json(err: &RunError) -> Json {
    let mut m = serde_json::Map::new();
    m.insert("message".into(), json!(err.message));
    m.insert("code".into(), json!(err.code));
    m.insert("nodeId".into(), json!(err.node_id));
    m.insert("kind".into(), json!(err.kind.as_str()));
    match (err.kind, err.details.as_deref()) {
        // A script's details (`thrown`, `stack`, `logs`) sit beside the message.
        (RunErrorKind::Script, Some(Json::Object(extra))) => {
            m.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        (_, Some(d)) => {
            m.insert("errors".into(), d.clone());
        }
        (_, None) => {}
    }
    Json::Object(m)
}
