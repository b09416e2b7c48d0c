//! [`Event`]: what a run tells its observers, in order, through the request's event channel.

use std::sync::Arc;

use crate::history::Record;
use crate::run::RunStatus;

/// What a run tells its observers, in order.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum Event {
    #[serde(rename_all = "camelCase")]
    RunStarted {
        run_id: Arc<str>,
        tool: Arc<str>,
    },
    #[serde(rename_all = "camelCase")]
    NodeStarted {
        index: usize,
        node_id: Arc<str>,
        node_type: &'static str,
    },
    /// The record of a node that finished, successfully or not (`record.error`).
    NodeFinished {
        record: Box<Record>,
    },
    /// An upstream reported progress on the call `node_id` is making.
    #[serde(rename_all = "camelCase")]
    UpstreamProgress {
        node_id: Arc<str>,
        progress: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The run is paused before `node_id` (a breakpoint, a pause request or a step).
    #[serde(rename_all = "camelCase")]
    Paused {
        index: usize,
        node_id: Arc<str>,
        /// `breakpoint`, `pause`, `step`, or why a breakpoint's condition failed.
        reason: String,
        /// The `parallel` branch it paused in.
        #[serde(skip_serializing_if = "Option::is_none")]
        branch: Option<Arc<str>>,
        /// The `foreach` item it paused in.
        #[serde(skip_serializing_if = "Option::is_none")]
        item: Option<usize>,
    },
    Resumed,
    #[serde(rename_all = "camelCase")]
    RunFinished {
        status: RunStatus,
    },
}
