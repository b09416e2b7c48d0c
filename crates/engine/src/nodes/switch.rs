//! The `switch` node: the first condition whose JSON Logic rule is truthy chooses the next
//! node, else the default. Its output is the id of the node it chose, which is how a resumed
//! run knows where a switch went.

use mcpflow_expr::{ExprError, Logic, Scope, truthy};

use crate::error::RunError;
use crate::frame::Frame;
use crate::run::{Done, Executor};

impl Executor<'_> {
    pub(crate) async fn switch(
        &self,
        frame: &Frame<'_>,
        id: &str,
        conditions: &[(Logic, usize)],
        default: usize,
    ) -> Result<Done, RunError> {
        let to = self
            .evaluate(
                frame,
                |scope| route(conditions, default, scope),
                || {
                    let conditions = conditions.to_vec();
                    move |scope: &Scope<'_>| route(&conditions, default, scope)
                },
            )
            .await
            .map_err(|e| RunError::expression(id, e))?;
        // The target's id, made when the graph was compiled: no allocation per switch.
        let routed = self.graph.nodes[to].routed.clone();
        Ok(Done::plain(Some(routed), Some(to)))
    }
}

/// The first condition whose rule is truthy, else the default.
fn route(
    conditions: &[(Logic, usize)],
    default: usize,
    scope: &Scope<'_>,
) -> Result<usize, ExprError> {
    for (logic, next) in conditions {
        if truthy(&logic.evaluate(scope)?) {
            return Ok(*next);
        }
    }
    Ok(default)
}
