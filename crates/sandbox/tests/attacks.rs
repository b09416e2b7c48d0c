//! Each attack is contained with the right error, and the same worker then runs an ordinary
//! hook as if nothing had happened.

mod common;

use std::time::Duration;

use common::{assert_healthy, compile, run, sandbox, sandbox_with, thrown_message};
use mcpflow_sandbox::{SandboxError, Script};
use serde_json::json;

// ---- escaping through constructors ----

#[tokio::test]
async fn the_function_constructor_cannot_compile_code_at_run_time() {
    let sb = sandbox();
    for escape in [
        r#"() => Object.constructor("return process")()"#,
        r#"() => ({}).constructor.constructor("return this")()"#,
        r#"() => (() => {}).constructor("return globalThis")()"#,
        r#"() => (async function () {}).constructor("return 1")()"#,
        r#"() => (function* () {}).constructor("yield 1")().next()"#,
        r#"() => console.log.constructor("return 1")()"#,
        r#"() => eval("1 + 1")"#,
        r#"() => (0, eval)("this")"#,
    ] {
        let message = thrown_message(run(&sb, escape, json!(null)).await);
        assert_eq!(message, "TypeError: eval is not supported", "{escape}");
    }
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn this_is_undefined_in_a_hook_not_the_host() {
    let sb = sandbox();
    let message = thrown_message(
        run(
            &sb,
            r#"function () { return this.constructor.constructor("return this")() }"#,
            json!(null),
        )
        .await,
    );
    assert!(
        message.starts_with("TypeError: cannot read property 'constructor' of undefined"),
        "{message}"
    );
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn no_host_capability_is_reachable_by_name() {
    let sb = sandbox();
    let out = run(
        &sb,
        r#"() => ["process", "require", "module", "exports", "fetch", "std", "os", "Deno", "Bun",
                  "XMLHttpRequest", "WebAssembly", "setTimeout", "setInterval", "performance",
                  "__dirname", "importScripts", "print", "gc", "scriptArgs", "WeakRef",
                  "FinalizationRegistry"].filter((n) => typeof globalThis[n] !== "undefined")"#,
        json!(null),
    )
    .await;
    assert_eq!(out, Ok(Some(json!([]))));
}

#[tokio::test]
async fn the_global_object_holds_only_ecmascript_builtins_and_console() {
    let sb = sandbox();
    let out = run(
        &sb,
        "() => Object.getOwnPropertyNames(globalThis).sort()",
        json!(null),
    )
    .await;
    let expected = [
        "AggregateError",
        "Array",
        "ArrayBuffer",
        "AsyncDisposableStack",
        "Atomics",
        "BigInt",
        "BigInt64Array",
        "BigUint64Array",
        "Boolean",
        "DataView",
        "Date",
        "DisposableStack",
        "Error",
        "EvalError",
        "Float16Array",
        "Float32Array",
        "Float64Array",
        "Function",
        "Infinity",
        "Int16Array",
        "Int32Array",
        "Int8Array",
        "InternalError",
        "Iterator",
        "JSON",
        "Map",
        "Math",
        "NaN",
        "Number",
        "Object",
        "Promise",
        "Proxy",
        "RangeError",
        "ReferenceError",
        "Reflect",
        "RegExp",
        "Set",
        "SharedArrayBuffer",
        "String",
        "SuppressedError",
        "Symbol",
        "SyntaxError",
        "TypeError",
        "URIError",
        "Uint16Array",
        "Uint32Array",
        "Uint8Array",
        "Uint8ClampedArray",
        "WeakMap",
        "WeakSet",
        "console",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "eval",
        "globalThis",
        "isFinite",
        "isNaN",
        "parseFloat",
        "parseInt",
        "queueMicrotask",
        "undefined",
        "unescape",
    ];
    let mut expected: Vec<&str> = expected.to_vec();
    expected.sort();
    assert_eq!(out, Ok(Some(json!(expected))));
}

#[tokio::test]
async fn imports_find_no_module_loader() {
    let sb = sandbox();
    let err = Script::compile(
        &sb,
        "m.js",
        "import fs from 'fs';\nexport default () => fs;",
    )
    .expect_err("no module can be imported");
    assert!(
        matches!(&err, SandboxError::Thrown { message, .. } if message.contains("resolving module 'fs'") && message.contains("scripts cannot import modules")),
        "{err:?}"
    );
    let message = thrown_message(run(&sb, "async () => await import('os')", json!(null)).await);
    assert!(message.contains("resolving module 'os'"), "{message}");
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn a_script_cannot_import_itself_and_reach_an_earlier_calls_instance() {
    // Calls share a context, which keeps every module instance loaded in it: QuickJS would
    // hand an import of the script's own name the first instance, an earlier call's.
    let sb = sandbox();
    let err = Script::compile(
        &sb,
        "hook.js",
        "import first from 'hook.js';\nexport default () => first;",
    )
    .expect_err("not even its own name resolves");
    assert!(
        matches!(&err, SandboxError::Thrown { message, .. } if message.contains("scripts cannot import modules")),
        "{err:?}"
    );
    let script = compile(&sb, "async () => (await import('hook.js')).default");
    for _ in 0..2 {
        let message = thrown_message(script.call(&json!(null)).await);
        assert!(message.contains("resolving module 'hook.js'"), "{message}");
    }
    assert_healthy(&sb).await;
}

// ---- prototype pollution ----

#[tokio::test]
async fn prototype_pollution_is_refused_and_nothing_reaches_the_next_call() {
    let sb = sandbox();
    // Each attempt is made and caught; every one must have been refused.
    let attempts = r#"function (ctx) {
        const attempts = [
            () => { Object.prototype.polluted = "yes"; },
            () => { Array.prototype.push = () => { throw new Error("hijacked"); }; },
            () => { JSON.parse = () => ({ hijacked: true }); },
            () => { Object.defineProperty(Object.prototype, "isAdmin", { get() { return true }, enumerable: true }); },
            () => { globalThis.leak = "from the first call"; },
            () => { Object.setPrototypeOf(Object.prototype, { polluted: "yes" }); },
            () => { Object.prototype.toString = () => "hijacked"; },
            () => { Error.prepareStackTrace = () => "hijacked"; },
            () => { Error.stackTraceLimit = 0; },
            () => { Date.prototype.setTime(0); },
            () => { console.log = () => {}; },
            () => { Math.random = () => 4; },
            () => { Date.now = () => 0; },
            () => { Promise.prototype.then = () => "hijacked"; },
            () => { Object.getPrototypeOf(function* () {}).prototype.next = () => "hijacked"; },
            () => { Object.getPrototypeOf([][Symbol.iterator]()).next = () => "hijacked"; },
            () => { Object.getPrototypeOf(Int8Array).prototype.fill = () => "hijacked"; },
            () => { Iterator.prototype.map = () => "hijacked"; },
            () => { RegExp.prototype.exec = () => null; },
            () => { Function.prototype.call = () => "hijacked"; },
            () => { delete globalThis.String; },
            () => { import.meta.leak = "from the first call"; },
            // Built-ins with internal state of their own, driven through their methods.
            () => { RegExp.prototype.compile("leak"); },
            () => { Array.prototype.push.call(Array.prototype, "leak"); },
            () => { Map.prototype.set.call(Map.prototype, "leak", 1); },
            () => { Object.defineProperty(globalThis, "leak", { value: 1 }); },
        ];
        // On a frozen target this defines nothing and throws nothing; the next call checks.
        Error.captureStackTrace(Error);
        return attempts.map((attempt, i) => {
            try { attempt(); return `attempt ${i} was allowed`; } catch (e) { return e.name; }
        });
    }"#;
    let polluted = run(&sb, attempts, json!({})).await;
    let refused: Vec<&str> = vec!["TypeError"; 26];
    assert_eq!(polluted, Ok(Some(json!(refused))));
    let clean = run(
        &sb,
        r#"function (ctx) {
            const a = [];
            a.push(1);
            return [({}).polluted, ({}).isAdmin, JSON.parse("[2]")[0], a.length, typeof leak,
                    String({}), typeof Error.prepareStackTrace, Object.keys(import.meta).length,
                    [1, 2].values().map((x) => x * 2).toArray(), /b/.exec("abc").index,
                    typeof String, Object.hasOwn(Error, "stack")];
        }"#,
        json!({}),
    )
    .await;
    assert_eq!(
        clean,
        Ok(Some(json!([
            null,
            null,
            2,
            1,
            "undefined",
            "[object Object]",
            "undefined",
            0,
            [2, 4],
            1,
            "function",
            false
        ])))
    );
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn a_proto_key_in_the_input_is_data_not_a_prototype() {
    let sb = sandbox();
    let input = serde_json::from_str(r#"{"__proto__": {"isAdmin": true}, "name": "x"}"#).unwrap();
    let out = run(
        &sb,
        "(ctx) => [ctx.isAdmin === undefined, Object.getPrototypeOf(ctx) === Object.prototype, ctx.__proto__.isAdmin]",
        input,
    )
    .await;
    assert_eq!(out, Ok(Some(json!([true, true, true]))));
}

#[tokio::test]
async fn a_trap_on_tojson_cannot_hang_the_conversion() {
    let sb = sandbox();
    let out = run(
        &sb,
        r#"() => ({ a: 1, get toJSON() { for (;;) {} } })"#,
        json!(null),
    )
    .await;
    assert!(matches!(out, Err(SandboxError::Timeout { .. })), "{out:?}");
    assert_healthy(&sb).await;
}

// ---- CPU ----

#[tokio::test]
async fn an_endless_loop_is_stopped_at_the_budget() {
    let sb = sandbox();
    for looping in [
        "() => { while (true) {} }",
        "() => { try { while (true) {} } catch (e) { return 'caught'; } }",
        "() => { try { while (true) {} } finally { while (true) {} } }",
        "() => { for (;;) { try { for (;;) {} } catch (e) {} } }",
        "async () => { await null; while (true) {} }",
        "() => { const spin = () => { queueMicrotask(spin); }; spin(); return new Promise(() => {}); }",
        "() => /(a+)+$/.test('a'.repeat(40) + 'b')",
        "() => [3, 2, 1].sort(() => { for (;;) {} })",
    ] {
        let out = run(&sb, looping, json!(null)).await;
        assert_eq!(
            out,
            Err(SandboxError::Timeout {
                budget: Duration::from_millis(100)
            }),
            "{looping}"
        );
    }
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn a_loop_at_the_top_level_of_a_module_is_stopped_at_compile_time() {
    let sb = sandbox();
    let err = Script::compile(&sb, "m.js", "while (true) {}\nexport default () => 1;").unwrap_err();
    assert!(matches!(err, SandboxError::Timeout { .. }), "{err:?}");
}

#[tokio::test]
async fn a_smaller_budget_per_script_is_honoured() {
    let sb = sandbox();
    let script = compile(&sb, "() => { for (;;) {} }").with_cpu_time(Duration::from_millis(10));
    let out = script.call(&json!(null)).await;
    assert_eq!(
        out,
        Err(SandboxError::Timeout {
            budget: Duration::from_millis(10)
        })
    );
    let message = out.unwrap_err().to_string();
    assert!(message.contains("CPU time budget of 10ms"), "{message}");
}

#[tokio::test]
async fn atomics_wait_throws_instead_of_blocking_the_worker() {
    let sb = sandbox();
    let message = thrown_message(
        run(
            &sb,
            "() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)",
            json!(null),
        )
        .await,
    );
    assert_eq!(message, "TypeError: cannot block in this thread");
    assert_healthy(&sb).await;
}

// ---- memory ----

#[tokio::test]
async fn memory_bombs_stop_at_the_cap() {
    let sb = sandbox_with(|o| o.memory_limit_bytes = 8 << 20);
    for bomb in [
        "() => { const a = []; for (;;) a.push(new Array(100000).fill(1)); }",
        "() => { const a = []; for (let i = 0;; i++) a.push({ i, s: 'k' + i }); }",
        "() => { let o = {}; for (;;) o = { next: o }; }",
        "() => new ArrayBuffer(64 << 20)",
        "() => 'x'.repeat(32 << 20)",
        "() => { const m = new Map(); for (let i = 0;; i++) m.set(i, new Array(1000).fill(i)); }",
    ] {
        let out = run(&sb, bomb, json!(null)).await;
        assert_eq!(
            out,
            Err(SandboxError::OutOfMemory { limit: 8 << 20 }),
            "{bomb}"
        );
    }
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn a_memory_bomb_that_catches_and_retries_runs_out_of_time_instead() {
    let sb = sandbox_with(|o| o.memory_limit_bytes = 8 << 20);
    let out = run(
        &sb,
        "() => { for (;;) { try { const a = []; for (;;) a.push(new Array(1000).fill(0)); } catch (e) {} } }",
        json!(null),
    )
    .await;
    assert!(matches!(out, Err(SandboxError::Timeout { .. })), "{out:?}");
    assert_healthy(&sb).await;
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_host_process_does_not_grow_with_a_memory_bomb() {
    fn resident_bytes() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }
    let sb = sandbox_with(|o| o.memory_limit_bytes = 32 << 20);
    let script = compile(
        &sb,
        "() => { const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length); }",
    );
    let before = resident_bytes();
    for _ in 0..5 {
        let out = script.call(&json!(null)).await;
        assert_eq!(out, Err(SandboxError::OutOfMemory { limit: 32 << 20 }));
    }
    let grown = resident_bytes().saturating_sub(before);
    // Unchecked, this loop would take every byte the machine has; the cap holds it to 32 MiB a
    // call, and each call's heap is freed before the next.
    assert!(grown < 128 << 20, "resident memory grew by {grown} bytes");
}

// ---- stack ----

#[tokio::test]
async fn deep_recursion_is_a_stack_overflow() {
    let sb = sandbox();
    for deep in [
        "() => { const f = (n) => f(n + 1) + 1; return f(0); }",
        "() => { const p = new Proxy({}, { get: (t, k, r) => r[k] }); return p.x; }",
        "() => { const o = { toString() { return `${this}`; } }; return String(o); }",
        "() => { const f = async (n) => (await null, f(n + 1)); const g = (n) => g(n + 1); return g(0); }",
        "() => { let a = []; for (let i = 0; i < 50000; i++) a = [a]; return JSON.stringify(a); }",
    ] {
        let out = run(&sb, deep, json!(null)).await;
        assert_eq!(
            out,
            Err(SandboxError::StackOverflow { limit: 512 << 10 }),
            "{deep}"
        );
    }
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn a_deeply_nested_result_is_refused_without_recursing_in_the_host() {
    let sb = sandbox();
    let out = run(
        &sb,
        "() => { let a = []; for (let i = 0; i < 100000; i++) a = [a]; return a; }",
        json!(null),
    )
    .await;
    match out {
        Err(SandboxError::Output { reason }) => {
            assert!(
                reason.starts_with("nesting deeper than 128 levels at /0/0/0"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn a_deeply_nested_input_is_refused_before_it_is_copied() {
    let sb = sandbox();
    let mut input = json!(1);
    for _ in 0..100_000 {
        input = serde_json::Value::Array(vec![input]);
    }
    let out = compile(&sb, "(x) => 1").call(&input).await;
    assert_eq!(
        out,
        Err(SandboxError::Input {
            reason: "it is nested deeper than 128 levels".into()
        })
    );
    // Dropping a deep `Value` recurses; do it on a thread with room for that.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || drop(input))
        .unwrap()
        .join()
        .unwrap();
    let mut input = json!(1);
    for _ in 0..127 {
        input = json!([input]);
    }
    assert_eq!(
        compile(&sb, "(x) => 1").call(&input).await,
        Ok(Some(json!(1)))
    );
}

// ---- huge strings and results ----

#[tokio::test]
async fn huge_strings_fail_cleanly() {
    let sb = sandbox();
    let message = thrown_message(run(&sb, "() => 'x'.repeat(2 ** 31)", json!(null)).await);
    assert_eq!(message, "RangeError: invalid repeat count");
    // Concatenation builds ropes, so the length limit is reached before the memory limit.
    let message = thrown_message(
        run(
            &sb,
            "() => { let s = 'x'; for (;;) s = s + s; }",
            json!(null),
        )
        .await,
    );
    assert_eq!(message, "InternalError: string too long");
    let out = run(&sb, "() => 'x'.repeat(2 ** 28)", json!(null)).await;
    assert_eq!(out, Err(SandboxError::OutOfMemory { limit: 16 << 20 }));
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn a_result_over_the_output_cap_is_refused() {
    // Room in time and memory, so that only the output cap can stop these: building 100,000
    // keys took longer than the default 100 ms of CPU on a loaded CI machine.
    let sb = sandbox_with(|o| {
        o.max_output_bytes = 64 << 10;
        o.cpu_time = std::time::Duration::from_secs(5);
        o.memory_limit_bytes = 128 << 20;
    });
    let too_big = SandboxError::OutputTooLarge { limit: 65536 };
    for big in [
        "() => 'x'.repeat(100000)",
        // A small heap can describe an exponentially large result: x = [x, x], 40 times.
        "() => { let x = ['x'.repeat(1000)]; for (let i = 0; i < 40; i++) x = [x, x]; return x; }",
        "() => { const a = []; a.length = 2 ** 32 - 1; return a; }",
        "() => { const o = {}; for (let i = 0; i < 100000; i++) o['k' + i] = i; return o; }",
    ] {
        assert_eq!(
            run(&sb, big, json!(null)).await,
            Err(too_big.clone()),
            "{big}"
        );
    }
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn hostile_results_are_contained_while_they_are_converted() {
    let sb = sandbox();
    let message = thrown_message(
        run(
            &sb,
            "() => ({ get secret() { throw new Error('no peeking'); } })",
            json!(null),
        )
        .await,
    );
    assert_eq!(message, "Error: no peeking");
    let message = thrown_message(
        run(
            &sb,
            "() => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; }",
            json!(null),
        )
        .await,
    );
    assert!(message.starts_with("TypeError: revoked proxy"), "{message}");
    let out = run(
        &sb,
        "() => new Proxy([], { get: (t, k) => (k === 'length' ? 'many' : 1) })",
        json!(null),
    )
    .await;
    assert_eq!(
        out,
        Err(SandboxError::Output {
            reason: "an array whose length is not a number at the top level".into()
        })
    );
    let out = run(&sb, "() => ({ s: 'lone \\udc00' })", json!(null)).await;
    assert_eq!(
        out,
        Err(SandboxError::Output {
            reason: "a string that is not valid Unicode (a lone surrogate) at /s".into()
        })
    );
    // A proxy that hands out itself at every key is a cycle; one that hands out fresh proxies
    // is an endless tree, cut at the depth limit.
    let endless = r#"() => {
        const make = (fresh) => {
            const p = new Proxy({}, {
                ownKeys: () => ["next"],
                getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }),
                get: () => (fresh ? make(true) : p),
            });
            return p;
        };
        return [make(false), make(true)];
    }"#;
    let out = run(&sb, endless, json!(null)).await;
    assert_eq!(
        out,
        Err(SandboxError::Output {
            reason: "a cycle (an object that contains itself) at /0/next".into()
        })
    );
    let out = run(
        &sb,
        &endless.replace("[make(false), make(true)]", "make(true)"),
        json!(null),
    )
    .await;
    assert!(
        matches!(&out, Err(SandboxError::Output { reason }) if reason.starts_with("nesting deeper than 128 levels at /next/next")),
        "{out:?}"
    );
    assert_healthy(&sb).await;
}

// ---- promises ----

#[tokio::test]
async fn a_promise_that_never_settles_is_an_error_not_a_hang() {
    let sb = sandbox();
    for pending in [
        "() => new Promise(() => {})",
        "async () => { await new Promise(() => {}); return 1; }",
        "async () => { const never = new Promise(() => {}); return Promise.all([1, never]); }",
    ] {
        let out = run(&sb, pending, json!(null)).await;
        assert_eq!(out, Err(SandboxError::Unsettled), "{pending}");
    }
    let err = Script::compile(
        &sb,
        "m.js",
        "await new Promise(() => {});\nexport default () => 1;",
    )
    .unwrap_err();
    assert_eq!(err, SandboxError::Unsettled);
    assert_eq!(
        SandboxError::Unsettled.to_string(),
        "the script's promise never settled (nothing left to run, and it is still pending)"
    );
    assert_healthy(&sb).await;
}

// ---- throwing things that are not errors ----

#[tokio::test]
async fn non_error_throws_are_reported_readably() {
    let sb = sandbox();
    let cases = [
        ("() => { throw 42 }", "42", Some(json!(42))),
        ("() => { throw 1.5 }", "1.5", Some(json!(1.5))),
        (
            "() => { throw 'no access' }",
            "no access",
            Some(json!("no access")),
        ),
        (
            "() => { throw { code: 403, reason: 'denied' } }",
            r#"{"code":403,"reason":"denied"}"#,
            Some(json!({"code": 403, "reason": "denied"})),
        ),
        (
            "() => { throw [1, 'two'] }",
            r#"[1,"two"]"#,
            Some(json!([1, "two"])),
        ),
        ("() => { throw null }", "null", Some(json!(null))),
        ("() => { throw undefined }", "undefined", None),
        ("() => { throw true }", "true", Some(json!(true))),
        ("() => { throw Symbol('secret') }", "Symbol(secret)", None),
        ("() => { throw 10n }", "10n", None),
        (
            "() => { throw function named() {} }",
            "[Function named]",
            None,
        ),
        ("() => { throw NaN }", "NaN", None),
        (
            "() => { const o = {}; o.self = o; throw o; }",
            r#"{"self":"[Circular]"}"#,
            None,
        ),
        (
            "async () => { throw 'rejected' }",
            "rejected",
            Some(json!("rejected")),
        ),
        (
            "() => Promise.reject({ code: 1 })",
            r#"{"code":1}"#,
            Some(json!({"code": 1})),
        ),
    ];
    for (source, message, value) in cases {
        let out = run(&sb, source, json!(null)).await;
        assert_eq!(
            out,
            Err(SandboxError::Thrown {
                message: message.into(),
                value,
                stack: None
            }),
            "{source}"
        );
    }
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn hostile_thrown_values_cannot_break_the_error_report() {
    let sb = sandbox();
    // Getters that throw are skipped.
    let out = run(
        &sb,
        "() => { throw { get a() { throw new Error('inner') } } }",
        json!(null),
    )
    .await;
    assert!(
        matches!(&out, Err(SandboxError::Thrown { message, value: None, .. }) if message == "[object Object]"),
        "{out:?}"
    );
    let out = run(
        &sb,
        "() => { const e = new Error('x'); Object.defineProperty(e, 'message', { get() { throw 1 } }); throw e; }",
        json!(null),
    )
    .await;
    assert!(
        matches!(&out, Err(SandboxError::Thrown { message, .. }) if message == "Error"),
        "{out:?}"
    );
    // A getter that loops while we render it runs out of the same budget.
    let out = run(
        &sb,
        "() => { throw { get a() { for (;;) {} } } }",
        json!(null),
    )
    .await;
    assert!(matches!(out, Err(SandboxError::Timeout { .. })), "{out:?}");
    let out = run(
        &sb,
        "() => { throw new Proxy({}, { ownKeys() { for (;;) {} } }) }",
        json!(null),
    )
    .await;
    assert!(matches!(out, Err(SandboxError::Timeout { .. })), "{out:?}");
    assert_healthy(&sb).await;
}

#[tokio::test]
async fn errors_carry_their_name_message_and_a_stack_into_the_source() {
    let sb = sandbox();
    let out = run(
        &sb,
        "function (ctx) {\n  class Denied extends Error { constructor(m) { super(m); this.name = 'Denied'; } }\n  throw new Denied('tool not allowed');\n}",
        json!(null),
    )
    .await;
    match out {
        Err(SandboxError::Thrown {
            message,
            value: None,
            stack: Some(stack),
        }) => {
            assert_eq!(message, "Denied: tool not allowed");
            assert!(stack.contains("hook.js:3:"), "{stack}");
        }
        other => panic!("{other:?}"),
    }
    let out = run(&sb, "(ctx) => ctx.missing.field", json!({})).await;
    match out {
        Err(SandboxError::Thrown {
            message,
            stack: Some(stack),
            ..
        }) => {
            assert_eq!(
                message,
                "TypeError: cannot read property 'field' of undefined"
            );
            // Column 8 of the author's line 1, not of the wrapper around it.
            assert!(stack.contains("hook.js:1:"), "{stack}");
            assert!(!stack.contains("hook.js:1:2"), "{stack}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_ever_growing_promise_chain_is_stopped_by_memory_or_time() {
    let sb = sandbox_with(|o| o.memory_limit_bytes = 8 << 20);
    let out = run(
        &sb,
        "() => { const spin = () => Promise.resolve().then(spin); return spin(); }",
        json!(null),
    )
    .await;
    // Which limit trips first depends on the machine's speed; either way it is stopped and
    // reported as what it is, never as a promise that merely did not settle.
    assert!(
        matches!(
            out,
            Err(SandboxError::OutOfMemory { .. } | SandboxError::Timeout { .. })
        ),
        "{out:?}"
    );
    assert_healthy(&sb).await;
}
