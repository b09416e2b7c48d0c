#![allow(dead_code)]

use std::time::Duration;

use mcpflow_sandbox::{Sandbox, SandboxError, SandboxOptions, Script};
use serde_json::{Value, json};

/// One worker, so that every call of a test runs on the same thread as the attack before it.
pub fn sandbox() -> Sandbox {
    sandbox_with(|_| {})
}

pub fn sandbox_with(tune: impl FnOnce(&mut SandboxOptions)) -> Sandbox {
    let mut options = SandboxOptions {
        memory_limit_bytes: 16 << 20,
        cpu_time: Duration::from_millis(100),
        workers: 1,
        ..SandboxOptions::default()
    };
    tune(&mut options);
    Sandbox::new(options).expect("valid options")
}

pub fn compile(sandbox: &Sandbox, source: &str) -> Script {
    match Script::compile(sandbox, "hook.js", source) {
        Ok(script) => script,
        Err(e) => panic!("{source}\nshould compile, got: {e}"),
    }
}

pub async fn run(
    sandbox: &Sandbox,
    source: &str,
    input: Value,
) -> Result<Option<Value>, SandboxError> {
    compile(sandbox, source).call(&input).await
}

/// After an attack, the same sandbox (same worker) still runs an ordinary hook correctly.
pub async fn assert_healthy(sandbox: &Sandbox) {
    let out = run(
        sandbox,
        "function (ctx) { ctx.seen = typeof globalThis.leak; return ctx; }",
        json!({"n": 1}),
    )
    .await;
    assert_eq!(out, Ok(Some(json!({"n": 1, "seen": "undefined"}))));
}

pub fn thrown_message(result: Result<Option<Value>, SandboxError>) -> String {
    match result {
        Err(SandboxError::Thrown { message, .. }) => message,
        other => panic!("expected a thrown error, got {other:?}"),
    }
}
