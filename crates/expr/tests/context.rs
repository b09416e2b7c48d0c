//! The context: one entry per node, most recently executed first, removed by undefined.

use mcpflow_expr::{Context, Jsonata, Limits, NoHistory, Scope, Value};
use serde_json::json;

#[test]
fn set_replaces_in_place_and_none_removes() {
    let mut ctx = Context::new();
    ctx.set("a", Some(Value::from_json(json!(1))));
    ctx.set("b", Some(Value::from_json(json!({"x": 2}))));
    ctx.set("c", Some(Value::from_json(json!("c"))));
    ctx.set("a", Some(Value::from_json(json!(10))));
    assert_eq!(
        ctx.to_json().to_string(),
        r#"{"a":10,"c":"c","b":{"x":2}}"#,
        "most recently executed first"
    );
    assert_eq!(ctx.get("b").map(Value::to_json), Some(json!({"x": 2})));
    ctx.set("b", None);
    assert_eq!(ctx.get("b"), None);
    assert_eq!(ctx.to_json().to_string(), r#"{"a":10,"c":"c"}"#);
    assert_eq!(ctx.len(), 2);
}

/// mcpGraph builds `$` walking the history backwards, keeping the first record it meets of
/// each node: keys come most recently executed first, and a node that runs again in a loop
/// moves to the front.
#[test]
fn keys_come_most_recently_executed_first_as_in_mcpgraph() {
    let mut ctx = Context::new();
    for (node, out) in [
        ("entry", json!({"n": 2})),
        ("increment", json!(1)),
        ("check", json!("increment")),
        ("increment", json!(2)),
    ] {
        ctx.set(node, Some(Value::from_json(out)));
    }
    let limits = Limits::default();
    let scope = Scope::new(&ctx, &NoHistory, &limits);
    let eval = |src: &str| {
        Jsonata::compile(src)
            .and_then(|e| e.evaluate(&scope))
            .unwrap_or_else(|e| panic!("{src}: {e}"))
            .map(|v| v.to_json())
    };
    assert_eq!(
        eval("$keys($)"),
        Some(json!(["increment", "check", "entry"]))
    );
    assert_eq!(
        eval("$string($)"),
        Some(json!(
            r#"{"increment":2,"check":"increment","entry":{"n":2}}"#
        ))
    );
    assert_eq!(
        ctx.to_json().to_string(),
        r#"{"increment":2,"check":"increment","entry":{"n":2}}"#
    );
    // An object given in that order reads back in that order.
    let again = Context::from_json(ctx.to_json());
    assert_eq!(again.to_json().to_string(), ctx.to_json().to_string());
    let keys: Vec<&str> = again.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["increment", "check", "entry"]);
}

#[test]
fn values_share_and_serialize() {
    let v = Value::from_json(json!({"k": [1, 2]}));
    let w = v.clone();
    assert_eq!(v, w);
    assert_eq!(serde_json::to_string(&w).unwrap(), r#"{"k":[1,2]}"#);
    assert!(
        std::ptr::eq(v.as_json(), w.as_json()),
        "a clone shares the JSON"
    );
    assert_eq!(w.into_json(), json!({"k": [1, 2]}));
}

#[test]
fn values_and_contexts_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Value>();
    send_sync::<Context>();
    send_sync::<mcpflow_expr::Jsonata>();
    send_sync::<mcpflow_expr::Logic>();
    send_sync::<mcpflow_expr::Template>();
}
