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
//! Nothing one call does can be seen by the next, whoever made it happen (the script's author or
//! the input steering it). A worker keeps one hardened QuickJS context for many calls (the
//! hardened-JavaScript approach) instead of building a fresh one per call, and keeps that
//! guarantee this way:
//! - **Everything the calls share is frozen** before the first call: every object reachable from
//!   the global object and from the intrinsics no property reaches (generator, iterator and
//!   `%TypedArray%` prototypes, `%ThrowTypeError%`), through properties, accessors and
//!   prototypes (`lockdown.rs`; `tests/calls.rs` walks the same graph from the prototype of every
//!   kind of object a script can make and finds nothing unfrozen). The two accessors that write
//!   the context's own state, `Error.prepareStackTrace` and `Error.stackTraceLimit`, are removed.
//!   So `Array.prototype.push = …`, `globalThis.x = …`, `JSON.parse = …` throw a `TypeError`
//!   (scripts are strict), in the call that tries as in any other. Assigning `constructor`,
//!   `toString`, `name` or `message` (and `valueOf`, `toLocaleString`) to an object of one's
//!   own still works, as ordinary code expects (`this.name = "HttpError"` in an `Error`
//!   subclass).
//! - **A script's own state is the call's own.** The expression form is kept as a factory that
//!   evaluates the expression afresh for every call (closures, and properties set on the
//!   function, are the call's), after checking at compile time that the source is exactly one
//!   expression (it must also parse as `[source]`: text that closes the wrapper to declare
//!   something beside it cannot); otherwise, and for the module form, the module is
//!   instantiated afresh for every call. No import resolves, not even a script's own name
//!   (QuickJS would hand it the first instance loaded under that name), and the `import.meta`
//!   that every instance of a name resolves to is frozen.
//! - **Nothing runs across the boundary.** What a call leaves queued (promise jobs) runs after
//!   its answer and before the next call, inside what is left of its own CPU budget; if it does
//!   not finish, the context is dropped. `Date` and `Math.random` are host functions reading
//!   per-call state: the real clock and a sequence seeded afresh from the OS for every call, or
//!   the caller's [`Determinism`] (so a call cannot learn or steer the next one's numbers).
//! - **Doubt ends the context.** A call stopped midway (time, memory, stack, cancelled, a panic)
//!   drops the context, and a fresh one is prepared after the reply; so does a context after
//!   10,000 calls, 64 scripts, or once the heap it keeps between calls (module instances of the
//!   module form, garbage) grows past 1/16 of the memory limit (at most 1 MiB), which is all a
//!   call can find missing from its limit.
//!
//! What remains shared is invisible to scripts: interned strings and `Symbol.for` keys (a
//! registered symbol is the same with or without an earlier call), hidden classes, and timing.
//!
//! The price, in instructions (callgrind, `bench/sandbox.sh`: a trivial hook with the
//! gateway's request context, one worker, calls back to back): about 92 k per call, of which
//! `JSON.parse` of the input about 32 k and converting the result about 43 k; the fresh runtime
//! and context per call this replaced cost 1.29 M. Preparing a context (runtime, intrinsics,
//! lockdown) costs about 9 M, once per 10,000 calls or after a call stopped midway, after the
//! reply.
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
mod lockdown;
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
