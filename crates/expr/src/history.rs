//! mcpGraph's history functions (`$previousNode`, `$executionCount`, `$nodeExecution`,
//! `$nodeExecutions`), bound once for every evaluation.
//!
//! jlens-core wants host functions that are `'static` closures, but the history they read is
//! borrowed from the running engine for one evaluation only. Copying it per evaluation would
//! make a node's cost grow with the history, so the borrowed view is published in a
//! thread-local for exactly the duration of [`with_history`], and the (static) functions read
//! it there. Evaluation and host calls run synchronously on the calling thread, so a function
//! never sees a view other than its own evaluation's; called outside one it reports an error.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;

use jlens_core::{Bindings, HostFunction};
use serde_json::Value as Json;

use crate::Value;

/// What the history functions read; the engine's history implements it.
pub trait HistoryView {
    /// Records so far (mcpGraph's `cur` when a node starts).
    fn len(&self) -> usize;
    /// Output of record `index`; `None` when undefined or out of range.
    fn output(&self, index: usize) -> Option<&Value>;
    /// Indices of the records of `node_id`, oldest first.
    fn executions(&self, node_id: &str) -> &[usize];

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A history with no records: for evaluations outside a run (CLI, tests, validation).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHistory;

impl HistoryView for NoHistory {
    fn len(&self) -> usize {
        0
    }
    fn output(&self, _index: usize) -> Option<&Value> {
        None
    }
    fn executions(&self, _node_id: &str) -> &[usize] {
        &[]
    }
}

type Erased = NonNull<dyn HistoryView + 'static>;

thread_local! {
    static ACTIVE: Cell<Option<Erased>> = const { Cell::new(None) };
}

/// Restores the previously published view, also when `f` unwinds.
struct Restore<'h> {
    previous: Option<Erased>,
    _borrow: PhantomData<&'h ()>,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(self.previous));
    }
}

