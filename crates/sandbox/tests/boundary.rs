//! The crossing between JSON and JavaScript, and what leaves the sandbox: every key and string
//! crosses exactly or is refused, what the host builds is charged to the script's memory cap,
//! every text is capped, cancelled and background calls keep out of the way of the callers
//! who wait, and a fixed clock makes a call repeatable.

mod common;

use std::time::Duration;

use common::{assert_healthy, compile, run, sandbox, sandbox_with};
use mcpflow_sandbox::{Determinism, Fault, SandboxError};
use serde_json::{Value, json};

const IDENTITY: &str = "(x) => x";

// ---- keys and strings ----

#[tokio::test]
async fn a_key_holding_nul_crosses_whole_both_ways() {
    let sb = sandbox();
    // The README's guard rejects `..` in `path`; a second key that is `path` up to a NUL must
    // come back as itself, not merged into `path`.
    let input = json!({"path": "notes.txt", "path\u{0}": "../../etc/shadow"});
    assert_eq!(run(&sb, IDENTITY, input.clone()).await, Ok(Some(input)));
    let made = run(&sb, r#"() => ({ "a\0b": "c\0d", "\0": 1 })"#, json!(null)).await;
    assert_eq!(made, Ok(Some(json!({"a\u{0}b": "c\u{0}d", "\u{0}": 1}))));
}

#[tokio::test]
async fn a_lone_surrogate_in_a_key_or_string_is_refused_not_replaced() {
    let sb = sandbox();
    for (script, at) in [
        (
            r#"() => ({ "\ud800": 1 })"#,
            "a key that is not valid Unicode (a lone surrogate) at /\u{fffd}",
        ),
        (
            r#"() => ({ k: "a\udc00" })"#,
            "a string that is not valid Unicode (a lone surrogate) at /k",
        ),
        (
            "() => [String.fromCharCode(0xd83d)]",
            "a string that is not valid Unicode (a lone surrogate) at /0",
        ),
        // Half of an astral character, cut by `slice`.
        (
            "() => ({ s: '😀'.slice(0, 1) })",
            "a string that is not valid Unicode (a lone surrogate) at /s",
        ),
    ] {
        let out = run(&sb, script, json!(null)).await;
        match out {
            Err(SandboxError::Output { reason }) => {
                let expected_start = at.split(" at ").next().unwrap_or_default();
                assert!(reason.starts_with(expected_start), "{script}: {reason}");
            }
            other => panic!("{script}: expected a refusal, got {other:?}"),
        }
    }
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn astral_characters_and_escapes_cross_exactly() {
    let sb = sandbox();
    let input = json!({"😀": "𝄞 music", "tab\t": "line\nbreak \"quoted\" \\ \u{7f} \u{1b}[31m"});
    assert_eq!(run(&sb, IDENTITY, input.clone()).await, Ok(Some(input)));
    let made = run(
        &sb,
        r#"() => ({ "\u{1F600}": "\ud834\udd1e" })"#,
        json!(null),
    )
    .await;
    assert_eq!(made, Ok(Some(json!({"😀": "𝄞"}))));
}

#[tokio::test]
async fn integers_a_javascript_number_would_change_are_refused_at_the_input() {
    let sb = sandbox();
    for exact in [
        json!(9_007_199_254_740_992u64),
        json!(i64::MIN),
        json!(-1),
        json!(1u64 << 60),
    ] {
        let input = json!({ "n": exact });
        assert_eq!(run(&sb, IDENTITY, input.clone()).await, Ok(Some(input)));
    }
    for changed in [
        json!(9_007_199_254_740_993u64),
        json!(u64::MAX),
        json!(i64::MAX),
    ] {
        let out = run(&sb, IDENTITY, json!({ "n": changed })).await;
        match out {
            Err(e @ SandboxError::Input { .. }) => assert_eq!(e.fault(), Fault::Input),
            other => panic!("{changed}: expected an input error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_input_over_the_input_cap_is_refused_as_the_inputs_fault() {
    let sb = sandbox_with(|o| o.max_input_bytes = 1000);
    let out = run(&sb, IDENTITY, json!({ "pad": "x".repeat(2000) })).await;
    let Err(e) = out else {
        panic!("expected a refusal, got {out:?}")
    };
    assert_eq!(e.fault(), Fault::Input, "{e}");
    // Padding that fits as text but not in the heap is the input's fault too.
    let sb = sandbox_with(|o| o.memory_limit_bytes = 4 << 20);
    let pad: Vec<Value> = (0..200_000).map(|_| json!({})).collect();
    let out = run(&sb, IDENTITY, json!({ "pad": pad })).await;
    let Err(e) = out else {
        panic!("expected a refusal, got a result")
    };
    assert_eq!(e.fault(), Fault::Input, "{e}");
}

// ---- what the host builds ----

#[cfg(target_os = "linux")]
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Results that are small in the script's heap but large as Rust values stop at the memory
/// cap. Unmetered, a sparse array of length 2^32−1 made the host build one JSON `null` per
/// slot (128 MiB per call at the default output cap, unbounded above it).
#[tokio::test]
async fn results_large_in_the_host_are_charged_to_the_memory_cap() {
    let limit = 32 << 20;
    let sb = sandbox_with(|o| {
        o.memory_limit_bytes = limit;
        // Enough time for an unoptimised build to reach the cap.
        o.cpu_time = Duration::from_secs(5);
    });
    #[cfg(target_os = "linux")]
    let before = resident_bytes();
    for attack in [
        "() => { const a = []; a.length = 2 ** 32 - 1; return a; }",
        "() => { const o = {}; return new Array(1500000).fill(o); }",
        "() => { const o = {}; const r = {}; for (let i = 0; i < 400000; i++) r[i] = o; return r; }",
    ] {
        for _ in 0..3 {
            let out = run(&sb, attack, json!(null)).await;
            assert_eq!(out, Err(SandboxError::OutOfMemory { limit }), "{attack}");
        }
    }
    #[cfg(target_os = "linux")]
    {
        let grown = resident_bytes().saturating_sub(before);
        assert!(grown < 160 << 20, "resident memory grew by {grown} bytes");
    }
    assert_healthy(&sb).await;
}

// ---- texts leaving the sandbox ----

#[tokio::test]
async fn thrown_values_messages_stacks_and_logs_are_capped() {
    let sb = sandbox_with(|o| {
        o.memory_limit_bytes = 64 << 20;
        o.max_output_bytes = 64 << 10;
    });
    let huge = 12 << 20;
    let cases = [
        format!("() => {{ throw 'x'.repeat({huge}); }}"),
        format!("() => {{ throw new Error('x'.repeat({huge})); }}"),
        format!("() => {{ const e = new Error('m'); e.name = 'N'.repeat({huge}); throw e; }}"),
        format!("() => {{ throw {{ big: 'x'.repeat({huge}) }}; }}"),
    ];
    for source in &cases {
        let script = compile(&sb, source);
        let outcome = script.call_with_logs(&json!(null)).await;
        let Err(SandboxError::Thrown {
            message,
            value,
            stack,
        }) = outcome.result
        else {
            panic!("{source}: expected a throw, got {:?}", outcome.result)
        };
        let total =
            message.len() + stack.map_or(0, |s| s.len()) + value.map_or(0, |v| v.to_string().len());
        assert!(total < 64 << 10, "{source}: {total} bytes left the sandbox");
    }
    let script = compile(
        &sb,
        &format!(
            "() => {{ const s = 'x'.repeat({huge}); for (let i = 0; i < 20; i++) console.log(s, s, s); }}"
        ),
    );
    let outcome = script.call_with_logs(&json!(null)).await;
    assert_eq!(outcome.result, Ok(None));
    let logged: usize = outcome.logs.iter().map(|l| l.message.len()).sum();
    assert!(logged <= (64 << 10) + 200, "{logged} bytes of logs");
    assert_healthy(&sb).await;
}

// ---- cancellation and the background queue ----

/// A caller that stops waiting stops the script: the only worker is free for the next call
/// long before the spinning script's 10-minute budget is spent. (The outer timeout only keeps
/// a regression from hanging the suite.)
#[tokio::test]
async fn a_dropped_call_stops_its_script() {
    let sb = sandbox_with(|o| o.cpu_time = Duration::from_secs(600));
    let spin = compile(&sb, "() => { for (;;) {} }");
    let abandoned = tokio::time::timeout(Duration::from_millis(50), spin.call(&json!(null))).await;
    assert!(abandoned.is_err(), "the spin cannot finish");
    let next = tokio::time::timeout(Duration::from_secs(120), assert_healthy(&sb)).await;
    assert!(
        next.is_ok(),
        "the worker is still spinning for a caller that left"
    );
}

#[tokio::test]
async fn background_calls_queue_apart_and_are_dropped_when_their_queue_is_full() {
    let sb = sandbox_with(|o| {
        o.cpu_time = Duration::from_secs(600);
        o.background_queue = 2;
    });
    let spin = compile(&sb, "() => { for (;;) {} }");
    // Kept, not awaited: a dropped future would cancel its call.
    let calls: Vec<_> = (0..6)
        .map(|_| spin.call_in_background(&json!(null)))
        .collect();
    // One running (if the worker took it yet) and two queued: the rest were refused and counted.
    let dropped = sb.background_dropped();
    assert!((3..=4).contains(&dropped), "{dropped} dropped");
    let mut calls = calls;
    let last = calls.pop();
    let refused = match last {
        Some(call) => call.await.result,
        None => Ok(None),
    };
    assert_eq!(refused, Err(SandboxError::Busy { queued: 2 }));
    assert_eq!(SandboxError::Busy { queued: 2 }.fault(), Fault::Sandbox);
    // The foreground worker is not the background's: a waiting caller is served while the
    // background worker spins. (The timeout only keeps a regression from hanging the suite.)
    let next = tokio::time::timeout(Duration::from_secs(120), assert_healthy(&sb)).await;
    assert!(next.is_ok(), "a foreground call waited for background work");
    drop(calls);
}

// ---- a fixed clock ----

#[tokio::test]
async fn a_fixed_clock_and_seed_make_a_call_repeatable() {
    let sb = sandbox();
    let script = compile(
        &sb,
        r#"() => {
            class Stamp extends Date {}
            return {
                now: Date.now(),
                made: new Date().getTime(),
                sub: new Stamp().getTime(),
                given: new Date(5).getTime(),
                text: Date() === new Date().toString(),
                isDate: new Date() instanceof Date,
                random: [Math.random(), Math.random()],
                key: "k-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2),
            };
        }"#,
    );
    let fixed = Determinism {
        now_ms: 1_700_000_000_000.0,
        seed: 42,
    };
    let first = script.call_deterministic(&json!(null), fixed).await.result;
    let again = script.call_deterministic(&json!(null), fixed).await.result;
    assert_eq!(first, again);
    let Ok(Some(first)) = first else {
        panic!("{first:?}")
    };
    assert_eq!(first["now"], json!(1_700_000_000_000u64));
    assert_eq!(first["made"], first["now"]);
    assert_eq!(first["sub"], first["now"]);
    assert_eq!(first["given"], json!(5));
    assert_eq!(first["text"], json!(true));
    assert_eq!(first["isDate"], json!(true));
    assert_ne!(first["random"][0], first["random"][1]);
    let other_seed = Determinism { seed: 43, ..fixed };
    let other = script
        .call_deterministic(&json!(null), other_seed)
        .await
        .result;
    let Ok(Some(other)) = other else {
        panic!("{other:?}")
    };
    assert_ne!(other["random"], first["random"]);
    // Without a fixed clock the real one is used.
    let free = script.call(&json!(null)).await;
    let Ok(Some(free)) = free else {
        panic!("{free:?}")
    };
    assert_ne!(free["now"], first["now"]);
}
