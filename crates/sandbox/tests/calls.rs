//! Ordinary use: the source forms, JSON in and out, promises, errors at compile time, logs,
//! isolation between calls, concurrency.

mod common;

use std::time::Duration;

use common::{compile, run, sandbox, sandbox_with};
use mcpflow_sandbox::{LogLevel, LogLine, Sandbox, SandboxError, SandboxOptions, Script};
use serde_json::{Value, json};

// ---- source forms ----

#[tokio::test]
async fn a_hook_is_a_function_expression_that_rewrites_its_context() {
    let sb = sandbox();
    let hook = r#"
        // redact secrets before the call goes upstream
        function (ctx) {
            const args = ctx.request.params.arguments;
            if ("apiKey" in args) args.apiKey = "***";
            ctx.metadata.redacted = true;
            return ctx;
        }
    "#;
    let input = json!({
        "request": {"method": "tools/call", "params": {"name": "search", "arguments": {"q": "x", "apiKey": "secret"}}},
        "metadata": {"clientId": "c1"}
    });
    let out = run(&sb, hook, input).await;
    assert_eq!(
        out,
        Ok(Some(json!({
            "request": {"method": "tools/call", "params": {"name": "search", "arguments": {"q": "x", "apiKey": "***"}}},
            "metadata": {"clientId": "c1", "redacted": true}
        })))
    );
}

#[tokio::test]
async fn arrow_functions_async_functions_and_trailing_semicolons_are_accepted() {
    let sb = sandbox();
    assert_eq!(
        run(&sb, "(x) => x * 2;", json!(21)).await,
        Ok(Some(json!(42)))
    );
    assert_eq!(
        run(&sb, "x => ({ doubled: x * 2 })", json!(2)).await,
        Ok(Some(json!({"doubled": 4})))
    );
    assert_eq!(
        run(&sb, "async function (x) { const y = await Promise.resolve(x + 1); await null; return [y, await y]; }", json!(1)).await,
        Ok(Some(json!([2, 2])))
    );
}

#[tokio::test]
async fn a_module_can_define_helpers_around_its_default_export() {
    let sb = sandbox();
    let source = r#"
        const VERSION = 2;
        function tag(item) { return { ...item, v: VERSION }; }
        export default async function (input) {
            await null;
            return input.items.map(tag);
        }
    "#;
    assert_eq!(
        run(&sb, source, json!({"items": [{"id": 1}, {"id": 2}]})).await,
        Ok(Some(json!([{"id": 1, "v": 2}, {"id": 2, "v": 2}])))
    );
    let top_level_await =
        "const base = await Promise.resolve(10);\nexport default (x) => base + x;";
    assert_eq!(
        run(&sb, top_level_await, json!(5)).await,
        Ok(Some(json!(15)))
    );
}

#[tokio::test]
async fn a_source_that_is_not_a_function_is_refused_at_compile_time() {
    let sb = sandbox();
    for (source, found) in [
        ("42", "int 42"),
        ("({ not: 'a function' })", r#"object {"not":"a function"}"#),
        ("export default 'text';", "string text"),
        (
            "export const helper = 1;",
            "a module without a default export",
        ),
    ] {
        let err = Script::compile(&sb, "s.js", source).unwrap_err();
        assert_eq!(
            err,
            SandboxError::NotAFunction {
                found: found.into()
            },
            "{source}"
        );
    }
    let err = Script::compile(&sb, "s.js", "42").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the script must evaluate to a function, but it evaluated to int 42"
    );
}

#[tokio::test]
async fn a_module_whose_top_level_throws_is_refused_at_compile_time() {
    let sb = sandbox();
    let err = Script::compile(
        &sb,
        "m.js",
        "const config = JSON.parse('{oops');\nexport default () => config;",
    )
    .unwrap_err();
    assert!(
        matches!(&err, SandboxError::Thrown { message, stack: Some(stack), .. }
            if message.starts_with("SyntaxError: ") && stack.contains("m.js:1:")),
        "{err:?}"
    );
}

#[test]
fn scripts_and_sandboxes_can_be_shared_across_tasks() {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    shareable::<Sandbox>();
    shareable::<Script>();
    shareable::<SandboxError>();
}

