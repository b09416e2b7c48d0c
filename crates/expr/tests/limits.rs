//! Runaway expressions end with an error: never a stack overflow, never a hang.

mod common;

use std::time::Duration;

use mcpflow_expr::{Context, Jsonata, Limits, MEMORY_CODE, Metered, NoHistory, Scope};
use serde_json::json;

// The binary's arrangement: evaluations are charged to their memory budget by the allocator.
#[global_allocator]
static ALLOCATOR: Metered<std::alloc::System> = Metered::new(std::alloc::System);

fn eval(src: &str, limits: &Limits) -> Result<Option<serde_json::Value>, mcpflow_expr::ExprError> {
    let ctx = Context::new();
    let scope = Scope::new(&ctx, &NoHistory, limits);
    Jsonata::compile(src)?
        .evaluate(&scope)
        .map(|v| v.map(|v| v.to_json()))
}

#[test]
fn deep_recursion_is_an_error_even_on_a_small_stack() {
    // A thread with a small stack: the depth limit, not the stack, must stop the recursion.
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let src = "( $f := function($n) { $n = 0 ? 0 : 1 + $f($n - 1) }; $f(1000000) )";
            eval(src, &Limits::default())
        })
        .expect("thread starts");
    let err = handle.join().expect("no stack overflow").unwrap_err();
    assert_eq!(err.code.as_deref(), Some("D1011"), "{err}");
}

#[test]
fn reasonable_recursion_works_with_the_default_limits() {
    let src = "( $f := function($n) { $n = 0 ? 0 : 1 + $f($n - 1) }; $f(500) )";
    assert_eq!(eval(src, &Limits::default()).unwrap(), Some(json!(500)));
}

#[test]
fn infinite_loop_times_out() {
    let limits = Limits {
        timeout: Duration::from_millis(100),
        ..Limits::default()
    };
    // Tail calls do not grow the depth: only the clock stops this one.
    let err = eval("( $f := function() { $f() }; $f() )", &limits).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("D1012"), "{err}");
}

#[test]
fn smaller_depth_limit_is_honoured() {
    let limits = Limits {
        max_depth: 50,
        ..Limits::default()
    };
    let src = "( $f := function($n) { $n = 0 ? 0 : 1 + $f($n - 1) }; $f(200) )";
    assert_eq!(
        eval(src, &limits).unwrap_err().code.as_deref(),
        Some("D1011")
    );
}

#[test]
fn logic_vars_obey_the_limits() {
    let limits = Limits {
        timeout: Duration::from_millis(100),
        ..Limits::default()
    };
    let ctx = Context::new();
    let scope = Scope::new(&ctx, &NoHistory, &limits);
    let rule = mcpflow_expr::Logic::compile(&json!({"var": "( $f := function() { $f() }; $f() )"}))
        .unwrap();
    assert_eq!(
        rule.evaluate(&scope).unwrap_err().code.as_deref(),
        Some("D1012")
    );
}

#[test]
fn deeply_nested_rules_are_refused() {
    let mut rule = serde_json::Value::Bool(true);
    for _ in 0..1000 {
        let mut op = serde_json::Map::new();
        op.insert("!".to_owned(), serde_json::Value::Array(vec![rule]));
        rule = serde_json::Value::Object(op);
    }
    let err = mcpflow_expr::Logic::compile_classic(&rule).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("L0003"), "{err}");
}

/// Issue #21: each range is under jlens' cap, their product is not; the map held ten thousand
/// arrays of ten thousand items before flattening them (2.2 GB). Now the evaluation stops at
/// its memory budget.
#[test]
fn a_product_of_ranges_stops_at_the_memory_budget() {
    assert!(mcpflow_expr::memory_bound_active());
    let err = eval("($n := 10000; $count([1..$n].[1..$n]))", &Limits::default()).unwrap_err();
    assert_eq!(err.code.as_deref(), Some(MEMORY_CODE), "{err}");
    assert!(err.message.contains("256 MiB"), "{err}");
    let peak = common::peak_rss();
    assert!(
        peak < 1024 * 1024 * 1024,
        "peak resident set {} MiB",
        peak >> 20
    );
    // A smaller budget is honoured, and the next evaluation on this thread starts afresh.
    let small = Limits {
        max_memory_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    };
    let err = eval("$count([1..1000].[1..1000])", &small).unwrap_err();
    assert_eq!(err.code.as_deref(), Some(MEMORY_CODE), "{err}");
    assert_eq!(
        eval("$count([1..100000])", &small).unwrap(),
        Some(json!(100_000))
    );
}

/// One step past the budget is an error even when it is the evaluation's last: the value was
/// built (jlens stops at its next step, and there is none) but held more than the budget at
/// once. It used to be returned as a success; the `jsonata` fuzz target found it with
/// `[1..10000000]`, 10^7 items (JSONata's range cap) under a 64 MiB budget.
#[test]
fn a_last_step_past_the_budget_is_an_error() {
    assert!(mcpflow_expr::memory_bound_active());
    let small = Limits {
        max_memory_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    };
    let err = eval("[1..1000000]", &small).unwrap_err();
    assert_eq!(err.code.as_deref(), Some(MEMORY_CODE), "{err}");
    let err = eval("($n := 1000000; [1..$n])", &small).unwrap_err();
    assert_eq!(err.code.as_deref(), Some(MEMORY_CODE), "{err}");
}

#[test]
fn large_but_reasonable_values_fit_the_default_budget() {
    assert_eq!(
        eval("$count([1..1000000])", &Limits::default()).unwrap(),
        Some(json!(1_000_000))
    );
    assert_eq!(
        eval("$sum([1..3000])", &Limits::default()).unwrap(),
        Some(json!(1500 * 3001))
    );
}
