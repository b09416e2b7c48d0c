//! `mcpflow-bench`: measures how long an MCP server over stdio takes to answer one tool, call
//! after call. A measurement tool, not a test: it never runs in CI.
//!
//! ```text
//! mcpflow-bench latency --calls 5000 --tool echo --args '{"x": 1}' -- mcpflow-fixture
//! {"label":"…","p50_us":41.2,"p90_us":…,"p99_us":…,"mean_us":…,"calls_per_s":…,…}
//! ```
//!
//! It spawns the server command, completes the handshake (2025-11-25 unless `--protocol` says
//! otherwise), makes `--warmup` calls that are not counted, then `--calls` sequential timed calls,
//! and prints one JSON line on stdout. `bench/latency.sh` and `bench/loop.sh` drive it.

mod client;
mod concurrent;
mod http;
mod sessions;
mod stats;

use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};

use crate::stats::Summary;

#[derive(Parser, Debug)]
#[command(name = "mcpflow-bench", about = "Latency of one MCP tool over stdio")]
struct Cli {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Subcommand, Debug)]
enum Sub {
    /// Time sequential calls of one tool and print p50/p90/p99/mean (µs) and calls/s as JSON.
    Latency(LatencyArgs),
    /// Many calls in flight over one session: latency percentiles and calls/s (gateway.sh).
    Concurrent(concurrent::ConcurrentArgs),
    /// Start + continue round trips of a tool that waits (sessions.sh).
    Sessions(sessions::SessionsArgs),
    /// Load over Streamable HTTP at 1/16/256 clients, and memory per idle session (http.sh).
    Http(http::HttpArgs),
}

#[derive(Args, Debug)]
struct LatencyArgs {
    /// Measured calls.
    #[arg(long, default_value_t = 1000)]
    calls: usize,
    /// Calls made first and not measured (default: as many as --calls).
    #[arg(long)]
    warmup: Option<usize>,
    /// The tool to call.
    #[arg(long)]
    tool: String,
    /// The tool's arguments, a JSON object.
    #[arg(long, default_value = "{}")]
    args: String,
    /// MCP protocol version to ask for.
    #[arg(long, default_value = "2025-11-25")]
    protocol: String,
    /// A name for this run, copied into the output.
    #[arg(long)]
    label: Option<String>,
    /// Let the server's stderr through (it is discarded by default: logging to a terminal
    /// would be measured too).
    #[arg(long)]
    server_stderr: bool,
    /// The server command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // rustls has no default provider in this workspace (root Cargo.toml, reqwest).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Sub::Latency(args) => latency(args).await,
        Sub::Concurrent(args) => concurrent::run(args).await,
        Sub::Sessions(args) => sessions::run(args).await,
        Sub::Http(args) => http::run(args).await,
    };
    match outcome {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("mcpflow-bench: {e:#}");
            std::process::exit(1);
        }
    }
}

async fn latency(a: LatencyArgs) -> anyhow::Result<Value> {
    let args = match serde_json::from_str::<Value>(&a.args).context("--args is not valid JSON")? {
        Value::Object(map) => map,
        other => bail!("--args must be a JSON object, got {other}"),
    };
    if a.calls == 0 {
        bail!("--calls must be at least 1");
    }
    let warmup = a.warmup.unwrap_or(a.calls);
    let version = client::protocol(&a.protocol)?;

    let t = Instant::now();
    let session = client::connect(&a.command, version, !a.server_stderr).await?;
    let connect_us = t.elapsed().as_secs_f64() * 1e6;

    let warm = client::timed_calls(&session, &a.tool, &args, warmup).await?;
    let measured = client::timed_calls(&session, &a.tool, &args, a.calls).await?;
    let protocol = client::negotiated(&session);
    // A server that does not exit on stdin close is killed when the transport drops.
    let _ = session.cancel().await;

    let s = Summary::of(&measured.samples, measured.wall).context("no samples")?;
    // Shown so that a wrong config (an unexpected answer) is visible in the report.
    let first = warm.first.or(measured.first).context("no result")?;
    Ok(json!({
        "label": a.label.unwrap_or_else(|| a.command.join(" ")),
        "tool": a.tool,
        "protocol": protocol,
        "warmup": warmup,
        "calls": s.calls,
        "p50_us": round(s.p50_us),
        "p90_us": round(s.p90_us),
        "p99_us": round(s.p99_us),
        "mean_us": round(s.mean_us),
        "min_us": round(s.min_us),
        "max_us": round(s.max_us),
        "calls_per_s": round(s.calls_per_s),
        "connect_us": round(connect_us),
        "result": client::result_value(&first),
    }))
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