#[tokio::test]
async fn syntax_errors_point_at_the_authors_line_and_column() {
    let sb = sandbox();
    let cases = [
        // (source, line, column, message)
        (
            "function (ctx) {\n  return ctx.\n}",
            3,
            1,
            "expecting field name",
        ),
        ("function (ctx) { retur x; }", 1, 24, "expecting ';'"),
        (
            "(x) => { é + }",
            1,
            14,
            "unexpected token in expression: '}'",
        ),
        (
            "function (ctx) {\n  return ctx;\n\n",
            2,
            13,
            "unexpected end of the script",
        ),
        ("(x) => [x,", 1, 11, "unexpected end of the script"),
        (
            "const a = 1;\nexport default function (x) { return a + ; }",
            2,
            42,
            "unexpected token in expression: ';'",
        ),
    ];
    for (source, line, column, message) in cases {
        let err = Script::compile(&sb, "hook.js", source).unwrap_err();
        assert_eq!(
            err,
            SandboxError::Syntax {
                script: "hook.js".into(),
                line,
                column,
                message: message.into()
            },
            "{source}"
        );
    }
    let err = Script::compile(&sb, "hook.js", "function (ctx) { retur x; }").unwrap_err();
    assert_eq!(err.to_string(), "hook.js:1:24: syntax error: expecting ';'");
}

// ---- JSON in and out ----

#[tokio::test]
async fn json_round_trips_through_the_identity_function() {
    let sb = sandbox();
    let identity = compile(&sb, "(x) => x");
    let values = [
        json!(null),
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5),
        json!(-2.5e-300),
        json!(1e300),
        json!(9_007_199_254_740_991_i64),
        json!(-9_007_199_254_740_991_i64),
        json!(""),
        json!("plain ascii"),
        json!("ünïcödé, 中文, emoji 🎉👩‍👩‍👧, combining é, rtl עברית"),
        json!("quotes \" backslash \\ newline \n tab \t nul \u{0} del \u{7f}"),
        json!([]),
        json!({}),
        json!([1, "two", [3, [4, [5]]], {"six": 6}]),
        json!({"z": 1, "a": 2, "m": {"nested": {"deep": [true, false, null]}}, "é": "key order kept"}),
    ];
    for value in values {
        assert_eq!(
            identity.call(&value).await,
            Ok(Some(value.clone())),
            "{value}"
        );
    }
}

#[tokio::test]
async fn numbers_come_back_as_json_would_write_them() {
    let sb = sandbox();
    let out = run(
        &sb,
        "() => [2.0, 0.1 + 0.2, -0, 2 ** 53, 1e21, 7 / 2]",
        json!(null),
    )
    .await;
    assert_eq!(
        out,
        Ok(Some(json!([
            2,
            0.30000000000000004,
            0,
            9_007_199_254_740_992_i64,
            1e21,
            3.5
        ])))
    );
}

#[tokio::test]
async fn undefined_is_none_and_is_dropped_inside_objects_as_json_does() {
    let sb = sandbox();
    assert_eq!(run(&sb, "() => undefined", json!(null)).await, Ok(None));
    assert_eq!(run(&sb, "() => {}", json!(null)).await, Ok(None));
    assert_eq!(run(&sb, "async () => {}", json!(null)).await, Ok(None));
    assert_eq!(
        run(
            &sb,
            "() => ({ a: undefined, b: [undefined, , 1], c: 1 })",
            json!(null)
        )
        .await,
        Ok(Some(json!({"b": [null, null, 1], "c": 1})))
    );
}

#[tokio::test]
async fn tojson_dates_and_errors_convert_sensibly() {
    let sb = sandbox();
    let out = run(
        &sb,
        r#"() => ({
            date: new Date(0),
            custom: { toJSON(key) { return "custom:" + key; } },
            error: new TypeError("bad"),
            map: new Map([[1, 2]]),
        })"#,
        json!(null),
    )
    .await;
    assert_eq!(
        out,
        Ok(Some(json!({
            "date": "1970-01-01T00:00:00.000Z",
            "custom": "custom:custom",
            "error": {"name": "TypeError", "message": "bad"},
            "map": {},
        })))
    );
}

