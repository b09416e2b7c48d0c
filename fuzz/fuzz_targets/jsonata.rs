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
    if huge_range(source) {
        return;
    }
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

    // Without a history both ways see the same data; clocks and randomness (`$shuffle` too)
    // differ by design. `$toMillis` with a picture fills the parts it lacks from the clock
    // (`$toMillis("209802", "[d0[0]")` gave two results a millisecond apart).
    if ["$random", "$shuffle", "$now", "$millis", "$toMillis"]
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

/// A range that may hold 10^5 items or more (`..` and a number literal of six digits, or with
/// an exponent of 5 or more). jlens builds a range in one step, which the clock does not
/// interrupt; mcpflow-expr refuses one past the memory budget before it is built
/// (`jsonata::range`), but one under this harness's 64 MiB (up to ~2.8 million items) still
/// takes seconds under AddressSanitizer on a loaded machine, which libFuzzer reports as a hang.
fn huge_range(source: &str) -> bool {
    if !source.contains("..") {
        return false;
    }
    let bytes = source.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i - start >= 6 {
            return true;
        }
        // An exponent: `1e7`, `1E+05`.
        if i < bytes.len() && bytes[i].eq_ignore_ascii_case(&b'e') {
            let mut j = i + 1;
            if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                j += 1;
            }
            let digits = j;
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            let exponent = &source[digits..j];
            let negative = bytes[digits - 1] == b'-';
            // Too many digits for a u32 is huge too.
            if !negative
                && exponent
                    .parse::<u32>()
                    .map_or(!exponent.is_empty(), |e| e >= 5)
            {
                return true;
            }
            i = j;
        }
    }
    false
}
