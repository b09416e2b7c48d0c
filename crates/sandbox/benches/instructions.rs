//! Trivial hook calls back to back on one worker, for callgrind: `bench/sandbox.sh` runs this
//! at two call counts and divides the difference in instructions by the difference in calls,
//! which leaves out the start (threads, the first isolate, compiling the script).
//!
//! `instructions [CALLS]` (100 by default); arguments starting with `-` (cargo bench's) are
//! ignored.

use mcpflow_sandbox::{Sandbox, SandboxOptions, Script};
use serde_json::json;

fn main() {
    let calls: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map_or(100, |a| a.parse().expect("CALLS is a number"));
    let sandbox = Sandbox::new(SandboxOptions {
        workers: 1,
        ..SandboxOptions::default()
    })
    .expect("sandbox");
    let hook =
        Script::compile(&sandbox, "bench.js", "function (ctx) { return ctx; }").expect("compiles");
    let input = json!({
        "request": {"method": "tools/call", "params": {"name": "search", "arguments": {"q": "rust", "limit": 10}}},
        "metadata": {"clientId": "bench", "serverName": "docs", "workflowId": "w1", "nodeId": "pre"}
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio");
    for _ in 0..calls {
        rt.block_on(hook.call(&input)).expect("call");
    }
}
