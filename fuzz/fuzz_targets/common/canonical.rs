//! Canonical JSON text (keys sorted, numbers as JavaScript's `String(n)` writes them): two
//! values are the same JSON data exactly when their canonical texts are equal. The same as
//! crates/sandbox/tests/identity.rs.

use serde_json::{Number, Value};

pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(&map[key], out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn js_number(n: &Number) -> String {
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f == 0.0 {
        return "0".into();
    }
    ryu_js::Buffer::new().format(f).to_owned()
}
