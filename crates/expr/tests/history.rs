//! The history functions, per mcpGraph's SEMANTICS.md, where `cur` is the history length when
//! the node starts. Each case runs twice: with literal arguments (computed before the
//! evaluation) and with computed ones (called during it); both must agree.

use mcpflow_expr::{Context, Jsonata, Limits, Logic, MemoryHistory, Scope, Template, Value};
use serde_json::{Value as Json, json};

/// entry(0) a(1) b(2) a(3) b(4) a(5) u(6, undefined output)
fn history() -> MemoryHistory {
    let mut h = MemoryHistory::new();
    h.push("entry", Some(Value::from_json(json!({"n": 3}))));
    for i in 1..=3 {
        h.push("a", Some(Value::from_json(json!({"i": i}))));
        if i < 3 {
            h.push("b", Some(Value::from_json(json!(format!("b{i}")))));
        }
    }
    h.push("u", None);
    h
}

fn eval(src: &str, h: &MemoryHistory) -> Option<Json> {
    let ctx = Context::new();
    let limits = Limits::default();
    let scope = Scope::new(&ctx, h, &limits);
    Jsonata::compile(src)
        .and_then(|e| e.evaluate(&scope))
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .map(|v| v.to_json())
}

/// `src` with its literal arguments, and the same call with each argument computed.
fn both(call: &str, args: &[&str], h: &MemoryHistory) -> Option<Json> {
    let literal = eval(&format!("${call}({})", args.join(", ")), h);
    let computed: Vec<String> = args.iter().map(|a| format!("$eval('{a}')")).collect();
    let dynamic = eval(&format!("${call}({})", computed.join(", ")), h);
    assert_eq!(
        literal, dynamic,
        "${call}({args:?}): literal and computed arguments disagree"
    );
    literal
}

#[test]
fn previous_node() {
    let h = history();
    // cur = 7: record 6 has an undefined output.
    assert_eq!(both("previousNode", &[], &h), None);
    assert_eq!(both("previousNode", &["1"], &h), None);
    assert_eq!(both("previousNode", &["2"], &h), Some(json!({"i": 3})));
    assert_eq!(both("previousNode", &["3"], &h), Some(json!("b2")));
    assert_eq!(both("previousNode", &["7"], &h), Some(json!({"n": 3})));
    assert_eq!(
        both("previousNode", &["8"], &h),
        Some(Json::Null),
        "before the first record"
    );
    assert_eq!(
        both("previousNode", &["0"], &h),
        Some(Json::Null),
        "$previousNode(0) is null"
    );
    assert_eq!(both("previousNode", &["-1"], &h), Some(Json::Null));
    let empty = MemoryHistory::new();
    assert_eq!(both("previousNode", &[], &empty), Some(Json::Null));
}

#[test]
fn previous_node_default_is_the_last_record() {
    let mut h = history();
    h.push("c", Some(Value::from_json(json!("last"))));
    assert_eq!(both("previousNode", &[], &h), Some(json!("last")));
}

#[test]
fn execution_count() {
    let h = history();
    assert_eq!(both("executionCount", &["\"a\""], &h), Some(json!(3)));
    assert_eq!(both("executionCount", &["\"b\""], &h), Some(json!(2)));
    assert_eq!(both("executionCount", &["\"entry\""], &h), Some(json!(1)));
    assert_eq!(both("executionCount", &["\"never\""], &h), Some(json!(0)));
}

#[test]
fn node_execution() {
    let h = history();
    assert_eq!(
        both("nodeExecution", &["\"a\"", "0"], &h),
        Some(json!({"i": 1}))
    );
    assert_eq!(
        both("nodeExecution", &["\"a\"", "2"], &h),
        Some(json!({"i": 3}))
    );
    assert_eq!(
        both("nodeExecution", &["\"a\"", "-1"], &h),
        Some(json!({"i": 3}))
    );
    assert_eq!(
        both("nodeExecution", &["\"a\"", "-3"], &h),
        Some(json!({"i": 1}))
    );
    assert_eq!(
        both("nodeExecution", &["\"a\"", "3"], &h),
        Some(Json::Null),
        "out of range"
    );
    assert_eq!(
        both("nodeExecution", &["\"a\"", "-4"], &h),
        Some(Json::Null),
        "out of range"
    );
    assert_eq!(
        both("nodeExecution", &["\"never\"", "0"], &h),
        Some(Json::Null)
    );
    assert_eq!(
        both("nodeExecution", &["\"b\"", "-1"], &h),
        Some(json!("b2"))
    );
}

