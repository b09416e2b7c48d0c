//! mcp node argument templates.

use mcpflow_expr::{Context, Limits, NoHistory, Scope, Template};
use serde_json::{Value as Json, json};

fn render(args: Json, ctx: Json) -> Option<Json> {
    let ctx = Context::from_json(ctx);
    let limits = Limits::default();
    let scope = Scope::new(&ctx, &NoHistory, &limits);
    Template::compile(&args)
        .and_then(|t| t.render(&scope))
        .unwrap_or_else(|e| panic!("{args}: {e}"))
}

#[test]
fn expressions_are_evaluated_and_the_rest_is_literal() {
    let ctx = json!({"entry": {"dir": "/tmp", "n": 2}});
    let args = json!({
        "path": {"expr": "$.entry.dir & '/x'"},
        "literal": "$.entry.dir",
        "nested": {"list": [{"expr": "entry.n + 1"}, "two", {"k": {"expr": "entry.n"}}]},
        "number": 5,
        "null": null
    });
    assert_eq!(
        render(args, ctx),
        Some(json!({
            "path": "/tmp/x",
            "literal": "$.entry.dir",
            "nested": {"list": [3, "two", {"k": 2}]},
            "number": 5,
            "null": null
        }))
    );
}

#[test]
fn undefined_drops_keys_and_nulls_array_items() {
    let ctx = json!({"entry": {}});
    let args = json!({"gone": {"expr": "entry.nothing"}, "list": [{"expr": "entry.nothing"}, 1]});
    assert_eq!(render(args, ctx.clone()), Some(json!({"list": [null, 1]})));
    assert_eq!(render(json!({"expr": "entry.nothing"}), ctx.clone()), None);
    assert_eq!(render(json!({"expr": "entry"}), ctx), Some(json!({})));
}

#[test]
fn literal_templates_have_no_expressions() {
    let t = Template::compile(&json!({"a": [1, {"b": "$.x"}]})).unwrap();
    assert!(!t.has_expressions());
    let t = Template::compile(&json!({"a": [1, {"b": {"expr": "x"}}]})).unwrap();
    assert!(t.has_expressions());
}

#[test]
fn errors_name_the_argument() {
    let err = Template::compile(&json!({"a": [0, {"expr": "(("}]})).unwrap_err();
    assert!(err.message.starts_with("args/a/1: "), "{err}");
    let err = Template::compile(&json!({"a": {"expr": "x", "other": 1}})).unwrap_err();
    assert!(
        err.message.contains("args/a") && err.message.contains("other"),
        "{err}"
    );
    let err = Template::compile(&json!({"a": {"expr": 5}})).unwrap_err();
    assert!(err.message.contains("args/a"), "{err}");

    let ctx = Context::from_json(json!({"entry": {"s": "x"}}));
    let limits = Limits::default();
    let scope = Scope::new(&ctx, &NoHistory, &limits);
    let t = Template::compile(&json!({"x": {"y~/": [{"expr": "1 + entry.s"}]}})).unwrap();
    let err = t.render(&scope).unwrap_err();
    assert!(err.message.starts_with("args/x/y~0~1/0: "), "{err}");
    assert_eq!(err.code.as_deref(), Some("T2002"));
}
