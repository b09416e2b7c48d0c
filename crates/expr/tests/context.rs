//! The context: one entry per node, replaced in place, removed by undefined.

use mcpflow_expr::{Context, Value};
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
        r#"{"a":10,"b":{"x":2},"c":"c"}"#,
        "first-insertion order"
    );
    assert_eq!(ctx.get("b").map(Value::to_json), Some(json!({"x": 2})));
    ctx.set("b", None);
    assert_eq!(ctx.get("b"), None);
    assert_eq!(ctx.to_json().to_string(), r#"{"a":10,"c":"c"}"#);
    assert_eq!(ctx.len(), 2);
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