#[test]
fn node_executions() {
    let h = history();
    assert_eq!(
        both("nodeExecutions", &["\"a\""], &h),
        Some(json!([{"i": 1}, {"i": 2}, {"i": 3}]))
    );
    assert_eq!(
        both("nodeExecutions", &["\"b\""], &h),
        Some(json!(["b1", "b2"]))
    );
    assert_eq!(eval("$count($nodeExecutions('never'))", &h), Some(json!(0)));
    assert_eq!(both("nodeExecutions", &["\"never\""], &h), Some(json!([])));
}

#[test]
fn wrong_argument_types_fail_as_in_the_reference() {
    let h = history();
    let ctx = Context::new();
    let limits = Limits::default();
    let scope = Scope::new(&ctx, &h, &limits);
    for src in [
        "$executionCount(5)",
        "$previousNode('x')",
        "$nodeExecutions(true)",
    ] {
        let err = Jsonata::compile(src).unwrap().evaluate(&scope).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("T0410"), "{src}: {err}");
    }
}

#[test]
fn history_functions_in_paths_and_expressions() {
    let h = history();
    assert_eq!(eval("$nodeExecution('a', -1).i + 1", &h), Some(json!(4)));
    assert_eq!(eval("$sum($nodeExecutions('a').i)", &h), Some(json!(6)));
    assert_eq!(
        eval("[1, 2].($nodeExecution('a', $ - 1).i)", &h),
        Some(json!([1, 2])),
        "a computed index, called per item"
    );
}

#[test]
fn loop_example_increment_node() {
    let src = r#"$executionCount("increment_node") = 0
      ? {"counter": 1, "sum": 1, "target": $.entry_sum.n}
      : {"counter": $nodeExecution("increment_node", -1).counter + 1,
         "sum": $nodeExecution("increment_node", -1).sum + $nodeExecution("increment_node", -1).counter + 1,
         "target": $.entry_sum.n}"#;
    let expr = Jsonata::compile(src).unwrap();
    let limits = Limits::default();
    let mut h = MemoryHistory::new();
    let mut ctx = Context::new();
    let entry = Value::from_json(json!({"n": 4}));
    h.push("entry_sum", Some(entry.clone()));
    ctx.set("entry_sum", Some(entry));
    let mut last = None;
    for _ in 0..4 {
        let out = expr.evaluate(&Scope::new(&ctx, &h, &limits)).unwrap();
        h.push("increment_node", out.clone());
        ctx.set("increment_node", out.clone());
        last = out;
    }
    assert_eq!(
        last.map(|v| v.to_json()),
        Some(json!({"counter": 4, "sum": 10, "target": 4}))
    );
}

#[test]
fn history_functions_in_logic_vars_and_template_args() {
    let h = history();
    let ctx = Context::new();
    let limits = Limits::default();
    let scope = Scope::new(&ctx, &h, &limits);
    let rule = Logic::compile(&json!({"==": [{"var": "$executionCount('a')"}, 3]})).unwrap();
    assert_eq!(rule.evaluate(&scope).unwrap(), json!(true));
    let rule = Logic::compile(&json!({"var": "$previousNode(2).i"})).unwrap();
    assert_eq!(rule.evaluate(&scope).unwrap(), json!(3));
    let args = Template::compile(&json!({"last": {"expr": "$nodeExecution('b', -1)"}})).unwrap();
    assert_eq!(args.render(&scope).unwrap(), Some(json!({"last": "b2"})));
}

#[test]
fn history_functions_outside_a_run_see_an_empty_history() {
    let e = Jsonata::compile(
        "{'c': $executionCount('a'), 'p': $previousNode(), 'e': $nodeExecutions('a')}",
    )
    .unwrap();
    let r = e
        .evaluate_json(None, &Default::default(), &Limits::default())
        .unwrap();
    assert_eq!(r, Some(json!({"c": 0, "p": null, "e": []})));
}
