//! The run an expression target evaluates in: a few node outputs of every JSON kind, in the
//! context and in the history, and limits short enough for a fuzzer.
//!
//! The binary's arrangement too: the allocator charges each evaluation's allocations to its
//! memory budget ([`Metered`]), here a smaller one. Without it a single step that builds a
//! large value (`[1..10000000]`, a range at JSONata's own 10^7 cap, a seed from the
//! conformance suite) runs to the end and the harness then converts and compares the result,
//! 47 s under AddressSanitizer: a libFuzzer timeout that the server, which installs
//! [`Metered`], does not have.

use std::time::Duration;

use mcpflow_expr::{Context, Limits, MemoryHistory, Metered, Value};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: Metered<std::alloc::System> = Metered::new(std::alloc::System);

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
        // The production depth limit (what must hold the stack), a short clock, 64 MiB.
        limits: Limits {
            timeout: Duration::from_millis(200),
            max_memory_bytes: 64 << 20,
            ..Limits::default()
        },
    }
}
