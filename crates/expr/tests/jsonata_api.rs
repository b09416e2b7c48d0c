//! `Jsonata` through the public API: the context as input, the fast paths agreeing with the
//! engine, errors with codes and positions.

use mcpflow_expr::{Context, Jsonata, Limits, MemoryHistory, NoHistory, Scope, Value};
use serde_json::{Map, Value as Json, json};

fn context(v: Json) -> Context {
    Context::from_json(v)
}

fn eval(src: &str, ctx: &Context) -> Option<Json> {
    let limits = Limits::default();
    let scope = Scope::new(ctx, &NoHistory, &limits);
    Jsonata::compile(src)
        .and_then(|e| e.evaluate(&scope))
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .map(|v| v.to_json())
}

/// The same expression through the plain-JSON entry point, which never takes a fast path.
fn eval_engine(src: &str, ctx: &Context) -> Option<Json> {
    let e = Jsonata::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    e.evaluate_json(Some(&ctx.to_json()), &Map::new(), &Limits::default())
        .unwrap_or_else(|e| panic!("{src}: {e}"))
}

#[test]
fn context_is_dollar_and_root_and_bare_names() {
    let ctx = context(json!({"entry": {"x": 5, "o": {"k": "v"}}, "n": "out"}));
    for src in ["$.entry.x", "$$.entry.x", "entry.x", " entry.x "] {
        assert_eq!(eval(src, &ctx), Some(json!(5)), "{src}");
    }
    assert_eq!(eval("$.n", &ctx), Some(json!("out")));
    assert_eq!(eval("$.missing", &ctx), None);
    assert_eq!(eval("$.entry.x.deeper", &ctx), None);
    assert_eq!(eval("$keys($)", &ctx), Some(json!(["entry", "n"])));
    assert_eq!(eval("$", &ctx), Some(ctx.to_json()));
}

#[test]
fn plain_paths_agree_with_the_engine() {
    let ctx = context(json!({
        "a": {"b": [1, 2], "c": [[1, 2]], "d": [5], "e": {"f": null}, "g": 1.5, "h": "s"},
        "arr": [{"x": 1}, {"x": 2}],
        "one": [{"x": 1}],
        "s": "text",
        "z": null,
        "t": true
    }));
    let paths = [
        "$", "$$", "a", "$.a.b", "a.c", "a.d", "a.e", "a.e.f", "a.e.f.g", "a.g", "a.h", "a.h.x",
        "arr", "arr.x", "one.x", "$.one", "s", "s.length", "z", "z.x", "t", "nope", "nope.x",
        "$.arr.x", "$$.a.d",
    ];
    for src in paths {
        assert_eq!(eval(src, &ctx), eval_engine(src, &ctx), "{src}");
    }
}

/// Numbers found by a plain path come back as the engine gives them (JavaScript numbers): `-0`
/// as `0`, a float with no fraction as an integer, an integer past 2^53 as the nearest double,
/// nested ones too. The fast path returned them
/// as written (`-0.0`, `1.0`); the `jsonata` fuzz target found it with `entry` on a `-0.0`.
#[test]
fn plain_paths_give_numbers_as_the_engine_does() {
    let ctx = context(json!({"entry": {
        "z": -0.0, "one": 1.0, "half": 2.5, "int": 7, "big": 9007199254740993u64,
        "xs": [-0.0, 2.0], "o": {"k": -0.0, "deep": [{"f": 3.0}]}
    }}));
    for src in [
        "entry",
        "entry.z",
        "entry.one",
        "entry.half",
        "entry.int",
        "entry.big",
        "entry.o",
        "$.entry.o.k",
    ] {
        assert_eq!(eval(src, &ctx), eval_engine(src, &ctx), "{src}");
    }
    assert_eq!(eval("entry.z", &ctx), Some(json!(0)));
    assert_eq!(
        eval("entry.one", &ctx).map(|v| v.to_string()),
        Some("1".into())
    );
}

#[test]
fn undefined_results_and_object_keys() {
    let ctx = context(json!({"entry": {"x": 1}}));
    assert_eq!(
        eval("{'a': $.entry.x, 'b': $.nothing}", &ctx),
        Some(json!({"a": 1}))
    );
    assert_eq!(eval("$.entry.y", &ctx), None);
}

#[test]
fn compile_errors_carry_code_and_position() {
    let err = Jsonata::compile("Account.Order[").unwrap_err();
    assert_eq!(err.code.as_deref(), Some("S0203"));
    assert!(err.position.is_some());
    assert!(err.to_string().contains("S0203"), "{err}");
}

#[test]
fn evaluation_errors_carry_code_and_position() {
    let ctx = context(json!({"entry": {"s": "x"}}));
    let limits = Limits::default();
    let scope = Scope::new(&ctx, &NoHistory, &limits);
    let err = Jsonata::compile("1 + $.entry.s")
        .unwrap()
        .evaluate(&scope)
        .unwrap_err();
    assert_eq!(err.code.as_deref(), Some("T2002"));
    assert_eq!(err.position, Some(3));
}

