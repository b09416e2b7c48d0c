//! Runs untrusted JavaScript — gateway hooks and `script` nodes — in QuickJS with a memory cap,
//! a CPU time budget, a stack limit and no I/O; JSON in, JSON out.
//!
//! ```
//! use mcpflow_sandbox::{Sandbox, SandboxError, SandboxOptions, Script};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let sandbox = Sandbox::new(SandboxOptions::default())?;
//! let hook = Script::compile(&sandbox, "redact.js", r#"
//!     function (ctx) {
//!         delete ctx.request.params.arguments.password;
//!         return ctx;
//!     }
//! "#)?;
//! let out = hook.call(&json!({"request": {"params": {"arguments": {"password": "x"}}}})).await?;
//! assert_eq!(out, Some(json!({"request": {"params": {"arguments": {}}}})));
//!
//! // Whatever the script does, the caller gets an error it can report, and the next call works.
//! let spin = Script::compile(&sandbox, "spin.js", "() => { for (;;) {} }")?;
//! assert!(matches!(spin.call(&json!(null)).await, Err(SandboxError::Timeout { .. })));
//! # Ok::<(), SandboxError>(()) }).unwrap();
//! ```
//!
//! # What a script is
//! The source is one of:
//! - an **expression that evaluates to a function**: `function (ctx) { ... return ctx; }`,
//!   `(input) => input.items.length`, `async function (ctx) { ... }`;
//! - an **ES module whose default export is a function**, for helpers around it:
//!   `function helper(x) {...}  export default function (ctx) { return helper(ctx); }`.
//!
//! Both run as modules, so in strict mode. `import` of anything fails (there is no module
//! loader). The function is called with one argument, a deep copy of the input made by
//! `JSON.parse`; its return value (or, if it returns a promise, what the promise resolves to) is
//! converted to JSON: `undefined` becomes `None`; functions, symbols, BigInts, NaN/Infinity,
//! promises and cycles are errors naming the offending path; `toJSON` is honoured, object
//! properties that are `undefined` are left out and in arrays become `null`, as with
//! `JSON.stringify`. `Error` objects keep their `name` and `message`.
//!
//! # Isolation
//! Every call gets a fresh QuickJS runtime and context, prepared by the worker before the call
//! arrives: globals, prototype changes, module state, queued jobs and garbage of one call are
//! gone before the next, whoever made them. The price, measured on the 2-core VM this was built
//! on (`benches/call.rs`): preparing a runtime with its context takes 65–125 µs of worker CPU and
//! freeing it about 20 µs, both off the caller's path; the call itself (load bytecode, parse the
//! input, run, convert the result) about 12 µs, against about 9 µs for a call into a reused
//! context. End to end through the worker thread a trivial hook answers in about 0.12 ms here,
//! most of it thread wake-ups; one worker sustains about 5,500 calls a second.
//!
//! In instructions (callgrind, a gateway `pre` hook): about 1.25 M per call, of which the
//! context's intrinsics take about 0.79 M, the runtime 0.1 M, freeing both 0.27 M and the call
//! itself 0.06 M. Keeping the runtime and giving each call only a fresh context would save
//! about a tenth (`benches/call.rs`, `isolation/fresh_context_on_kept_runtime`) while sharing
//! the runtime's job queue, `Symbol.for` registry, garbage and memory meter between calls;
//! reusing a context would save nearly all of it but leaves whatever a script can reach and
//! change (prototypes, `RegExp` statics, `Error.prepareStackTrace`, loaded modules) to the
//! next call. Neither keeps the invariant above, so the cost stays: it is worker CPU, off the
//! caller's latency when a core is free, and it bounds hook throughput on a small machine.
//!
//! The global object holds only the ECMAScript built-ins and a `console` whose lines are
//! captured into [`CallOutcome::logs`]; there is no `process`, `require`, `fetch`, `std`, `os`,
//! timer, `performance`, `WeakRef` or `FinalizationRegistry`, so no constructor chain can lead
//! out. `eval` and `new Function` exist but throw `TypeError: eval is not supported`: scripts are
//! compiled before the call and the call's context has no compiler. `Atomics.wait` throws
//! rather than blocking.
//!
//! # Limits and errors
//! - Memory: [`SandboxOptions::memory_limit_bytes`] caps the whole heap of a call (input,
//!   intermediate values, result) → [`SandboxError::OutOfMemory`].
//! - CPU: [`SandboxOptions::cpu_time`] of thread CPU time per call, checked by QuickJS's
//!   interrupt handler; the interrupt cannot be caught by the script → [`SandboxError::Timeout`].
//! - Stack: [`SandboxOptions::stack_size`] → [`SandboxError::StackOverflow`].
//! - A promise that can no longer settle (nothing left to run) → [`SandboxError::Unsettled`]
//!   at once, not a hang.
//! - Anything thrown, `Error` or not (`throw 42`, `throw null`, a symbol) →
//!   [`SandboxError::Thrown`] with a readable message, the stack when there is one, and the
//!   value as JSON when it is plain data.
//!
//! Numbers travel as IEEE doubles, as in JavaScript: integers beyond 2^53 lose precision.
//! `Date.now()` and `Math.random()` are available and differ from call to call.

mod budget;
mod compile;
mod console;
mod error;
mod isolate;
mod json;
mod memory;
mod options;
mod pool;
mod sandbox;
mod source;
mod thrown;

pub use console::{LogLevel, LogLine};
pub use error::SandboxError;
pub use isolate::CallOutcome;
pub use options::SandboxOptions;
pub use sandbox::{Sandbox, Script};
