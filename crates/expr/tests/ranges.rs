//! Ranges are sized before jlens builds them (issue #21): one past the step budget leaves the
//! quick evaluation, one past the memory budget is refused unbuilt, and everything else gives
//! what jlens gives for the expression as written, errors and their positions included.

mod common;

use std::time::Duration;

use mcpflow_expr::{Context, ExprError, Jsonata, Limits, MEMORY_CODE, Metered, NoHistory, Scope};
use serde_json::{Map, Value as Json, json};

#[global_allocator]
static ALLOCATOR: Metered<std::alloc::System> = Metered::new(std::alloc::System);

fn eval(src: &str, n: Json, limits: &Limits) -> Result<Option<Json>, ExprError> {
    let mut bindings = Map::new();
    bindings.insert("n".into(), n);
    Jsonata::compile(src)?.evaluate_json(None, &bindings, limits)
}

#[test]
fn a_range_past_the_memory_budget_is_refused_before_it_is_built() {
    let limits = Limits {
        max_memory_bytes: 64 * 1024 * 1024,
        ..Limits::default()
    };
    let before = common::peak_rss();
    for src in [
        "[1..$n]",
        "$count([1..$n])",
        "[0, 1..$n, 5]",
        "$map([$n], function($m) { $count([1..$m]) })",
    ] {
        let err = eval(src, json!(10_000_000), &limits).unwrap_err();
        assert_eq!(err.code.as_deref(), Some(MEMORY_CODE), "{src}: {err}");
        assert!(
            err.message
                .contains("a range of 10000000 items needs about 229 MiB"),
            "{src}: {err}"
        );
    }
    // Built, 10^7 items of 24 bytes would have taken 229 MiB before the budget saw them.
    let grown = common::peak_rss().saturating_sub(before);
    assert!(
        grown < 32 * 1024 * 1024,
        "the peak grew by {} MiB",
        grown >> 20
    );
    // What fits is built.
    assert_eq!(
        eval("$count([1..$n])", json!(100_000), &limits).unwrap(),
        Some(json!(100_000))
    );
}

#[test]
fn a_range_counts_its_items_against_the_step_budget() {
    // The engine's quick evaluation: a range longer than the steps it has is over budget, so
    // the evaluation runs again off the async runtime instead of building it in place.
    let quick = Limits {
        max_steps: Some(50_000),
        ..Limits::default()
    };
    let err = eval("$count([1..$n])", json!(100_000), &quick).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("U1006"), "{err}");
    assert_eq!(
        eval("$count([1..$n])", json!(1_000), &quick).unwrap(),
        Some(json!(1_000))
    );
    // Without a step budget (the evaluation off the runtime) the same range is built.
    assert_eq!(
        eval("$count([1..$n])", json!(100_000), &Limits::default()).unwrap(),
        Some(json!(100_000))
    );
}

/// Guarded, an expression gives what jlens gives for it as written: values, undefined,
/// errors, their codes and their positions.
#[test]
fn guarded_ranges_give_what_jlens_gives() {
    let cases: &[(&str, Json)] = &[
        ("[1..$n]", json!(3)),
        ("[$n..5]", json!(2)),
        ("[$n..1]", json!(2)),
        ("[1..$n, 7, $n..$n+2]", json!(3)),
        ("[[1..$n], [$n..4]]", json!(2)),
        ("[1..[1..$n][-1]]", json!(4)),
        ("[[1..$n][1]..[2..($n * 2)][-1]]", json!(3)),
        ("$map([1..$n], function($v) { [$v..$n] })", json!(3)),
        ("{'a': [1..$n]}.a[$ > 1]", json!(4)),
        ("[1..$n]", json!(null)),
        ("[1..$missing]", json!(1)),
        ("[$missing..$n]", json!(1)),
        ("[1..$n]", json!(2.5)),
        ("[$n..3]", json!("a")),
        ("[  1 ..  $n  ]", json!("x")),
        ("[1..$n]", json!(10_000_001)),
        ("[-5..$n]", json!(-3)),
        ("(\n  $x := 'é';\n  [1..$n] )", json!(true)),
        ("[1..$n].$string()", json!(2)),
        ("[1..10000]~>$count()", json!(0)),
        ("[$sum..$n]", json!(3)),
        ("[1..$sum]", json!(3)),
        ("[1..function() { 2 }]", json!(3)),
        ("[1..$n]", json!([3])),
        ("[1..$n]", json!({"a": 1})),
        ("[$n..3]", json!(-0.0)),
    ];
    let limits = Limits {
        timeout: Duration::from_secs(10),
        ..Limits::default()
    };
    for (src, n) in cases {
        let ours = eval(src, n.clone(), &limits);
        let theirs = jlens_core::Expression::compile(src).and_then(|e| {
            e.evaluate_with(
                None,
                &jlens_core::Bindings::new().var("n", n.clone()),
                &jlens_core::Options::new(),
            )
        });
        match (ours, theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{src} with n = {n}"),
            (Err(a), Err(b)) => {
                assert_eq!(a.code.as_deref(), Some(b.code()), "{src} with n = {n}");
                assert_eq!(a.position, b.position(), "{src} with n = {n}: {a}");
                assert_eq!(a.message, b.message(), "{src} with n = {n}");
            }
            (a, b) => panic!("{src} with n = {n}: ours {a:?}, jlens {b:?}"),
        }
    }
}

#[test]
fn ranges_in_a_scope_are_guarded_too() {
    // The engine's path: a context, the history functions, a hoisted history call.
    let ctx = Context::new();
    let limits = Limits {
        max_memory_bytes: 16 * 1024 * 1024,
        ..Limits::default()
    };
    let scope = Scope::new(&ctx, &NoHistory, &limits);
    for src in [
        "[1..10000000]",
        "[$executionCount('x')..9999999]",
        "($n := 10000000; [1..$n])",
    ] {
        let err = Jsonata::compile(src)
            .and_then(|e| e.evaluate(&scope))
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some(MEMORY_CODE), "{src}: {err}");
        assert!(err.message.contains("a range of"), "{src}: {err}");
    }
    // A type error inside a hoisted expression is reported where it is written.
    let err = Jsonata::compile("[$executionCount('x')..'z']")
        .and_then(|e| e.evaluate(&scope))
        .unwrap_err();
    assert_eq!(err.code.as_deref(), Some("T2004"), "{err}");
    let theirs = jlens_core::Expression::compile("[0..'z']")
        .and_then(|e| e.evaluate(None, &jlens_core::Bindings::new()))
        .unwrap_err();
    assert_eq!(
        err.position.map(|p| p - "$executionCount('x')".len() + 1),
        theirs.position(),
        "{err}"
    );
}