#[tokio::test]
async fn values_json_cannot_hold_are_refused_with_their_path() {
    let sb = sandbox();
    let cases = [
        (
            "() => ({ a: { b: [1, function handler() {}] } })",
            "a function ([Function handler]) at /a/b/1",
        ),
        (
            "() => ({ s: Symbol('tag') })",
            "a symbol (Symbol(tag)) at /s",
        ),
        (
            "() => ({ n: 10n })",
            "a BigInt (10n; convert it with Number() or String()) at /n",
        ),
        ("() => [1 / 0]", "Infinity (not a finite number) at /0"),
        (
            "() => ({ 'a/b': { '~': NaN } })",
            "NaN (not a finite number) at /a~1b/~0",
        ),
        (
            "() => { const o = { list: [] }; o.list.push(o); return o; }",
            "a cycle (an object that contains itself) at /list/0",
        ),
        (
            "() => ({ p: Promise.resolve(1) })",
            "a promise (await it before returning the result) at /p",
        ),
        (
            "() => () => 1",
            "a function ([Function anonymous]) at the top level",
        ),
    ];
    for (source, reason) in cases {
        assert_eq!(
            run(&sb, source, json!(null)).await,
            Err(SandboxError::Output {
                reason: reason.into()
            }),
            "{source}"
        );
    }
    // The same object twice is not a cycle.
    assert_eq!(
        run(
            &sb,
            "() => { const x = { v: 1 }; return [x, x]; }",
            json!(null)
        )
        .await,
        Ok(Some(json!([{"v": 1}, {"v": 1}])))
    );
}

#[tokio::test]
async fn the_input_is_a_copy_not_shared_with_other_calls() {
    let sb = sandbox();
    let script = compile(&sb, "(x) => { x.list.push(x.list.length); return x.list; }");
    let input = json!({"list": [0]});
    assert_eq!(script.call(&input).await, Ok(Some(json!([0, 1]))));
    assert_eq!(script.call(&input).await, Ok(Some(json!([0, 1]))));
    assert_eq!(input, json!({"list": [0]}));
}

// ---- isolation ----

#[tokio::test]
async fn nothing_one_call_leaves_behind_is_seen_by_the_next() {
    let sb = sandbox();
    let counter = compile(
        &sb,
        r#"let calls = 0;
           const memo = [];
           export default function () {
               calls += 1;
               memo.push(calls);
               const refused = [];
               try { globalThis.seen = 1; } catch (e) { refused.push(e.name); }
               try { Array.prototype.extra = "leaked"; } catch (e) { refused.push(e.name); }
               return [calls, memo.length, refused, typeof seen, [].extra ?? null];
           }"#,
    );
    for _ in 0..3 {
        assert_eq!(
            counter.call(&json!(null)).await,
            Ok(Some(json!([
                1,
                1,
                ["TypeError", "TypeError"],
                "undefined",
                null
            ])))
        );
    }
    let other = compile(&sb, "() => [typeof seen, [].extra ?? null, typeof calls]");
    assert_eq!(
        other.call(&json!(null)).await,
        Ok(Some(json!(["undefined", null, "undefined"])))
    );
}

#[tokio::test]
async fn an_expression_is_evaluated_afresh_for_every_call() {
    // A worker keeps an expression's module and evaluates the expression per call: closures an
    // expression makes, and properties on the function it yields, are the call's own.
    let sb = sandbox();
    for source in [
        "(() => { let n = 0; return () => ++n; })()",
        "function f() { f.count = (f.count || 0) + 1; return f.count; }",
        "(() => { const memo = []; return () => memo.push(1); })()",
        // Text that closes the expression to declare state beside it is not one expression:
        // it runs as a module instantiated per call, so the state is still the call's own.
        "() => ++n); let n = 0; (0",
        // An expression that awaits at the top level needs the module's top level.
        "await Promise.resolve(() => { globalThis.n ??= 0; return 1; })",
    ] {
        let script = compile(&sb, source);
        for _ in 0..3 {
            let out = script.call(&json!(null)).await;
            let expected = if source.starts_with("await") {
                Err(())
            } else {
                Ok(Some(json!(1)))
            };
            match expected {
                Ok(value) => assert_eq!(out, Ok(value), "{source}"),
                // `globalThis` is frozen: the assignment is refused every time.
                Err(()) => assert!(
                    matches!(&out, Err(SandboxError::Thrown { message, .. }) if message.starts_with("TypeError")),
                    "{source}: {out:?}"
                ),
            }
        }
    }
}

