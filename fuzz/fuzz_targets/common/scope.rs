//! The run an expression target evaluates in: a few node outputs of every JSON kind, in the
//! context and in the history, and limits short enough for a fuzzer.

use std::time::Duration;

use mcpflow_expr::{Context, Limits, MemoryHistory, Value};
use serde_json::json;

pub struct Run {
    pub context: Context,
    pub history: MemoryHistory,
    pub limits: Limits,
}

pub fn run() -> Run {
    let outputs = [
        (
            "entry",
            json!({"n": 3, "s": "15", "xs": [1, 2.5, -0.0, "a", null, true], "o": {"k": {"deep": [{}]}}}),
        ),
        (
            "list",
            json!([{"id": 1, "name": "a"}, {"id": 2, "name": "b\u{0}\u{1F600}"}]),
        ),
        ("count", json!(9007199254740993u64)),
        ("list", json!([])),
    ];
    let mut context = Context::new();
    let mut history = MemoryHistory::new();
    for (node, output) in outputs {
        let value = Value::from_json(output);
        history.push(node, Some(value.clone()));
        context.set(node, Some(value));
    }
    Run {
        context,
        history,
        // The production depth limit (what must hold the stack), a short clock.
        limits: Limits {
            timeout: Duration::from_millis(200),
            ..Limits::default()
        },
    }
}
