//! The cost of calling a trivial hook, `function (ctx) { return ctx; }`, with a small request
//! context, and what the fresh-runtime-per-call isolation costs against reusing one context.
//!
//! - `call/ready`: one call when the worker has its fresh isolate prepared (the latency a
//!   gateway request sees when hooks are not saturated);
//! - `call/back_to_back/{1,2}_workers`: calls issued one after another, so each also waits for
//!   isolates to be prepared (the sustained rate);
//! - `isolation/*`: the raw QuickJS operations behind the choice: creating a runtime with its
//!   context versus calling into a context that is kept.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use mcpflow_sandbox::{Sandbox, SandboxOptions, Script};
use rquickjs::context::intrinsic;
use rquickjs::{Context, Function, Runtime, Value};
use serde_json::json;

const HOOK: &str = "function (ctx) { return ctx; }";

fn input() -> serde_json::Value {
    json!({
        "request": {"method": "tools/call", "params": {"name": "search", "arguments": {"q": "rust", "limit": 10}}},
        "metadata": {"clientId": "bench", "serverName": "docs", "workflowId": "w1", "nodeId": "pre"}
    })
}

fn hook(workers: usize) -> Script {
    let sandbox = Sandbox::new(SandboxOptions {
        workers,
        ..SandboxOptions::default()
    })
    .expect("sandbox");
    Script::compile(&sandbox, "bench.js", HOOK).expect("compiles")
}

fn call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio");
    let input = input();
    let mut group = c.benchmark_group("call");

    let script = hook(1);
    group.bench_function("ready", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // Give the worker time to prepare its next isolate; only the call is timed.
                std::thread::sleep(Duration::from_micros(600));
                let started = Instant::now();
                let out = rt.block_on(script.call(&input));
                total += started.elapsed();
                assert!(out.is_ok());
            }
            total
        })
    });
    for workers in [1, 2] {
        let script = hook(workers);
        group.bench_function(format!("back_to_back/{workers}_workers"), |b| {
            b.iter(|| rt.block_on(script.call(&input)).expect("call"))
        });
    }
    group.finish();
}

type CallIntrinsics = (
    intrinsic::Date,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
);

fn isolation(c: &mut Criterion) {
    let text = serde_json::to_string(&input()).expect("json");
    let mut group = c.benchmark_group("isolation");
    group.bench_function("fresh_runtime_and_context", |b| {
        b.iter(|| {
            let runtime = Runtime::new().expect("runtime");
            let context = Context::custom::<CallIntrinsics>(&runtime).expect("context");
            drop(context);
        })
    });
    group.bench_function("fresh_runtime_only", |b| {
        b.iter(|| Runtime::new().expect("runtime"))
    });
    let kept = Runtime::new().expect("runtime");
    group.bench_function("fresh_context_on_kept_runtime", |b| {
        b.iter(|| {
            let context = Context::custom::<CallIntrinsics>(&kept).expect("context");
            drop(context);
            kept.run_gc();
        })
    });
    let runtime = Runtime::new().expect("runtime");
    let context = Context::custom::<(CallIntrinsics, intrinsic::Eval)>(&runtime).expect("context");
    context.with(|ctx| {
        let f: Function = ctx.eval(format!("({HOOK})")).expect("function");
        group.bench_function("reused_context_call", |b| {
            b.iter(|| {
                let input = ctx.json_parse(text.as_str()).expect("parse");
                let out: Value = f.call((input,)).expect("call");
                ctx.json_stringify(out).expect("stringify")
            })
        });
    });
    group.finish();
}

criterion_group!(benches, call, isolation);
criterion_main!(benches);
