//! JSON Logic: JavaScript's loose semantics, mcpGraph-mode `var`, and compile errors.

use mcpflow_expr::{
    Context, Limits, Logic, MemoryHistory, NoHistory, Scope, Value, js_truthy, logic_truthy, truthy,
};
use serde_json::{Value as Json, json};

fn classic(rule: Json, data: Json) -> Json {
    Logic::compile_classic(&rule)
        .and_then(|l| l.evaluate_json(&data))
        .unwrap_or_else(|e| panic!("{rule}: {e}"))
}

fn on_context(rule: Json, ctx: Json) -> Json {
    let ctx = Context::from_json(ctx);
    let limits = Limits::default();
    let scope = Scope::new(&ctx, &NoHistory, &limits);
    Logic::compile(&rule)
        .and_then(|l| l.evaluate(&scope))
        .unwrap_or_else(|e| panic!("{rule}: {e}"))
}

#[test]
fn loose_comparisons_follow_javascript() {
    let cases = [
        (json!({">": ["15", 10]}), true),
        (json!({"<": ["9", "10"]}), false),
        (json!({"<": [9, "10"]}), true),
        (json!({"==": [[], false]}), true),
        (json!({"==": [[0], false]}), true),
        (json!({"==": [[1, 2], "1,2"]}), true),
        (json!({"==": [null, 0]}), false),
        (json!({"==": [null, false]}), false),
        (json!({"==": ["", 0]}), true),
        (json!({"==": [" \n", 0]}), true),
        (json!({"==": ["0x10", 16]}), true),
        (json!({"==": [true, "1"]}), true),
        (json!({"==": [{}, "[object Object]"]}), true),
        (json!({"===": [1, 1.0]}), true),
        (json!({"===": [[], []]}), false),
        (json!({"<=": [null, 0]}), true),
        (json!({">=": ["a", "B"]}), true),
        (json!({"<": ["abc", 1]}), false),
        (json!({">": ["abc", 1]}), false),
        (json!({"<": [1, 2, 3]}), true),
        (json!({"<": [1, 3, 2]}), false),
        (json!({"<=": [1, 1, 1]}), true),
        (json!({"<": [[2], 3]}), true),
    ];
    for (rule, expected) in cases {
        assert_eq!(classic(rule.clone(), json!({})), json!(expected), "{rule}");
    }
}

#[test]
fn arithmetic_follows_javascript() {
    assert_eq!(
        classic(json!({"+": ["3abc", "1.5"]}), json!({})),
        json!(4.5),
        "parseFloat"
    );
    assert_eq!(
        classic(json!({"-": ["5", true]}), json!({})),
        json!(4),
        "ToNumber"
    );
    assert_eq!(classic(json!({"-": [2]}), json!({})), json!(-2));
    assert_eq!(classic(json!({"*": ["2", "3"]}), json!({})), json!(6));
    assert_eq!(
        classic(json!({"/": [1, 0]}), json!({})),
        Json::Null,
        "Infinity is not JSON"
    );
    assert_eq!(classic(json!({"%": [-7, 3]}), json!({})), json!(-1));
    assert_eq!(classic(json!({"max": [1, "7", 3]}), json!({})), json!(7));
    assert_eq!(classic(json!({"min": []}), json!({})), Json::Null);
    assert_eq!(
        classic(json!({"+": [0.1, 0.2]}), json!({})),
        json!(0.30000000000000004)
    );
    assert_eq!(
        classic(json!({"cat": ["a", 1.5, null, true, [1, 2]]}), json!({})),
        json!("a1.5true1,2")
    );
    assert_eq!(classic(json!({"cat": [1e21]}), json!({})), json!("1e+21"));
}

#[test]
fn truthiness() {
    for v in [json!(0), json!(""), json!(null), json!(false), json!([])] {
        assert!(!logic_truthy(&v), "{v}");
    }
    assert!(js_truthy(&json!([])), "[] is truthy in JavaScript");
    assert!(
        truthy(&json!([])),
        "a switch routes on JavaScript's Boolean(result)"
    );
    for v in [json!(1), json!("0"), json!({}), json!([0]), json!(-1.5)] {
        assert!(logic_truthy(&v) && js_truthy(&v), "{v}");
    }
    assert_eq!(classic(json!({"!!": [[]]}), json!({})), json!(false));
    assert_eq!(classic(json!({"!": [[]]}), json!({})), json!(true));
    assert_eq!(
        classic(json!({"if": [[], "yes", "no"]}), json!({})),
        json!("no")
    );
}