#[tokio::test]
async fn ordinary_code_that_assigns_over_built_in_names_still_works() {
    // Built-in prototypes are frozen; assigning a name they hold to an object of one's own is
    // what ordinary code does, and must keep working.
    let sb = sandbox();
    let out = run(
        &sb,
        r#"function () {
            class HttpError extends Error {
                constructor(status) { super(`status ${status}`); this.name = "HttpError"; this.status = status; }
            }
            const e = new HttpError(403);
            const o = {};
            o.toString = () => "custom";
            o.valueOf = () => 42;
            o.constructor = "mine";
            function Legacy() {}
            Legacy.prototype.toString = function () { return "legacy"; };
            const f = function () {};
            f.toString = () => "f";
            return [e.name, e.message, String(e), e instanceof Error, String(o), o + 0,
                    o.constructor, String(new Legacy()), String(f), Object.keys(o)];
        }"#,
        json!(null),
    )
    .await;
    assert_eq!(
        out,
        Ok(Some(json!([
            "HttpError",
            "status 403",
            "HttpError: status 403",
            true,
            "custom",
            42,
            "mine",
            "legacy",
            "f",
            ["toString", "valueOf", "constructor"]
        ])))
    );
}

#[tokio::test]
async fn every_object_the_calls_share_is_frozen() {
    // Walks from the global object and from the prototype of every kind of object a script
    // can make, through properties, accessors and prototypes, and lists what is not frozen.
    let sb = sandbox();
    let out = run(
        &sb,
        r#"async function () {
            const samples = {
                generator: (function* () {})(),
                asyncGenerator: (async function* () {})(),
                asyncFunction: async function () {},
                arrow: async () => {},
                arrayIterator: [][Symbol.iterator](),
                arrayEntries: [].entries(),
                mapIterator: new Map().keys(),
                setIterator: new Set().values(),
                stringIterator: ""[Symbol.iterator](),
                regexpIterator: "a".matchAll(/a/g),
                iteratorHelper: [].values().filter(() => true),
                iteratorWrap: Iterator.from({ next() { return { done: true }; } }),
                iteratorConcat: Iterator.concat([]),
                typedArray: new Int8Array(1),
                promise: Promise.resolve(),
                regexp: /a/,
                date: new Date(0),
                error: new AggregateError([]),
                proxyRevocable: Proxy.revocable({}, {}),
                arguments: (function () { return arguments; })(),
                boundFunction: (() => {}).bind(null),
                disposable: new DisposableStack(),
                asyncDisposable: new AsyncDisposableStack(),
                weak: [new WeakMap(), new WeakSet()],
                buffers: [new ArrayBuffer(1), new SharedArrayBuffer(1), new DataView(new ArrayBuffer(1))],
                bigint: Object(1n),
                symbol: Object(Symbol("s")),
                moduleMeta: import.meta,
            };
            const throwTypeError = Object.getOwnPropertyDescriptor(samples.arguments, "callee").get;
            const roots = [["globalThis", globalThis], ["%ThrowTypeError%", throwTypeError]];
            for (const [name, sample] of Object.entries(samples)) {
                // A generator's own prototype is its function's, made by this call.
                const own = name === "generator" || name === "asyncGenerator";
                const prototype = Object.getPrototypeOf(sample);
                roots.push([`prototype of ${name}`, own ? Object.getPrototypeOf(prototype) : prototype]);
                roots.push([`constructor of ${name}`, sample.constructor]);
            }
            const notFrozen = [];
            const seen = new Set();
            const pending = roots;
            while (pending.length > 0) {
                const [path, value] = pending.pop();
                if ((typeof value !== "object" && typeof value !== "function") || value === null) continue;
                if (seen.has(value)) continue;
                seen.add(value);
                if (!Object.isFrozen(value) && value !== import.meta) notFrozen.push(path);
                pending.push([`${path}.[[Prototype]]`, Object.getPrototypeOf(value)]);
                for (const key of Reflect.ownKeys(value)) {
                    const d = Object.getOwnPropertyDescriptor(value, key);
                    const at = `${path}.${String(key)}`;
                    pending.push([at, d.value], [`${at} (get)`, d.get], [`${at} (set)`, d.set]);
                }
            }
            return [Object.isFrozen(import.meta), seen.size >= 700, notFrozen];
        }"#,
        json!(null),
    )
    .await;
    assert_eq!(out, Ok(Some(json!([true, true, []]))));
}

