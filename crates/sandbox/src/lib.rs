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
//! # What crosses, exactly or not at all
//! Gateway hooks are a security boundary: what a guard approved must be what goes on. So:
//! - **Keys and strings cross exactly, both ways.** A key holding NUL (`"path\u0000"`) stays
//!   a key of its own; astral characters stay whole. A string or key holding a lone surrogate
//!   (legal in JavaScript, impossible in UTF-8 and so in JSON text) is refused
//!   ([`SandboxError::Output`]), never replaced.
//! - **Numbers**: an input integer an IEEE double would change (beyond ±2^53 and not exactly
//!   representable) is refused ([`SandboxError::Input`]); every other number comes back as the
//!   same value, written as JavaScript writes it (`1.0` comes back as `1`).
//! - **Shape**: input and result nest at most 128 levels; the input is at most
//!   [`SandboxOptions::max_input_bytes`] of JSON text and the result at most
//!   [`SandboxOptions::max_output_bytes`] ([`SandboxError::Input`],
//!   [`SandboxError::OutputTooLarge`]). Object keys may come back in JavaScript's order
//!   (integer-like keys first).
//!
//! `tests/identity.rs` checks this as a property: an identity script returns its input
//! exactly (canonically serialised) or refuses it.
//!
//! # What is metered
//! One memory cap ([`SandboxOptions::memory_limit_bytes`]) covers the script's heap (input,
//! everything it allocates, its result) **and** what the host builds out of its values: the
//! JSON result, a thrown value, log arguments. The host's bytes are charged before they are
//! allocated (array slots, map entries and strings, growth included), so a result small in
//! the heap but large as Rust values (a sparse array of length 2^32−1, one empty object
//! repeated a million times) fails with [`SandboxError::OutOfMemory`] and the host grows by no
//! more than the cap. Strings are copied out only as far as the cap allows.
//!
//! Every text that leaves the sandbox is capped: the result (`max_output_bytes`), all console
//! lines of a call together (`max_output_bytes`; lines past it are counted in one last
//! warning line), a thrown value's message and an error's name and message (8 KiB each, cut
//! with `…`), its stack (16 KiB), a thrown non-`Error` value as JSON (64 KiB, else left out),
//! and the descriptions and JSON pointers in error messages (a key is cut at 64 characters, a
//! pointer at 1 KiB). Console lines are plain text that may hold any character: whoever logs
//! them must escape them (the gateway and the engine do).
//!
//! # Whose fault a failure is
//! [`SandboxError::fault`] sorts failures for policies that may forgive some (a hook's
//! `onHookError: open`): [`Fault::Script`] (it threw, timed out, returned something that is
//! not JSON data or a promise that never settles) is the script's own; [`Fault::Input`] (the
//! input too large, too deep or inexact; out of memory; stack overflow; the result over the
//! output cap) can be caused by whoever shapes the input, so forgiving it would let them switch
//! the script off; [`Fault::Sandbox`] (cancelled, the background queue full, an internal
//! failure) is no verdict at all. Only `Fault::Script` should ever be forgiven.
//!
//! # Queues and cancellation
//! Callers that wait share the foreground workers in arrival order.
//! [`Script::call_in_background`] (fire-and-forget work) runs on one worker of its own behind
//! a bounded queue ([`SandboxOptions::background_queue`]); when that is full the call is
//! refused with [`SandboxError::Busy`] and counted ([`Sandbox::background_dropped`]), so
//! background work neither delays the callers who wait nor piles up. Dropping a call's future
//! cancels it: a queued call never starts, and a running one is stopped at its next interrupt
//! check, as a timeout would stop it, instead of using up its CPU budget.
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
//! Numbers travel as IEEE doubles, as in JavaScript; inputs that would lose precision are
//! refused (see above). `Date.now()` and `Math.random()` are the real clock and randomness and
//! differ from call to call, unless the call fixes them ([`Script::call_deterministic`],
//! [`Determinism`]: the engine does so for script nodes of durable runs, which may be replayed).

mod budget;
mod clock;
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
mod text;
mod thrown;

pub use clock::{Determinism, seed_from};
pub use console::{LogLevel, LogLine};
pub use error::{Fault, SandboxError};
pub use isolate::CallOutcome;
pub use options::SandboxOptions;
pub use sandbox::{Sandbox, Script};