#[test]
fn mcpgraph_var_is_jsonata_against_the_context() {
    let ctx = json!({"entry": {"value": "15", "items": [1, 2, 3]}, "other": {"n": 2}});
    assert_eq!(
        on_context(json!({">": [{"var": "entry.value"}, 10]}), ctx.clone()),
        json!(true)
    );
    assert_eq!(
        on_context(json!({">": [{"var": "$.entry.value"}, 10]}), ctx.clone()),
        json!(true)
    );
    assert_eq!(
        on_context(json!({"var": "$count(entry.items)"}), ctx.clone()),
        json!(3)
    );
    assert_eq!(
        on_context(
            json!({"var": "$sum($$.entry.items) * other.n"}),
            ctx.clone()
        ),
        json!(12)
    );
    // An object or array value is data, not a rule.
    assert_eq!(
        on_context(json!({"var": "other"}), ctx.clone()),
        json!({"n": 2})
    );
    assert_eq!(
        on_context(json!({"in": [2, {"var": "entry.items"}]}), ctx.clone()),
        json!(true)
    );
}

#[test]
fn mcpgraph_undefined_var_stays_undefined() {
    // `undefined < 5` is false in JavaScript where `null < 5` is true.
    let ctx = json!({"entry": {}});
    assert_eq!(
        on_context(json!({"<": [{"var": "entry.value"}, 5]}), ctx.clone()),
        json!(false)
    );
    assert_eq!(
        on_context(json!({"==": [{"var": "entry.value"}, null]}), ctx.clone()),
        json!(true)
    );
    assert_eq!(on_context(json!({"var": "entry.value"}), ctx), Json::Null);
}

#[test]
fn mcpgraph_var_default_and_whole_data() {
    let ctx = json!({"entry": {"a": null, "b": 0}});
    assert_eq!(
        on_context(json!({"var": ["entry.missing", 7]}), ctx.clone()),
        json!(7)
    );
    assert_eq!(
        on_context(json!({"var": ["entry.a", 7]}), ctx.clone()),
        json!(7)
    );
    assert_eq!(
        on_context(json!({"var": ["entry.b", 7]}), ctx.clone()),
        json!(0)
    );
    assert_eq!(on_context(json!({"var": ""}), ctx.clone()), ctx);
    // A non-string var is the classic dotted path.
    let ctx = json!({"list": {"0": "zero"}});
    assert_eq!(
        on_context(json!({"var": {"cat": ["list", ".0"]}}), ctx),
        json!("zero")
    );
}

#[test]
fn mcpgraph_var_inside_iterators_reads_the_item() {
    let ctx = json!({"entry": {"items": [{"p": 1}, {"p": 5}, {"p": 9}], "min": 4}});
    assert_eq!(
        on_context(
            json!({"filter": [{"var": "entry.items"}, {">": [{"var": "p"}, 4]}]}),
            ctx.clone()
        ),
        json!([{"p": 5}, {"p": 9}])
    );
    assert_eq!(
        on_context(
            json!({"map": [{"var": "entry.items"}, {"var": "$.p * 2"}]}),
            ctx.clone()
        ),
        json!([2, 10, 18])
    );
    assert_eq!(
        on_context(
            json!({"reduce": [{"var": "entry.items"}, {"+": [{"var": "current.p"}, {"var": "accumulator"}]}, 0]}),
            ctx.clone()
        ),
        json!(15)
    );
    assert_eq!(
        on_context(
            json!({"map": [[1, 2], {"*": [{"var": ""}, 3]}]}),
            ctx.clone()
        ),
        json!([3, 6])
    );
    assert_eq!(
        on_context(
            json!({"some": [{"var": "entry.items"}, {"==": [{"var": "p"}, 9]}]}),
            ctx
        ),
        json!(true)
    );
}

