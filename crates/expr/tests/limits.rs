//! Runaway expressions end with an error: never a stack overflow, never a hang.

use std::time::Duration;

use mcpflow_expr::{Context, Jsonata, Limits, NoHistory, Scope};
use serde_json::json;

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
