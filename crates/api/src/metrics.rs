//! `/metrics`: the process's Prometheus series (`mcpflow_telemetry::metrics`), with the gauges
//! that only the store knows (sessions waiting) read at scrape time.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use mcpflow_engine::Engine;
use mcpflow_telemetry::metrics;

/// The store is asked for at most this long per scrape; past it the gauge keeps its last value.
const STORE_PATIENCE: Duration = Duration::from_secs(2);

type EngineSource = dyn Fn() -> Engine + Send + Sync;

/// `/metrics` over the engine `engine` returns (the current one, across reloads).
pub fn router(engine: impl Fn() -> Engine + Send + Sync + 'static) -> Router {
    let engine: Arc<EngineSource> = Arc::new(engine);
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(engine)
}

async fn scrape(State(engine): State<Arc<EngineSource>>) -> Response {
    if metrics::get().is_none() {
        return (
            StatusCode::NOT_FOUND,
            "metrics are off (telemetry.metrics.enabled: false)\n",
        )
            .into_response();
    }
    let engine = engine();
    if let Some(durability) = engine.durability() {
        match tokio::time::timeout(STORE_PATIENCE, durability.store.count_sessions()).await {
            Ok(Ok(counts)) => metrics::sessions_waiting(counts.waiting),
            Ok(Err(e)) => tracing::debug!("metrics: cannot count sessions: {e}"),
            Err(_) => tracing::debug!("metrics: the store did not count sessions within 2 s"),
        }
    }
    let text = metrics::render().unwrap_or_default();
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response()
}