#[tokio::test]
async fn randomness_is_fresh_per_call_and_fixed_only_when_asked() {
    let sb = sandbox();
    // A call that draws many numbers cannot steer the next call's sequence: with a fixed seed
    // the next call's numbers are the same whatever came before; without one they differ.
    let draw = compile(&sb, "(n) => Array.from({ length: n }, () => Math.random())");
    let fixed = mcpflow_sandbox::Determinism {
        now_ms: 1_700_000_000_000.0,
        seed: 7,
    };
    let first = draw.call_deterministic(&json!(3), fixed).await.result;
    let _ = draw.call(&json!(1000)).await;
    let again = draw.call_deterministic(&json!(3), fixed).await.result;
    assert_eq!(first, again);
    let a = draw.call(&json!(3)).await;
    let b = draw.call(&json!(3)).await;
    assert_ne!(a, b);
    let clock = compile(
        &sb,
        "() => [Date.now(), new Date().getTime(), typeof Date()]",
    );
    let out = clock.call_deterministic(&json!(null), fixed).await.result;
    assert_eq!(
        out,
        Ok(Some(json!([
            1_700_000_000_000i64,
            1_700_000_000_000i64,
            "string"
        ])))
    );
    let real = clock.call(&json!(null)).await;
    let Ok(Some(serde_json::Value::Array(now))) = real else {
        panic!("{real:?}")
    };
    assert!(
        now[0].as_f64().is_some_and(|ms| ms > 1_700_000_000_000.0),
        "{now:?}"
    );
}

#[tokio::test]
async fn jobs_left_queued_by_one_call_never_run_in_the_next() {
    let sb = sandbox();
    let leaves_work = compile(
        &sb,
        r#"() => {
            Promise.resolve().then(() => console.log("late"));
            queueMicrotask(() => { for (;;) {} });
            return "done";
        }"#,
    );
    let outcome = leaves_work.call_with_logs(&json!(null)).await;
    assert_eq!(outcome.result, Ok(Some(json!("done"))));
    assert!(outcome.logs.is_empty(), "{:?}", outcome.logs);
    let next = compile(&sb, "() => { console.log('next'); return 1; }")
        .call_with_logs(&json!(null))
        .await;
    assert_eq!(next.result, Ok(Some(json!(1))));
    assert_eq!(
        next.logs,
        vec![LogLine {
            level: LogLevel::Log,
            message: "next".into()
        }]
    );
}

// ---- console ----

