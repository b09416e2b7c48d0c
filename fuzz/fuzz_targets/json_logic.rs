//! A `switch` condition: JSON Logic (JavaScript's loose semantics, `var` read through JSONata),
//! compiled from any JSON and evaluated against a run, and in its classic form (`var` as a dotted
//! path) against plain data. Errors are fine; a panic, a hang or a stack overflow is not.
#![no_main]

#[path = "common/scope.rs"]
mod scope;

use libfuzzer_sys::fuzz_target;
use mcpflow_expr::{Logic, Scope, truthy};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(rule) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let run = scope::run();
    if let Ok(logic) = Logic::compile(&rule)
        && let Ok(v) = logic.evaluate(&Scope::new(&run.context, &run.history, &run.limits))
    {
        truthy(&v);
    }
    if let Ok(logic) = Logic::compile_classic(&rule) {
        let _ = logic.evaluate_json(&run.context.to_json());
    }
});
