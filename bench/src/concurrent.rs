//! `mcpflow-bench concurrent`: one MCP session, `--concurrency` callers each keeping one call in
//! flight until `--calls` calls are done; per-call latency and calls/s. This is how a gateway
//! is loaded in practice: many requests multiplexed over one session.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::client;
use crate::stats::Summary;

#[derive(Args, Debug)]
pub struct ConcurrentArgs {
    /// Measured calls, over all callers.
    #[arg(long, default_value_t = 20000)]
    calls: usize,
    /// Calls made first at the same concurrency and not measured (default: --calls / 4).
    #[arg(long)]
    warmup: Option<usize>,
    /// Callers with one call in flight each.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    #[arg(long)]
    tool: String,
    #[arg(long, default_value = "{}")]
    args: String,
    #[arg(long, default_value = "2025-11-25")]
    protocol: String,
    #[arg(long)]
    label: Option<String>,
    #[arg(long)]
    server_stderr: bool,
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

pub async fn run(a: ConcurrentArgs) -> anyhow::Result<Value> {
    let args = match serde_json::from_str::<Value>(&a.args).context("--args is not valid JSON")? {
        Value::Object(map) => map,
        other => bail!("--args must be a JSON object, got {other}"),
    };
    if a.calls == 0 || a.concurrency == 0 {
        bail!("--calls and --concurrency must be at least 1");
    }
    let version = client::protocol(&a.protocol)?;
    let session = Arc::new(client::connect(&a.command, version, !a.server_stderr).await?);
    let first = client::call(&session, &a.tool, &args).await?;
    let warmup = a.warmup.unwrap_or(a.calls / 4);
    round(&session, &a.tool, &args, warmup, a.concurrency).await?;
    let (samples, wall) = round(&session, &a.tool, &args, a.calls, a.concurrency).await?;
    let s = Summary::of(&samples, wall).context("no samples")?;
    Ok(json!({
        "label": a.label.unwrap_or_else(|| a.command.join(" ")),
        "tool": a.tool,
        "concurrency": a.concurrency,
        "calls": s.calls,
        "p50_us": r(s.p50_us),
        "p90_us": r(s.p90_us),
        "p99_us": r(s.p99_us),
        "mean_us": r(s.mean_us),
        "max_us": r(s.max_us),
        "calls_per_s": r(s.calls_per_s),
        "result": client::result_value(&first),
    }))
}

/// `calls` calls by `concurrency` callers: every call's duration, and the wall time.
async fn round(
    session: &Arc<client::Session>,
    tool: &str,
    args: &serde_json::Map<String, Value>,
    calls: usize,
    concurrency: usize,
) -> anyhow::Result<(Vec<Duration>, Duration)> {
    let left = Arc::new(AtomicUsize::new(calls));
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (session, left, tool, args) =
            (session.clone(), left.clone(), tool.to_owned(), args.clone());
        tasks.spawn(async move {
            let mut samples = Vec::new();
            while left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
            {
                let t = Instant::now();
                client::call(&session, &tool, &args).await?;
                samples.push(t.elapsed());
            }
            anyhow::Ok(samples)
        });
    }
    let mut all = Vec::with_capacity(calls);
    while let Some(done) = tasks.join_next().await {
        all.extend(done.context("a caller panicked")??);
    }
    Ok((all, start.elapsed()))
}

fn r(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
