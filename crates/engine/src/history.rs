//! [`History`]: the ordered [`Record`]s of a run, indexed by node for the history functions,
//! and time travel over them ([`History::context_at`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcpflow_expr::{Context, HistoryView, NodeIds, Value};
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
    /// What an mcp or call node sent (its rendered arguments), or what a script node with an
    /// `input` expression was called with; absent for other nodes, whose input is the
    /// context, recoverable with [`History::context_at`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    /// `None` is JSONata's undefined (also for a failed node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Attempts made, when the node has `retry` or needed more than one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// The `parallel` branch or `foreach` item this record ran in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<Parent>,
    /// A `call` node's sub-run: the called tool's own records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_history: Option<Arc<History>>,
    /// What a script node wrote with `console.*` (`warn: …` for levels other than `log`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logs: Option<Vec<String>>,
}

/// Where a record of concurrent work belongs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Parent {
    /// Id of the `parallel` or `foreach` node.
    pub node: Arc<str>,
    /// Index of that node's own record in the same history (it follows its children).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// The branch name, inside a `parallel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<Arc<str>>,
    /// The item's position in the array, inside a `foreach`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<usize>,
}

/// The ordered records of a run, indexed by node for the history functions.
#[derive(Debug, Clone, Default)]
pub struct History {
    records: Vec<Record>,
    by_node: HashMap<Arc<str>, Vec<usize>, NodeIds>,
    /// Wall-clock time of the run's start, to turn monotonic offsets into timestamps.
    epoch_ms: f64,
    /// Records before this one live elsewhere: in a branch, the parent's history at fork time.
    /// Indices (and `by_node`) count them, so a branch's records keep the run's numbering.
    offset: usize,
}

impl History {
    pub(crate) fn new(started: SystemTime) -> Self {
        let epoch_ms = started
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0);
        History {
            records: Vec::new(),
            by_node: HashMap::default(),
            epoch_ms,
            offset: 0,
        }
    }

    /// An empty history whose first record gets index `offset` (a branch's own records).
    pub(crate) fn continuing(&self, offset: usize) -> History {
        History {
            records: Vec::new(),
            by_node: HashMap::default(),
            epoch_ms: self.epoch_ms,
            offset,
        }
    }

    /// The index the next record gets.
    pub(crate) fn next_index(&self) -> usize {
        self.offset + self.records.len()
    }

    /// Every record, moved out.
    pub(crate) fn into_records(self) -> Vec<Record> {
        self.records
    }

    /// A record of `node_id` that ran from `start` to `end` (offsets from the run's start),
    /// with nothing else filled in yet; [`History::append`] gives it its index.
    pub(crate) fn record(
        &self,
        node_id: &Arc<str>,
        node_type: &'static str,
        start: Duration,
        end: Duration,
    ) -> Record {
        Record {
            index: 0,
            node_id: node_id.clone(),
            node_type,
            start_time: self.epoch_ms + start.as_secs_f64() * 1000.0,
            end_time: self.epoch_ms + end.as_secs_f64() * 1000.0,
            duration_ms: (end.saturating_sub(start)).as_secs_f64() * 1000.0,
            input: None,
            output: None,
            error: None,
            attempts: None,
            parent: None,
            sub_history: None,
            logs: None,
        }
    }

    /// Appends a record made elsewhere (a branch's), giving it the next index.
    pub(crate) fn append(&mut self, mut record: Record) {
        let index = self.next_index();
        record.index = index;
        // A node seen before (every node of a loop after its first round) needs no key.
        match self.by_node.get_mut(&*record.node_id) {
            Some(runs) => runs.push(index),
            None => {
                self.by_node.insert(record.node_id.clone(), vec![index]);
            }
        }
        self.records.push(record);
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
