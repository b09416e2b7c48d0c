//! Nodes per second on mcpGraph's loop example (transform + switch only), for a short and a
//! long loop: the per-node cost must not grow with the history.
//!
//! `cargo bench -p mcpflow-engine --bench nodes` (needs ../shared/ beside the repo root).

use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpflow_engine::{Engine, RunRequest};
use mcpflow_upstream::UpstreamPool;
use serde_json::json;

fn engine() -> Engine {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/compat/mcpgraph/examples/loop_example.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "this bench needs ../shared/ beside the repo root ({}): {e}",
            path.display()
        )
    });
    // The same graph with limits a long loop fits in.
    let text = text.replacen(
        "\ntools:",
        "\nexecutionLimits:\n  maxNodeExecutions: 100000000\n  maxExecutionTimeMs: 3600000\n\ntools:",
        1,
    );
    let loaded =
        mcpflow_config::load_str(&text, "loop_example.yaml").unwrap_or_else(|e| panic!("{e}"));
    let pool = UpstreamPool::new(loaded.config.mcp_servers.clone(), loaded.base_dir.clone());
    Engine::new(&loaded.config, pool).expect("compiles")
}

fn loop_nodes(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let engine = engine();
    let mut group = c.benchmark_group("loop_example");
    group.sample_size(10);
    for n in [10u64, 1_000, 100_000] {
        // entry + 2 per iteration + exit_sum + exit: 2n + 3 records.
        let nodes = 2 * n + 3;
        group.throughput(Throughput::Elements(nodes));
        group.bench_with_input(BenchmarkId::new("sum_to_n", n), &n, |b, &n| {
            b.iter(|| {
                let run = rt.block_on(engine.run(RunRequest::new("sum_to_n", json!({"n": n}))));
                assert_eq!(run.history.len() as u64, nodes);
                run
            })
        });
    }
    group.finish();
}

criterion_group!(benches, loop_nodes);
criterion_main!(benches);
