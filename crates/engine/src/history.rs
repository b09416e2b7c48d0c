use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcpflow_expr::{Context, HistoryView, Value};
use serde::Serialize;

/// One executed node.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub index: usize,
    pub node_id: Arc<str>,
    #[serde(rename = "type")]
    pub node_type: &'static str,
    /// Milliseconds since the Unix epoch.
    pub start_time: f64,
    pub end_time: f64,
    pub duration_ms: f64,
    /// What an mcp node sent (its rendered arguments); absent for other nodes, whose
    /// input is the context, recoverable with [`History::context_at`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    /// `None` is JSONata's undefined (also for a failed node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The ordered records of a run, indexed by node for the history functions.
#[derive(Debug, Clone, Default)]
pub struct History {
    records: Vec<Record>,
    by_node: HashMap<Arc<str>, Vec<usize>>,
    /// Wall-clock time of the run's start, to turn monotonic offsets into timestamps.
    epoch_ms: f64,
}

impl History {
    pub(crate) fn new(started: SystemTime) -> Self {
        let epoch_ms = started
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0);
        History {
            records: Vec::new(),
            by_node: HashMap::new(),
            epoch_ms,
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push(
        &mut self,
        node_id: &Arc<str>,
        node_type: &'static str,
        start: Duration,
        end: Duration,
        input: Option<serde_json::Value>,
        output: Option<Value>,
        error: Option<String>,
    ) -> &Record {
        let index = self.records.len();
        match self.by_node.get_mut(node_id) {
            Some(v) => v.push(index),
            None => {
                self.by_node.insert(node_id.clone(), vec![index]);
            }
        }
        self.records.push(Record {
            index,
            node_id: node_id.clone(),
            node_type,
            start_time: self.epoch_ms + start.as_secs_f64() * 1000.0,
            end_time: self.epoch_ms + end.as_secs_f64() * 1000.0,
            duration_ms: (end.saturating_sub(start)).as_secs_f64() * 1000.0,
            input,
            output,
            error,
        });
        &self.records[index]
    }

    pub fn records(&self) -> &[Record] {
        &self.records
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn last(&self) -> Option<&Record> {
        self.records.last()
    }

    /// Time travel: the context an expression saw right after record `index` finished,
    /// i.e. what the node at `index + 1` read. `None` when `index` is out of range.
    pub fn context_at(&self, index: usize) -> Option<Context> {
        let upto = self.records.get(..=index)?;
        let mut ctx = Context::new();
        for r in upto {
            ctx.set(&r.node_id, r.output.clone());
        }
        Some(ctx)
    }
}

impl HistoryView for History {
    fn len(&self) -> usize {
        self.records.len()
    }

    fn output(&self, index: usize) -> Option<&Value> {
        self.records.get(index)?.output.as_ref()
    }

    fn executions(&self, node_id: &str) -> &[usize] {
        self.by_node.get(node_id).map(Vec::as_slice).unwrap_or(&[])
    }
}

impl Serialize for History {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.records.serialize(s)
    }
}
