//! The `call` node: another tool of this config run as a sub-run, with its own context and
//! history (kept in the node's record), the same limits and control, and the nearer of the two
//! tools' deadlines.

use std::sync::Arc;
use std::time::Instant;

use mcpflow_expr::Value;
use serde_json::Value as Json;

use crate::error::{RunError, RunErrorKind};
use crate::history::History;
use crate::run::{Done, Executor, Failure, or_empty};

impl Executor<'_> {
    /// A `call` node: the sub-run's output goes on to `next`; its history is kept either way.
    pub(crate) async fn call_node(
        &self,
        id: &str,
        tool: &str,
        args: Json,
        next: usize,
    ) -> Result<Done, Failure> {
        let (out, sub) = self.sub_run(id, tool, args).await;
        let sub = Some(Arc::new(sub));
        match out {
            Ok(v) => {
                let mut done = Done::plain(Some(v), Some(next));
                done.sub_history = sub;
                Ok(done)
            }
            Err(err) => Err(Failure {
                err,
                children: Vec::new(),
                sub_history: sub,
            }),
        }
    }

    /// A `call` node: runs `tool` of this config with its own context and history.
    async fn sub_run(
        &self,
        id: &str,
        tool: &str,
        args: Json,
    ) -> (Result<Value, RunError>, History) {
        let Some(graph) = self.shared.graphs.get(tool) else {
            let e = RunError::new(
                RunErrorKind::Expression,
                Some(id),
                format!("no tool named `{tool}` to call"),
            );
            return (Err(e), History::default());
        };
        if self.depth + 1 > self.graph.max_depth {
            let e = RunError::new(
                RunErrorKind::Limit,
                Some(id),
                format!(
                    "execution limit reached: maxCallDepth is {}",
                    self.graph.max_depth
                ),
            );
            return (Err(e), History::default());
        }
        let own = graph.timeout.map(|t| Instant::now() + t);
        let deadline = match (self.deadline, own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let sub = Executor {
            shared: self.shared,
            graph,
            depth: self.depth + 1,
            deadline,
        };
        let (result, history) = Box::pin(sub.execute(args)).await;
        let result = result
            .and_then(|chain| chain.output(Some(id)))
            .map(or_empty);
        let result = result.map_err(|e| {
            let mut wrapped = e.clone();
            wrapped.node_id = Some(id.to_owned());
            wrapped.message = format!("call of `{tool}` failed: {e}");
            wrapped
        });
        (result, history)
    }
}
