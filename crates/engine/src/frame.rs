//! [`Frame`]: where one line of execution keeps its records and context, and what a branch
//! sees of the history before it forked.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use mcpflow_expr::{Context, HistoryView, NodeIds, Value};

use crate::history::{History, Parent, Record};

/// One line of execution: the main flow, a `parallel` branch or a `foreach` item.
pub(crate) struct Frame<'p> {
    /// The main flow's records; in a branch, only the branch's own (numbered after the base).
    pub history: History,
    pub context: Context,
    /// Set in a branch or item; stamped on the records made there.
    pub parent: Option<Parent>,
    /// In a branch or item: the records before the fork, read through the parent's frame.
    base: Option<Base<'p>>,
}

/// What a branch sees of the history before it forked, without copying it.
struct Base<'p> {
    view: &'p (dyn HistoryView + Sync),
    len: usize,
    /// For each node the branch has run: the base's executions of it, then the branch's own.
    executions: HashMap<Arc<str>, Vec<usize>, NodeIds>,
}

impl Frame<'static> {
    pub fn new() -> Self {
        Frame {
            history: History::new(SystemTime::now()),
            context: Context::new(),
            parent: None,
            base: None,
        }
    }
}

impl<'p> Frame<'p> {
    /// A branch's or item's view: the parent's history and context at fork time. Costs a copy
    /// of the context (one entry per node id), not of the history.
    pub(crate) fn fork(&self, parent: Parent) -> Frame<'_> {
        let len = self.len();
        Frame {
            history: self.history.continuing(len),
            context: self.context.clone(),
            parent: Some(parent),
            base: Some(Base {
                view: self,
                len,
                executions: HashMap::default(),
            }),
        }
    }

    pub(crate) fn is_main(&self) -> bool {
        self.parent.is_none()
    }

    pub(crate) fn len(&self) -> usize {
        self.history.next_index()
    }

    pub(crate) fn last_output(&self) -> Option<Value> {
        match (self.history.last(), &self.base) {
            (Some(r), _) => r.output.clone(),
            (None, Some(b)) => b.len.checked_sub(1).and_then(|i| b.view.output(i)).cloned(),
            (None, None) => None,
        }
    }

    fn note(&mut self, node_id: &Arc<str>, index: usize) {
        if let Some(b) = &mut self.base {
            let view = b.view;
            b.executions
                .entry(node_id.clone())
                .or_insert_with(|| view.executions(node_id).to_vec())
                .push(index);
        }
    }

    pub(crate) fn append(&mut self, record: Record) {
        self.note(&record.node_id, self.len());
        self.history.append(record);
    }
}

impl HistoryView for Frame<'_> {
    fn len(&self) -> usize {
        self.history.next_index()
    }

    fn output(&self, index: usize) -> Option<&Value> {
        let offset = match &self.base {
            Some(b) if index < b.len => return b.view.output(index),
            Some(b) => b.len,
            None => 0,
        };
        self.history.records().get(index - offset)?.output.as_ref()
    }

    fn executions(&self, node_id: &str) -> &[usize] {
        match &self.base {
            None => self.history.executions(node_id),
            Some(b) => match b.executions.get(node_id) {
                Some(v) => v,
                None => b.view.executions(node_id),
            },
        }
    }
}
