//! The expressions of mcpGraph's `loop_example` (the `increment_node` transform and the
//! `check_condition` switch rule) against a run with a short and a long history: their cost
//! must not depend on the history's length.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcpflow_expr::{
    Context, HistoryView, Jsonata, Limits, Logic, MemoryHistory, Scope, Template, Value,
};
use serde_json::json;

const INCREMENT: &str = r#"$executionCount("increment_node") = 0
  ? {
      "counter": 1,
      "sum": 1,
      "target": $.entry_sum.n
    }
  : {
      "counter": $nodeExecution("increment_node", -1).counter + 1,
      "sum": $nodeExecution("increment_node", -1).sum + $nodeExecution("increment_node", -1).counter + 1,
      "target": $.entry_sum.n
    }"#;

/// A run of `sum_to_n` stopped after `records` history records, with its context.
fn run(records: usize) -> (MemoryHistory, Context) {
    let mut history = MemoryHistory::new();
    let mut ctx = Context::new();
    let n = records as u64;
    let entry = Value::from_json(json!({"n": n}));
    history.push("entry_sum", Some(entry.clone()));
    ctx.set("entry_sum", Some(entry));
    let mut i = 1;
    while history.len() < records {
        let out = Value::from_json(json!({"counter": i, "sum": i * (i + 1) / 2, "target": n}));
        history.push("increment_node", Some(out.clone()));
        ctx.set("increment_node", Some(out));
        let routed = Value::from_json(json!("increment_node"));
        history.push("check_condition", Some(routed.clone()));
        ctx.set("check_condition", Some(routed));
        i += 1;
    }
    (history, ctx)
}

fn bench(c: &mut Criterion) {
    let transform = Jsonata::compile(INCREMENT).expect("transform compiles");
    let rule = Logic::compile(&json!({
        "<": [{"var": "$.increment_node.counter"}, {"var": "$.increment_node.target"}]
    }))
    .expect("rule compiles");
    let switch_rule = Logic::compile(&json!({">": [{"var": "entry.value"}, 10]})).expect("rule");
    let args = Template::compile(&json!({"path": {"expr": "$.entry_sum.n & '.txt'"}, "mode": "r"}))
        .expect("template compiles");
    let limits = Limits::default();
    let mut group = c.benchmark_group("loop_example");
    for records in [10, 100_000] {
        let (history, ctx) = run(records);
        let scope = Scope::new(&ctx, &history, &limits);
        group.bench_with_input(
            BenchmarkId::new("increment_transform", records),
            &(),
            |b, _| b.iter(|| transform.evaluate(&scope).expect("evaluates")),
        );
        group.bench_with_input(BenchmarkId::new("switch_rule", records), &(), |b, _| {
            b.iter(|| rule.evaluate(&scope).expect("evaluates"))
        });
        group.bench_with_input(BenchmarkId::new("mcp_args", records), &(), |b, _| {
            b.iter(|| args.render(&scope).expect("renders"))
        });
    }
    group.finish();

    // One loop iteration as the engine runs it (two nodes: the transform, then the switch),
    // with the history growing to the number of iterations criterion asks for.
    c.bench_function("loop_iteration_two_nodes", |b| {
        b.iter_custom(|iters| {
            let (mut history, mut ctx) = run(1);
            let routed = Value::from_json(json!("increment_node"));
            let start = std::time::Instant::now();
            for _ in 0..iters {
                let out = {
                    let scope = Scope::new(&ctx, &history, &limits);
                    transform.evaluate(&scope).expect("evaluates")
                };
                history.push("increment_node", out.clone());
                ctx.set("increment_node", out);
                let go = {
                    let scope = Scope::new(&ctx, &history, &limits);
                    rule.evaluate(&scope).expect("evaluates")
                };
                std::hint::black_box(mcpflow_expr::truthy(&go));
                history.push("check_condition", Some(routed.clone()));
                ctx.set("check_condition", Some(routed.clone()));
            }
            start.elapsed()
        })
    });

    let mut ctx = Context::new();
    ctx.set("entry", Some(Value::from_json(json!({"value": "15"}))));
    let scope = Scope::new(&ctx, &mcpflow_expr::NoHistory, &limits);
    c.bench_function("switch_example_rule", |b| {
        b.iter(|| switch_rule.evaluate(&scope).expect("evaluates"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