#[test]
fn switch_example_routes_like_the_reference() {
    let high = Logic::compile(&json!({">": [{"var": "entry.value"}, 10]})).unwrap();
    let low = Logic::compile(&json!({">": [{"var": "entry.value"}, 0]})).unwrap();
    let limits = Limits::default();
    let route = |args: Json| {
        let mut ctx = Context::new();
        ctx.set("entry", Some(Value::from_json(args)));
        let scope = Scope::new(&ctx, &NoHistory, &limits);
        if truthy(&high.evaluate(&scope).unwrap()) {
            "high"
        } else if truthy(&low.evaluate(&scope).unwrap()) {
            "low"
        } else {
            "zero_or_negative"
        }
    };
    assert_eq!(route(json!({"value": 15})), "high");
    assert_eq!(route(json!({"value": "15"})), "high");
    assert_eq!(route(json!({"value": 5})), "low");
    assert_eq!(route(json!({"value": 10})), "low");
    assert_eq!(route(json!({"value": 0})), "zero_or_negative");
    assert_eq!(route(json!({"value": -5})), "zero_or_negative");
    assert_eq!(route(json!({})), "zero_or_negative");
}

#[test]
fn loop_example_condition_uses_history_free_context() {
    let rule = Logic::compile(&json!({
        "<": [{"var": "$.increment_node.counter"}, {"var": "$.increment_node.target"}]
    }))
    .unwrap();
    let mut ctx = Context::new();
    let h = MemoryHistory::new();
    let limits = Limits::default();
    ctx.set(
        "increment_node",
        Some(Value::from_json(json!({"counter": 2, "target": 3}))),
    );
    assert_eq!(
        rule.evaluate(&Scope::new(&ctx, &h, &limits)).unwrap(),
        json!(true)
    );
    ctx.set(
        "increment_node",
        Some(Value::from_json(json!({"counter": 3, "target": 3}))),
    );
    assert_eq!(
        rule.evaluate(&Scope::new(&ctx, &h, &limits)).unwrap(),
        json!(false)
    );
}

#[test]
fn unknown_operators_and_bad_jsonata_fail_at_compile_time() {
    let err = Logic::compile(&json!({"and": [true, {"frobnicate": [1]}]})).unwrap_err();
    assert!(err.message.contains("frobnicate"), "{err}");
    assert_eq!(err.code.as_deref(), Some("L0001"));
    let err = Logic::compile_classic(&json!({"nope": []})).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("L0001"));
    let err = Logic::compile(&json!({"==": [{"var": "entry.[x"}, 1]})).unwrap_err();
    assert!(
        err.code.as_deref().is_some_and(|c| c.starts_with('S')),
        "{err}"
    );
    assert!(err.message.contains("rule/==/0/var"), "{err}");
}

#[test]
fn multi_key_objects_are_literals() {
    assert_eq!(
        classic(json!({"a": 1, "b": 2}), json!({})),
        json!({"a": 1, "b": 2})
    );
    assert_eq!(classic(json!({}), json!({})), json!({}));
}

#[test]
fn missing_and_missing_some() {
    let data = json!({"a": 1, "b": "", "c": null, "d": {"e": 0}});
    assert_eq!(
        classic(
            json!({"missing": ["a", "b", "c", "d.e", "x"]}),
            data.clone()
        ),
        json!(["b", "c", "x"])
    );
    assert_eq!(
        classic(json!({"missing_some": [1, ["a", "x"]]}), data.clone()),
        json!([])
    );
    assert_eq!(
        classic(json!({"missing_some": [2, ["a", "x", "y"]]}), data),
        json!(["x", "y"])
    );
}

#[test]
fn strings_and_arrays() {
    assert_eq!(
        classic(json!({"substr": ["jsonlogic", -5, -2]}), json!({})),
        json!("log")
    );
    assert_eq!(
        classic(json!({"substr": ["héllo", 1, 3]}), json!({})),
        json!("éll")
    );
    assert_eq!(
        classic(json!({"in": ["Spring", "Springfield"]}), json!({})),
        json!(true)
    );
    assert_eq!(
        classic(json!({"in": [1, ["1", 2]]}), json!({})),
        json!(false),
        "strict in arrays"
    );
    assert_eq!(
        classic(json!({"merge": [[1], 2, [[3]]]}), json!({})),
        json!([1, 2, [3]])
    );
    assert_eq!(
        classic(json!({"all": [[], {"var": ""}]}), json!({})),
        json!(false)
    );
    assert_eq!(
        classic(json!({"none": [[0, false], {"var": ""}]}), json!({})),
        json!(true)
    );
}
