//! The sandbox's JSON crossing, through its public API, three ways on the same text:
//! - as JSON handed to an identity script: it comes back exactly or is refused;
//! - as a string the script `JSON.parse`s: the result is what the host's parser reads, or is
//!   refused (a lone surrogate; a number past a double's range, which the host refuses too);
//! - as a JavaScript expression the script returns: when it crosses, it is the data
//!   `JSON.stringify` makes of the same expression.
#![no_main]

#[path = "common/canonical.rs"]
mod canonical;

use std::sync::OnceLock;
use std::time::Duration;

use canonical::canonical;
use libfuzzer_sys::fuzz_target;
use mcpflow_sandbox::{Sandbox, SandboxError, SandboxOptions, Script};
use serde_json::Value;

struct Fixture {
    runtime: tokio::runtime::Runtime,
    sandbox: Sandbox,
    identity: Script,
    parse: Script,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let sandbox = Sandbox::new(SandboxOptions {
            memory_limit_bytes: 16 << 20,
            cpu_time: Duration::from_millis(200),
            workers: 1,
            ..SandboxOptions::default()
        })
        .expect("valid options");
        let compile = |source| Script::compile(&sandbox, "fuzz.js", source).expect("compiles");
        Fixture {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            identity: compile("(x) => x"),
            parse: compile("(text) => JSON.parse(text)"),
            sandbox,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let f = fixture();
    let call = |script: &Script, input: &Value| f.runtime.block_on(script.call(input));

    let host = serde_json::from_str::<Value>(text);
    if let Ok(input) = &host {
        match call(&f.identity, input) {
            Ok(Some(out)) => assert_eq!(canonical(&out), canonical(input)),
            Ok(None) => panic!("nothing came back for {input}"),
            Err(
                SandboxError::Input { .. }
                | SandboxError::OutputTooLarge { .. }
                | SandboxError::OutOfMemory { .. },
            ) => {}
            Err(other) => panic!("unclear refusal {other:?} of {input}"),
        }
    }

    match (call(&f.parse, &Value::String(text.to_owned())), &host) {
        (Ok(Some(out)), Ok(host)) => assert_eq!(canonical(&out), canonical(host)),
        (Ok(out), Err(e)) => panic!("the host refuses {text:?} ({e}) but it came out as {out:?}"),
        // A lone surrogate cannot leave as JSON text. A number past a double's range is
        // Infinity to `JSON.parse`, which the crossing refuses by design (it does not turn it
        // into `null` as JSON.stringify would); the host refuses the same text ("number out
        // of range"). Found by this target: `[1.5e302222220]`.
        (Err(SandboxError::Output { reason }), host) => assert!(
            reason.contains("lone surrogate")
                || (host.is_err() && reason.contains("Infinity (not a finite number)")),
            "{text:?}: {reason}"
        ),
        _ => {}
    }

    // Clocks and randomness differ from one call to the next.
    if ["Date", "random", "performance"]
        .iter()
        .any(|w| text.contains(w))
    {
        return;
    }
    let script = |body: String| Script::compile(&f.sandbox, "expr.js", &body).ok();
    let (Some(value), Some(stringify)) = (
        script(format!("() => ({text}\n)")),
        // Parenthesised: `1,2` is one comma expression (2), not two arguments (found by this
        // target: `90071992547409,93` was stringified with 93 as the replacer).
        script(format!("() => JSON.stringify(({text}\n))")),
    ) else {
        return;
    };
    if let (Ok(Some(out)), Ok(Some(Value::String(json)))) =
        (call(&value, &Value::Null), call(&stringify, &Value::Null))
    {
        let expected: Value = serde_json::from_str(&json).expect("JSON.stringify writes JSON");
        assert_eq!(canonical(&out), canonical(&expected), "{text:?}");
    }
});
