//! What every built-in tool answers: its result as structured content (and the same JSON as
//! text, for clients that read only text), or a tool-level error that says what is wrong and
//! how to fix it; both carry the time the answer took in `_meta`.

use std::time::Instant;

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Map, Value, json};

/// The `_meta` key of an answer's duration in milliseconds.
pub const TOOK_MS: &str = "mcpflow/tookMs";

/// A finished answer, before its duration is stamped on it.
pub(crate) enum Answer {
    /// The tool did its job; an object, shown whole.
    Ok(Value),
    /// The call was malformed or could not be served: a message for the model.
    Refused(String),
    /// The tool did its job and what it checked or ran failed: structured, marked `isError`.
    Failed(Value),
}

impl Answer {
    pub(crate) fn into_result(self, started: Instant) -> CallToolResult {
        let took = started.elapsed().as_secs_f64() * 1000.0;
        let result = match self {
            Answer::Ok(value) => CallToolResult::structured(value),
            Answer::Failed(value) => CallToolResult::structured_error(value),
            Answer::Refused(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        let mut meta = Map::new();
        // Rounded to microseconds: more digits would be noise.
        meta.insert(TOOK_MS.into(), json!((took * 1000.0).round() / 1000.0));
        result.with_meta(Some(MetaObject(meta)))
    }
}

impl From<crate::args::Malformed> for Answer {
    fn from(m: crate::args::Malformed) -> Self {
        Answer::Refused(m.0)
    }
}
