//! Concurrency of `parallel` and `foreach` against the fixture upstream: 100 calls of 50 ms
//! must take about 50 ms × ceil(100 / concurrency), not 100 × 50 ms; and the engine's own
//! cost per foreach item (a transform-only body).
//!
//! ```text
//! cargo build --release --bin mcpflow-fixture
//! cargo bench -p mcpflow-engine --bench resilience
//! ```
//! (`bench/resilience.sh` does both.) Prints one line per scenario: best and median of 5 runs.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mcpflow_engine::{Engine, RunRequest};
use mcpflow_upstream::UpstreamPool;
use serde_json::json;

fn fixture() -> PathBuf {
    let exe = std::env::current_exe().expect("bench executable path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("mcpflow-fixture");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --release --bin mcpflow-fixture` first",
        bin.display()
    );
    bin
}

fn config() -> String {
    let mut branches = String::new();
    let mut branch_nodes = String::new();
    for b in 0..10 {
        branches.push_str(&format!("b{b}: fe{b}, "));
        branch_nodes.push_str(&format!(
            "      - {{ id: fe{b}, type: foreach, items: '[1..10]', concurrency: 10, body: s{b}, next: join }}\n\
             \x20     - {{ id: s{b}, type: mcp, server: fx, tool: sleep, args: {{ ms: 50 }}, next: fe{b} }}\n"
        ));
    }
    let mut tools = String::new();
    for c in [10, 25, 50] {
        tools.push_str(&format!(
            "  - name: foreach_{c}\n    nodes:\n\
             \x20     - {{ id: entry, type: entry, next: fe }}\n\
             \x20     - {{ id: fe, type: foreach, items: '[1..100]', concurrency: {c}, body: s, next: exit }}\n\
             \x20     - {{ id: s, type: mcp, server: fx, tool: sleep, args: {{ ms: 50 }}, next: fe }}\n\
             \x20     - {{ id: exit, type: exit }}\n"
        ));
    }
    for c in [1, 8] {
        tools.push_str(&format!(
            "  - name: overhead_{c}\n    nodes:\n\
             \x20     - {{ id: entry, type: entry, next: fe }}\n\
             \x20     - {{ id: fe, type: foreach, items: '[1..10000]', concurrency: {c}, body: t, next: exit }}\n\
             \x20     - {{ id: t, type: transform, transform: {{ expr: '$.fe.item * 2' }}, next: fe }}\n\
             \x20     - {{ id: exit, type: exit }}\n"
        ));
    }
    format!(
        "version: \"1.0\"\nserver: {{ name: bench, version: \"1\" }}\n\
         executionLimits: {{ maxNodeExecutions: 100000000, maxExecutionTimeMs: 3600000 }}\n\
         mcpServers:\n  fx: {{ command: \"{}\", args: [] }}\n\
         tools:\n{tools}\
         \x20 - name: parallel_10x10\n    nodes:\n\
         \x20     - {{ id: entry, type: entry, next: par }}\n\
         \x20     - {{ id: par, type: parallel, branches: {{ {branches} }}, next: join }}\n\
         {branch_nodes}\
         \x20     - {{ id: join, type: transform, transform: {{ expr: '$count($keys($.par))' }}, next: exit }}\n\
         \x20     - {{ id: exit, type: exit }}\n",
        fixture().display()
    )
}

fn measure(rt: &tokio::runtime::Runtime, engine: &Engine, tool: &str) -> (Duration, Duration) {
    let mut times = Vec::new();
    for i in 0..6 {
        let start = Instant::now();
        let run = rt.block_on(engine.run(RunRequest::new(tool, json!({}))));
        let took = start.elapsed();
        if let Some(e) = run.error() {
            panic!("{tool} failed: {e}");
        }
        // The first run starts the fixture: a warm-up.
        if i > 0 {
            times.push(took);
        }
    }
    times.sort();
    (times[0], times[times.len() / 2])
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let text = config();
    let loaded = mcpflow_config::load_str(&text, "bench.yaml").unwrap_or_else(|e| panic!("{e}"));
    let pool = UpstreamPool::new(loaded.config.mcp_servers.clone(), loaded.base_dir.clone());
    let engine = Engine::new(&loaded.config, pool).expect("compiles");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("100 upstream calls of 50 ms (sequential would take 5000 ms):");
    for (tool, concurrency) in [
        ("foreach_10", 10),
        ("foreach_25", 25),
        ("foreach_50", 50),
        ("parallel_10x10", 100),
    ] {
        let (best, median) = measure(&rt, &engine, tool);
        let ideal = 50 * 100_usize.div_ceil(concurrency);
        println!(
            "  {tool:<16} concurrency {concurrency:>3}: best {:>6.1} ms, median {:>6.1} ms (ideal {ideal} ms)",
            best.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3
        );
    }
    println!("foreach overhead, 10,000 items, transform-only body:");
    for (tool, concurrency) in [("overhead_1", 1), ("overhead_8", 8)] {
        let (best, median) = measure(&rt, &engine, tool);
        println!(
            "  concurrency {concurrency}: best {:.2} µs/item, median {:.2} µs/item",
            best.as_secs_f64() * 1e6 / 10_000.0,
            median.as_secs_f64() * 1e6 / 10_000.0
        );
    }
    rt.block_on(engine.pool().shutdown());
}
