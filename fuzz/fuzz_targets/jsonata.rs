//! JSONata as a `transform` evaluates it: compiled once, run against a context and a history
//! with the production depth limit. Every evaluation must end (the time and depth limits) and
//! never overflow the stack. The engine's shortcuts (a plain path looked up directly, history
//! calls hoisted out) must agree with jlens evaluating the expression as written.
#![no_main]

#[path = "common/scope.rs"]
mod scope;

use libfuzzer_sys::fuzz_target;
use mcpflow_expr::{ExprError, Jsonata, MemoryHistory, Scope};
use serde_json::Map;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(expr) = Jsonata::compile(source) else {
        return;
    };
    let run = scope::run();
    let first = expr.evaluate(&Scope::new(&run.context, &run.history, &run.limits));
    // Stopped by its clock or its memory budget: evaluating it twice more only spends the
    // 10 s a libFuzzer input may take.
    if first
        .as_ref()
        .is_err_and(|e| timed_out(e) || out_of_memory(e))
    {
        return;
    }

    // Without a history both ways see the same data; clocks and randomness differ by design.
    if ["$random", "$now", "$millis"]
        .iter()
        .any(|f| source.contains(f))
    {
        return;
    }
    let empty = MemoryHistory::new();
    let planned = expr
        .evaluate(&Scope::new(&run.context, &empty, &run.limits))
        .map(|v| v.map(|v| v.to_json()));
    let plain = expr.evaluate_json(Some(&run.context.to_json()), &Map::new(), &run.limits);
    match (&planned, &plain) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{source:?}: planned and plain evaluation differ"),
        (Err(e), _) | (_, Err(e)) if timed_out(e) || out_of_memory(e) => {}
        (Ok(_), Err(_)) | (Err(_), Ok(_)) => {
            panic!("{source:?}: planned {planned:?} but plain {plain:?}")
        }
        (Err(_), Err(_)) => {}
    }
});

fn timed_out(e: &ExprError) -> bool {
    e.code.as_deref() == Some("D1012")
}

fn out_of_memory(e: &ExprError) -> bool {
    e.code.as_deref() == Some(mcpflow_expr::MEMORY_CODE)
}