#[test]
fn hoisted_history_calls_report_positions_in_the_source_as_written() {
    let mut history = MemoryHistory::new();
    history.push("n", Some(Value::from_json(json!({"v": "text"}))));
    let ctx = Context::new();
    let limits = Limits::default();
    let scope = Scope::new(&ctx, &history, &limits);
    for src in [
        r#"$nodeExecution("n", -1).v + 1"#,
        r#"$executionCount("n") + $nodeExecution("n", -1).v + 1"#,
        r#"$executionCount("n") + 1 + $nodeExecution("n", -1).v"#,
        r#"$executionCount("n") + $executionCount("n") + $nodeExecution("n", -1).v"#,
    ] {
        let compiled = Jsonata::compile(src).unwrap();
        let err = compiled.evaluate(&scope).unwrap_err();
        // The same expression with computed arguments is not rewritten.
        let dynamic = src.replace("\"n\"", "$string(\"n\")");
        let expected = Jsonata::compile(&dynamic)
            .unwrap()
            .evaluate(&scope)
            .unwrap_err();
        let shift = (dynamic.len() - src.len()) / 2;
        assert_eq!(err.code, expected.code, "{src}");
        assert!(
            err.position.is_some() && expected.position.is_some(),
            "{src}: {err} / {expected}"
        );
        let (got, want) = (err.position.unwrap_or(0), expected.position.unwrap_or(0));
        // Each replaced "n" is 9 characters longer in the dynamic form.
        let before = dynamic[..want].matches("$string").count();
        assert_eq!(
            got + before * 9,
            want,
            "{src}: {err} vs {expected} (shift {shift})"
        );
    }
    // An error about the call itself names the function, not a hidden variable.
    let err = Jsonata::compile(r#"$nodeExecution("n", -1)()"#)
        .unwrap()
        .evaluate(&scope)
        .unwrap_err();
    assert!(!err.message.contains("__mcpflow"), "{err}");
}

#[test]
fn evaluate_json_takes_input_and_bindings() {
    let e = Jsonata::compile("$x + a").unwrap();
    let mut b = Map::new();
    b.insert("x".into(), json!(2));
    let r = e
        .evaluate_json(Some(&json!({"a": 3})), &b, &Limits::default())
        .unwrap();
    assert_eq!(r, Some(json!(5)));
    let r = Jsonata::compile("a")
        .unwrap()
        .evaluate_json(None, &b, &Limits::default())
        .unwrap();
    assert_eq!(r, None);
}

#[test]
fn jsonata_2_features_work_on_the_context() {
    let ctx =
        context(json!({"entry": {"items": [{"p": 2, "q": 3}, {"p": 5, "q": 1}], "s": "a-b"}}));
    assert_eq!(eval("$sum(entry.items.(p * q))", &ctx), Some(json!(11)));
    assert_eq!(eval("entry.missing ?? 'dflt'", &ctx), Some(json!("dflt")));
    assert_eq!(eval("entry.s ?: 'x'", &ctx), Some(json!("a-b")));
    assert_eq!(eval("( $a := 2; $a * 3 )", &ctx), Some(json!(6)));
    assert_eq!(
        eval("$replace(entry.s, /-/, '+')", &ctx),
        Some(json!("a+b"))
    );
    assert_eq!(eval("entry.items[p > 3].q", &ctx), Some(json!(1)));
}

/// `$caller` is whatever the scope carries, in every kind of expression and plan (a plain
/// lookup, the engine, a hoisted history call, a JSON Logic `var`, an args template), and
/// undefined when it carries none; an expression's own `$caller` binding wins.
#[test]
fn caller_is_bound_from_the_scope() {
    use mcpflow_expr::{Logic, Template};
    let ctx = context(json!({"entry": {"x": 5}}));
    let mut history = MemoryHistory::new();
    history.push("entry", Some(Value::from_json(json!({"x": 5}))));
    let limits = Limits::default();
    let caller = json!({"subject": "alice", "scopes": ["tools:call"]});
    let scope = Scope::new(&ctx, &history, &limits).with_caller(Some(&caller));
    let eval_with = |src: &str, scope: &Scope<'_>| {
        Jsonata::compile(src)
            .and_then(|e| e.evaluate(scope))
            .unwrap_or_else(|e| panic!("{src}: {e}"))
            .map(|v| v.to_json())
    };
    for (src, want) in [
        ("$caller.subject", json!("alice")),
        ("$caller", caller.clone()),
        ("$caller.subject & ':' & entry.x", json!("alice:5")),
        (
            "$executionCount('entry') & ' ' & $caller.scopes[0]",
            json!("1 tools:call"),
        ),
        (
            "( $caller := {'subject': 'own'}; $caller.subject )",
            json!("own"),
        ),
    ] {
        assert_eq!(eval_with(src, &scope), Some(want), "{src}");
    }
    let rule = Logic::compile(&json!({"==": [{"var": "$caller.subject"}, "alice"]})).unwrap();
    assert_eq!(rule.evaluate(&scope).unwrap(), json!(true));
    let args = Template::compile(&json!({"user": {"expr": "$caller.subject"}})).unwrap();
    assert_eq!(args.render(&scope).unwrap(), Some(json!({"user": "alice"})));

    let without = Scope::new(&ctx, &history, &limits);
    assert_eq!(eval_with("$caller", &without), None);
    assert_eq!(
        eval_with("$caller.subject = 'alice'", &without),
        Some(json!(false))
    );
    assert_eq!(rule.evaluate(&without).unwrap(), json!(false));
}