#[tokio::test]
async fn console_output_is_captured_per_call() {
    let sb = sandbox();
    let script = compile(
        &sb,
        r#"(x) => {
            console.log("input is", x, [1, "a"], undefined, null, 1.5);
            console.info({ nested: { ok: true } });
            console.warn(Symbol("s"), 10n, function f() {}, NaN);
            console.error(new RangeError("careful"));
            console.debug();
            const c = {}; c.c = c; console.log(c);
            throw new Error("after logging");
        }"#,
    );
    let outcome = script.call_with_logs(&json!({"k": "v"})).await;
    assert!(matches!(outcome.result, Err(SandboxError::Thrown { .. })));
    let lines: Vec<(LogLevel, &str)> = outcome
        .logs
        .iter()
        .map(|l| (l.level, l.message.as_str()))
        .collect();
    assert_eq!(
        lines,
        vec![
            (
                LogLevel::Log,
                r#"input is {"k":"v"} [1,"a"] undefined null 1.5"#
            ),
            (LogLevel::Info, r#"{"nested":{"ok":true}}"#),
            (LogLevel::Warn, "Symbol(s) 10n [Function f] NaN"),
            (LogLevel::Error, "RangeError: careful"),
            (LogLevel::Debug, ""),
            (LogLevel::Log, r#"{"c":"[Circular]"}"#),
        ]
    );
}

#[tokio::test]
async fn console_output_is_capped() {
    let sb = sandbox_with(|o| o.max_output_bytes = 1000);
    let outcome = compile(
        &sb,
        "() => { for (let i = 0; i < 100; i++) console.log('x'.repeat(100)); return 1; }",
    )
    .call_with_logs(&json!(null))
    .await;
    assert_eq!(outcome.result, Ok(Some(json!(1))));
    assert_eq!(outcome.logs.len(), 11);
    assert_eq!(
        outcome.logs[10],
        LogLine {
            level: LogLevel::Warn,
            message: "90 more console lines dropped: the log limit is 1000 bytes".into()
        }
    );
}

// ---- concurrency ----

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_tasks_call_concurrently_and_each_gets_its_own_answer() {
    let sb = sandbox_with(|o| o.workers = 2);
    let script = compile(
        &sb,
        "async (x) => { await null; return { id: x.id, square: x.id * x.id }; }",
    );
    let tasks: Vec<_> = (0..200)
        .map(|id| {
            let call = script.call(&json!({"id": id}));
            tokio::spawn(call)
        })
        .collect();
    for (id, task) in tasks.into_iter().enumerate() {
        let out = task.await.expect("task ran");
        assert_eq!(out, Ok(Some(json!({"id": id, "square": id * id}))));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_call_does_not_stop_the_other_worker() {
    let sb = sandbox_with(|o| {
        o.workers = 2;
        o.cpu_time = Duration::from_millis(300);
    });
    let looping = compile(&sb, "() => { for (;;) {} }");
    let quick = compile(&sb, "(x) => x + 1");
    let stuck = tokio::spawn(looping.call(&json!(null)));
    for i in 0..20 {
        assert_eq!(quick.call(&json!(i)).await, Ok(Some(json!(i + 1))));
    }
    assert!(matches!(
        stuck.await.unwrap(),
        Err(SandboxError::Timeout { .. })
    ));
}

#[tokio::test]
async fn a_dropped_sandbox_keeps_running_scripts_that_are_still_held() {
    let script = {
        let sb = sandbox();
        compile(&sb, "(x) => x")
    };
    assert_eq!(
        script.call(&json!("still here")).await,
        Ok(Some(json!("still here")))
    );
}

#[tokio::test]
async fn workers_prepare_no_isolate_until_their_first_call() {
    // An idle server holds no prepared QuickJS runtime (issue #20); the first call pays for it.
    let sb = sandbox_with(|o| o.workers = 2);
    let script = compile(&sb, "(x) => x + 1");
    // Eager workers prepare right after they start; give them the time to show it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sb.isolates_prepared(), 0);
    assert_eq!(script.call(&json!(1)).await, Ok(Some(json!(2))));
    // The worker that ran the call prepared one isolate and keeps it for the next call.
    assert_eq!(sb.isolates_prepared(), 1);
    assert_eq!(script.call(&json!(2)).await, Ok(Some(json!(3))));
    assert!(sb.isolates_prepared() <= 2, "{}", sb.isolates_prepared());
}

// ---- options ----

#[test]
fn nonsensical_options_are_refused() {
    let base = SandboxOptions::default();
    for (options, says) in [
        (
            SandboxOptions {
                workers: 0,
                ..base.clone()
            },
            "workers must be at least 1",
        ),
        (
            SandboxOptions {
                memory_limit_bytes: 1000,
                ..base.clone()
            },
            "memory_limit_bytes is 1000",
        ),
        (
            SandboxOptions {
                cpu_time: Duration::ZERO,
                ..base.clone()
            },
            "cpu_time must be more than zero",
        ),
        (
            SandboxOptions {
                stack_size: 64 << 20,
                ..base.clone()
            },
            "stack_size is 67108864",
        ),
        (
            SandboxOptions {
                max_output_bytes: 0,
                ..base.clone()
            },
            "max_output_bytes must be more than zero",
        ),
    ] {
        let err = Sandbox::new(options).unwrap_err();
        assert!(
            matches!(&err, SandboxError::Options(m) if m.contains(says)),
            "{err}"
        );
    }
}

#[tokio::test]
async fn the_smallest_memory_limit_allowed_still_runs_a_hook() {
    let sb = sandbox_with(|o| o.memory_limit_bytes = 1 << 20);
    assert_eq!(
        run(&sb, "(ctx) => ({ ...ctx, ok: true })", json!({"a": 1})).await,
        Ok(Some(json!({"a": 1, "ok": true})))
    );
}

#[test]
fn defaults_match_the_documented_limits() {
    let d = SandboxOptions::default();
    assert_eq!(d.memory_limit_bytes, 32 << 20);
    assert_eq!(d.cpu_time, Duration::from_millis(100));
    assert_eq!(d.stack_size, 512 << 10);
    assert_eq!(d.max_output_bytes, 4 << 20);
    assert!((1..=2).contains(&d.workers));
}

#[tokio::test]
async fn compile_works_from_inside_an_async_task() {
    let sb = sandbox();
    let script = tokio::spawn(async move {
        Script::compile(&sb, "t.js", "(x) => x").map(|s| s.name().to_owned())
    })
    .await
    .unwrap();
    assert_eq!(script, Ok("t.js".to_owned()));
    let _: Value = json!(null);
}