/// Runs `f` with `history` readable by the history functions on this thread.
pub(crate) fn with_history<R>(history: &dyn HistoryView, f: impl FnOnce() -> R) -> R {
    let ptr: NonNull<dyn HistoryView + '_> = NonNull::from(history);
    // SAFETY: only the trait object's lifetime bound is changed (same fat-pointer layout). The
    // pointer is published for the duration of this call, during which `history` is borrowed,
    // and is withdrawn by `Restore` before the borrow ends, even on unwind.
    let erased: Erased =
        unsafe { std::mem::transmute::<NonNull<dyn HistoryView + '_>, Erased>(ptr) };
    let _restore = Restore {
        previous: ACTIVE.with(|a| a.replace(Some(erased))),
        _borrow: PhantomData::<&()>,
    };
    f()
}

fn read<R>(f: impl FnOnce(&dyn HistoryView) -> R) -> jlens_core::Result<R> {
    match ACTIVE.with(Cell::get) {
        // SAFETY: a published pointer is valid until `with_history` returns (see there), and
        // host functions run inside the evaluation that `with_history` wraps.
        Some(ptr) => Ok(f(unsafe { ptr.as_ref() })),
        None => Err(jlens_core::Error::new("H0001").with(
            "message",
            "the history functions are only available while a node is evaluated",
        )),
    }
}

fn output_json(h: &dyn HistoryView, index: usize) -> Json {
    h.output(index).map_or(Json::Null, Value::to_json)
}

/// An argument as an integer, when it is a number with no fractional part.
fn integer(arg: Option<&Option<Json>>) -> Option<i64> {
    let n = arg?.as_ref()?.as_f64()?;
    (n.fract() == 0.0 && n.abs() < 9.0e15).then_some(n as i64)
}

fn node_id(arg: Option<&Option<Json>>) -> Option<&str> {
    arg?.as_ref()?.as_str()
}

/// `$previousNode(n = 1)`: the output of record `cur - n`, null when there is no such
/// record (undefined when the record's output is).
pub(crate) fn previous_node(h: &dyn HistoryView, n: Option<i64>) -> Option<Json> {
    let cur = h.len() as i64;
    match n {
        Some(n) if n >= 1 && n <= cur => h.output((cur - n) as usize).map(Value::to_json),
        _ => Some(Json::Null),
    }
}

/// `$executionCount(id)`: how many records that node has so far.
pub(crate) fn execution_count(h: &dyn HistoryView, id: Option<&str>) -> Json {
    Json::from(id.map_or(0, |id| h.executions(id).len()))
}

/// `$nodeExecution(id, i)`: the output of its `i`-th run, negative from the end, null out of
/// range (undefined when that run's output is).
pub(crate) fn node_execution(
    h: &dyn HistoryView,
    id: Option<&str>,
    i: Option<i64>,
) -> Option<Json> {
    let (Some(id), Some(i)) = (id, i) else {
        return Some(Json::Null);
    };
    let runs = h.executions(id);
    let pos = if i < 0 { runs.len() as i64 + i } else { i };
    match usize::try_from(pos).ok().and_then(|p| runs.get(p)) {
        Some(&record) => h.output(record).map(Value::to_json),
        None => Some(Json::Null),
    }
}

/// `$nodeExecutions(id)`: the outputs of all its runs, `[]` when none.
pub(crate) fn node_executions(h: &dyn HistoryView, id: Option<&str>) -> Json {
    let runs = id.map_or(&[][..], |id| h.executions(id));
    Json::Array(runs.iter().map(|&r| output_json(h, r)).collect())
}

/// The history functions: name and signature (mcpGraph's, so that a wrong argument fails
/// with the same `T0410`).
pub(crate) const SIGNATURES: [(&str, &str); 4] = [
    ("previousNode", "<n?:o>"),
    ("executionCount", "<s:n>"),
    ("nodeExecution", "<s-n:o>"),
    ("nodeExecutions", "<s:a>"),
];

/// Calls history function `name` with evaluated arguments (as the host functions receive
/// them, and as a call hoisted out of an expression passes its literal arguments).
pub(crate) fn call(name: &str, args: &[Option<Json>], h: &dyn HistoryView) -> Option<Json> {
    let id = || node_id(args.first());
    match name {
        "previousNode" => {
            let n = match args.first() {
                None | Some(None) => Some(1),
                arg => integer(arg),
            };
            previous_node(h, n)
        }
        "executionCount" => Some(execution_count(h, id())),
        "nodeExecution" => node_execution(h, id(), integer(args.get(1))),
        "nodeExecutions" => Some(node_executions(h, id())),
        _ => None,
    }
}

/// `bindings` with the history functions added.
pub(crate) fn bind(bindings: Bindings) -> Bindings {
    SIGNATURES.iter().fold(bindings, |b, &(name, signature)| {
        let function =
            HostFunction::with_signature(signature, move |args, _| read(|h| call(name, args, h)));
        match function {
            Ok(f) => b.function(name, f.without_input()),
            // The signatures are constants that parse; a failure is a bug caught by tests.
            Err(e) => panic!("history function signature {signature}: {e}"),
        }
    })
}

/// A history kept in memory: what tests, benchmarks and one-off evaluations use. The engine
/// has its own.
#[derive(Clone, Debug, Default)]
pub struct MemoryHistory {
    outputs: Vec<Option<Value>>,
    by_node: std::collections::HashMap<String, Vec<usize>, crate::NodeIds>,
}

impl MemoryHistory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a record of `node_id` with its output (`None`: undefined).
    pub fn push(&mut self, node_id: &str, output: Option<Value>) {
        let index = self.outputs.len();
        self.outputs.push(output);
        match self.by_node.get_mut(node_id) {
            Some(runs) => runs.push(index),
            None => {
                self.by_node.insert(node_id.to_owned(), vec![index]);
            }
        }
    }
}

impl HistoryView for MemoryHistory {
    fn len(&self) -> usize {
        self.outputs.len()
    }
    fn output(&self, index: usize) -> Option<&Value> {
        self.outputs.get(index)?.as_ref()
    }
    fn executions(&self, node_id: &str) -> &[usize] {
        self.by_node.get(node_id).map_or(&[], Vec::as_slice)
    }
}
