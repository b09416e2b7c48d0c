//! The `transform` node (a JSONata expression over the context) and the `exit` node that
//! ends a run with the last output. Both are pure: on resume they are computed again.

use mcpflow_expr::{Jsonata, Scope, Value};
use serde_json::Value as Json;

use crate::error::RunError;
use crate::frame::Frame;
use crate::run::{Done, Executor, empty_object};

impl Executor<'_> {
    pub(crate) async fn transform(
        &self,
        frame: &Frame<'_>,
        id: &str,
        expr: &Jsonata,
        next: usize,
    ) -> Result<Done, RunError> {
        self.evaluate(
            frame,
            |scope| expr.evaluate(scope),
            || {
                let expr = expr.clone();
                move |scope: &Scope<'_>| expr.evaluate(scope)
            },
        )
        .await
        .map(|v| Done::plain(v, Some(next)))
        .map_err(|e| RunError::expression(id, e))
    }
}

/// The exit: the last output, or `{}` when it is falsy (as mcpGraph does).
pub(crate) fn exit(frame: &Frame<'_>) -> Done {
    let out = match frame.last_output() {
        Some(v) if !js_falsy(&v) => v,
        _ => empty_object(),
    };
    Done::plain(Some(out), None)
}

/// JavaScript's falsy values, which mcpGraph's exit turns into `{}`. Unlike JSON Logic's
/// truthiness, an empty array is not falsy here.
fn js_falsy(v: &Value) -> bool {
    match v.to_json() {
        Json::Null | Json::Bool(false) => true,
        Json::Number(n) => n.as_f64() == Some(0.0),
        Json::String(s) => s.is_empty(),
        _ => false,
    }
}
