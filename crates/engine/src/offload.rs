//! Heavy expressions off the request path.
//!
//! JSONata evaluates synchronously, and `serve` over stdio runs every request on one thread:
//! an expression that runs for its whole time limit (5 s) used to hold every other call for
//! that long. So every evaluation of a node (transform, switch, mcp/call arguments, foreach
//! items) first runs in place within a small step budget ([`QUICK_STEPS`]), which the common
//! cheap expression never reaches and which costs it nothing. One that needs more stops there
//! (JSONata's `U1006`) and is evaluated again, from the start, on a blocking thread with the
//! full limits (time, depth, memory), while its run's task waits and the runtime serves other
//! requests. Evaluation is pure, so the second evaluation gives what the first would have
//! (`$now()` aside, which reads the clock again).
//!
//! At most [`HEAVY_AT_ONCE`] such evaluations run at once, so that their memory budgets
//! (`Limits::max_memory_bytes` each) add up to a bounded amount; others wait their turn.

use mcpflow_expr::{ExprError, Limits, MemoryHistory, Scope};
use tokio::sync::Semaphore;

use crate::frame::Frame;
use crate::run::Executor;

/// Steps (nodes evaluated, functions called) of an evaluation in place. A node's expression
/// takes tens to a few thousand; fifty thousand is well under a millisecond.
pub(crate) const QUICK_STEPS: u64 = 50_000;

/// Heavy evaluations running at once, process-wide.
pub(crate) const HEAVY_AT_ONCE: usize = 2;

static HEAVY: Semaphore = Semaphore::const_new(HEAVY_AT_ONCE);

/// `full` with the quick step budget.
pub(crate) fn quick(full: Limits) -> Limits {
    Limits {
        max_steps: Some(QUICK_STEPS),
        ..full
    }
}

/// Whether an evaluation in place stopped at the quick budget.
fn over_budget(e: &ExprError) -> bool {
    e.code.as_deref() == Some("U1006")
}

impl Executor<'_> {
    /// Evaluates `quick` in place within the step budget; past it, evaluates what `heavy`
    /// makes (an owned copy of the same evaluation) on a blocking thread with the full limits.
    pub(crate) async fn evaluate<T, G>(
        &self,
        frame: &Frame<'_>,
        quick: impl FnOnce(&Scope<'_>) -> Result<T, ExprError>,
        heavy: impl FnOnce() -> G,
    ) -> Result<T, ExprError>
    where
        G: FnOnce(&Scope<'_>) -> Result<T, ExprError> + Send + 'static,
        T: Send + 'static,
    {
        // Bound first: the scope borrows the frame as a view that is not `Sync`, and must be
        // gone before the await below.
        let first = quick(&self.scope(frame));
        match first {
            Err(e) if over_budget(&e) => Box::pin(self.off_path(frame, heavy())).await,
            done => done,
        }
    }

    /// `f` on a blocking thread against a copy of the frame's context (one shared value per
    /// node) and history (one shared output per record): paid only by heavy evaluations.
    async fn off_path<T, G>(&self, frame: &Frame<'_>, f: G) -> Result<T, ExprError>
    where
        G: FnOnce(&Scope<'_>) -> Result<T, ExprError> + Send + 'static,
        T: Send + 'static,
    {
        let context = frame.context.clone();
        let history = self.history_copy(frame);
        let limits = *self.shared.limits;
        let caller = self.shared.caller.shared_json();
        let _slot = HEAVY.acquire().await.map_err(|_| {
            ExprError::new(
                "E0001",
                "the expression could not be evaluated: shutting down",
            )
        })?;
        tracing::debug!(graph = %self.graph.name(), "evaluating a heavy expression off the request path");
        tokio::task::spawn_blocking(move || {
            f(&Scope::new(&context, &history, &limits).with_caller(Some(&caller)))
        })
        .await
        .unwrap_or_else(|e| {
            Err(ExprError::new(
                "E0001",
                format!("the expression's evaluation stopped unexpectedly: {e}"),
            ))
        })
    }

    /// The frame's history as the history functions see it, owned.
    fn history_copy(&self, frame: &Frame<'_>) -> MemoryHistory {
        use mcpflow_expr::HistoryView;
        let len = frame.len();
        let mut node_of: Vec<&str> = vec![""; len];
        for step in &self.graph.nodes {
            for &i in frame.executions(&step.id) {
                if let Some(slot) = node_of.get_mut(i) {
                    *slot = &*step.id;
                }
            }
        }
        let mut copy = MemoryHistory::new();
        for (i, node) in node_of.into_iter().enumerate() {
            copy.push(node, frame.output(i).cloned());
        }
        copy
    }
}
