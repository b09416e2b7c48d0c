//! The crossing's invariant as a property: for any JSON value, a script that returns its input
//! unchanged yields exactly that input (compared in a canonical serialisation: keys sorted,
//! numbers written as JavaScript writes them) or a clear rejection, never a different value.
//! Values include keys and strings with NUL, control characters, escapes and astral
//! characters, integers at the edge of what a double holds, and large and deep nesting. A
//! second property covers what only JavaScript can make: JSON text with lone-surrogate escapes,
//! parsed inside the script, comes out as the host's own parser reads it or is refused.
//!
//! `PROPTEST_CASES` sets the number of cases (default 64, a few seconds): for a long run,
//! `PROPTEST_CASES=200000 cargo nextest run -p mcpflow-sandbox --test identity --release`.

mod common;

use std::sync::OnceLock;

use mcpflow_sandbox::{Sandbox, SandboxError, Script};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

struct Fixture {
    runtime: tokio::runtime::Runtime,
    identity: Script,
    parse: Script,
    _sandbox: Sandbox,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let sandbox = common::sandbox_with(|o| o.cpu_time = std::time::Duration::from_secs(5));
        Fixture {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            identity: common::compile(&sandbox, "(x) => x"),
            parse: common::compile(&sandbox, "(text) => JSON.parse(text)"),
            _sandbox: sandbox,
        }
    })
}

/// Keys sorted, numbers as JavaScript's `String(n)` writes them: two values are the same JSON
/// data exactly when their canonical texts are equal.
fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
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
                write_canonical(&map[key], out);
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
    let mut buf = ryu_js::Buffer::new();
    buf.format(f).to_owned()
}

fn text() -> impl Strategy<Value = String> {
    let special = prop_oneof![
        Just('\0'),
        Just('"'),
        Just('\\'),
        Just('\n'),
        Just('\u{1b}'),
        Just('\u{7f}'),
        Just('\u{2028}'),
        Just('\u{fffd}'),
        Just('\u{feff}'),
        Just('😀'),
        Just('𝄞'),
        Just('\u{10ffff}'),
        Just('.'),
        Just('/'),
        Just('~'),
    ];
    let any_char =
        prop_oneof![3 => any::<char>(), 2 => special, 2 => proptest::char::range('a', 'e')];
    proptest::collection::vec(any_char, 0..12).prop_map(|cs| cs.into_iter().collect())
}

fn number() -> impl Strategy<Value = Value> {
    const EDGE: i64 = 1 << 53;
    prop_oneof![
        any::<i32>().prop_map(Value::from),
        (-EDGE..=EDGE).prop_map(Value::from),
        Just(Value::from(EDGE + 1)),
        Just(Value::from(u64::MAX)),
        Just(Value::from(i64::MIN)),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(8, 256, 10, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..10).prop_map(Value::Array),
            proptest::collection::vec((text(), inner), 0..10)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// JSON text with escapes, lone surrogates among them, for `JSON.parse` inside the script.
fn escaped_text() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        Just("\\ud800".to_owned()),
        Just("\\udfff".to_owned()),
        Just("\\ud83d\\ude00".to_owned()),
        Just("\\u0000".to_owned()),
        Just("\\n".to_owned()),
        Just("a".to_owned()),
        Just("é".to_owned()),
    ];
    let s = proptest::collection::vec(unit, 0..5).prop_map(|u| format!("\"{}\"", u.concat()));
    (s.clone(), s).prop_map(|(k, v)| format!("{{{k}: [{v}, {k}]}}"))
}

/// A deep value: `depth` nested arrays around a string.
fn nested(depth: usize) -> Value {
    (0..depth).fold(Value::from("core\u{0}"), |v, _| Value::Array(vec![v]))
}

fn check_identity(input: &Value) -> Result<(), TestCaseError> {
    let f = fixture();
    let out = f.runtime.block_on(f.identity.call(input));
    match out {
        Ok(Some(out)) => prop_assert_eq!(canonical(&out), canonical(input)),
        Ok(None) => prop_assert!(false, "nothing came back for {}", input),
        Err(
            SandboxError::Input { .. }
            | SandboxError::OutputTooLarge { .. }
            | SandboxError::OutOfMemory { .. },
        ) => {}
        Err(other) => prop_assert!(false, "unclear rejection {other:?} of {input}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn an_identity_script_returns_exactly_its_input_or_refuses_it(input in json()) {
        check_identity(&input)?;
    }

    #[test]
    fn json_made_inside_the_script_comes_out_as_the_host_reads_it_or_is_refused(text in escaped_text()) {
        let f = fixture();
        let out = f.runtime.block_on(f.parse.call(&Value::String(text.clone())));
        match (out, serde_json::from_str::<Value>(&text)) {
            (Ok(Some(out)), Ok(host)) => prop_assert_eq!(canonical(&out), canonical(&host)),
            (Ok(out), Err(e)) => prop_assert!(false, "{text}: the host refuses it ({e}) but it came out as {out:?}"),
            (Err(SandboxError::Output { reason }), _) => {
                prop_assert!(reason.contains("lone surrogate"), "{text}: {reason}");
            }
            (Err(e), _) => prop_assert!(false, "{text}: {e:?}"),
            (Ok(None), _) => prop_assert!(false, "{text}: nothing came back"),
        }
    }
}

#[test]
fn large_and_deep_values_cross_exactly_or_are_refused() {
    for depth in [1, 64, 126, 127, 128, 129, 1000] {
        check_identity(&nested(depth)).unwrap_or_else(|e| panic!("depth {depth}: {e}"));
    }
    let wide: Vec<Value> = (0..50_000)
        .map(|i| Value::from(format!("k\u{0}{i}")))
        .collect();
    check_identity(&Value::Array(wide)).unwrap_or_else(|e| panic!("wide: {e}"));
    let mut map = Map::new();
    for i in 0..20_000 {
        map.insert(format!("key\u{0}{i}😀"), Value::from(i));
    }
    check_identity(&Value::Object(map)).unwrap_or_else(|e| panic!("many keys: {e}"));
    let big = Value::from("x".repeat(3 << 20));
    check_identity(&big).unwrap_or_else(|e| panic!("big string: {e}"));
}
