//! `mcpflow-bench http`: load over Streamable HTTP. `--clients` clients, each with its own
//! session (2025-11-25) or none (2026-07-28, stateless), each keeping one `tools/call` in flight
//! for `--seconds`; then per-call latency and calls/s, one JSON line per client count. With
//! `--server-pid`, it also opens `--idle-sessions` sessions and reports the server's resident
//! memory per open session (VmRSS before and after, from /proc).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::stats::Summary;

#[derive(Args, Debug)]
pub struct HttpArgs {
    /// The server's MCP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long)]
    url: String,
    /// Client counts to measure, one run each (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,16,256")]
    clients: Vec<usize>,
    /// Measured seconds per run (after a warm-up of a quarter of it).
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    #[arg(long)]
    tool: String,
    #[arg(long, default_value = "{}")]
    args: String,
    /// 2025-11-25 (sessions, initialize) or 2026-07-28 (stateless, per-request _meta).
    #[arg(long, default_value = "2025-11-25")]
    protocol: String,
    /// The server's pid, to measure memory per idle session.
    #[arg(long)]
    server_pid: Option<u32>,
    #[arg(long, default_value_t = 2000)]
    idle_sessions: usize,
}

/// One client: its session (if any) and the request it repeats.
struct Caller {
    http: reqwest::Client,
    url: String,
    protocol: String,
    session: Option<String>,
}

impl Caller {
    async fn open(http: &reqwest::Client, url: &str, protocol: &str) -> anyhow::Result<Caller> {
        let mut caller = Caller {
            http: http.clone(),
            url: url.to_owned(),
            protocol: protocol.to_owned(),
            session: None,
        };
        if protocol != "2026-07-28" {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": protocol, "capabilities": {},
                "clientInfo": {"name": "mcpflow-bench", "version": "0"}}});
            let response = caller.send(&init).await?;
            caller.session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            response.bytes().await?;
            let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            caller.send(&note).await?.bytes().await?;
        }
        Ok(caller)
    }

    async fn send(&self, body: &Value) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", &self.protocol);
        if let Some(id) = &self.session {
            request = request.header("mcp-session-id", id);
        }
        if let Some(method) = body.get("method").and_then(Value::as_str) {
            request = request.header("mcp-method", method);
            if let Some(name) = body.pointer("/params/name").and_then(Value::as_str) {
                request = request.header("mcp-name", name);
            }
        }
        let response = request.body(body.to_string()).send().await?;
        if !response.status().is_success() {
            bail!("HTTP {} from the server", response.status());
        }
        Ok(response)
    }

    /// One tools/call; fails unless the answer is a result without isError.
    async fn call(&self, id: u64, tool: &str, args: &Value) -> anyhow::Result<()> {
        let mut params = json!({"name": tool, "arguments": args});
        if self.protocol == "2026-07-28" {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}});
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let text = self.send(&body).await?.text().await?;
        // A JSON body, or SSE whose last data line is the response.
        let json = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|d| !d.is_empty())
            .unwrap_or(text.trim());
        let message: Value = serde_json::from_str(json).context("response is not JSON")?;
        if message.get("result").is_none() || message["result"]["isError"] == json!(true) {
            bail!("the call failed: {message}");
        }
        Ok(())
    }
}

/// Prints one JSON line per client count (and the memory line); returns the last to print.
pub async fn run(args: HttpArgs) -> anyhow::Result<Value> {
    let tool_args: Value = serde_json::from_str(&args.args).context("--args is not JSON")?;
    let max_clients = args.clients.iter().copied().max().unwrap_or(1);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(max_clients + 8)
        .build()?;
    let mut lines = Vec::new();
    for &clients in &args.clients {
        let mut callers = Vec::with_capacity(clients);
        for _ in 0..clients {
            callers.push(Arc::new(
                Caller::open(&http, &args.url, &args.protocol).await?,
            ));
        }
        let warmup = Duration::from_secs_f64(args.seconds / 4.0);
        load(&callers, &args.tool, &tool_args, warmup).await?;
        let measured = Duration::from_secs_f64(args.seconds);
        let started = Instant::now();
        let samples = load(&callers, &args.tool, &tool_args, measured).await?;
        let wall = started.elapsed();
        let s = Summary::of(&samples, wall).context("no calls completed")?;
        let round = |x: f64| (x * 10.0).round() / 10.0;
        lines.push(json!({
            "label": format!("http {} {}", args.protocol, args.tool),
            "clients": clients,
            "calls": s.calls,
            "calls_per_s": round(s.calls_per_s),
            "p50_us": round(s.p50_us),
            "p99_us": round(s.p99_us),
            "mean_us": round(s.mean_us),
            "max_us": round(s.max_us),
        }));
    }
    if let Some(pid) = args.server_pid {
        let before = rss_kib(pid)?;
        let mut open = Vec::with_capacity(args.idle_sessions);
        for _ in 0..args.idle_sessions {
            open.push(Caller::open(&http, &args.url, "2025-11-25").await?);
        }
        let after = rss_kib(pid)?;
        let per = (after.saturating_sub(before)) as f64 * 1024.0 / args.idle_sessions as f64;
        lines.push(
            json!({"label": "memory per idle session", "sessions": args.idle_sessions,
            "rss_before_kib": before, "rss_after_kib": after, "bytes_per_session": per.round()}),
        );
        drop(open);
    }
    let last = lines.pop().context("no --clients given")?;
    for line in lines {
        println!("{line}");
    }
    Ok(last)
}

/// Every caller calls in a loop until `duration` has passed; the latency of each call.
async fn load(
    callers: &[Arc<Caller>],
    tool: &str,
    args: &Value,
    duration: Duration,
) -> anyhow::Result<Vec<Duration>> {
    let deadline = Instant::now() + duration;
    let tasks: Vec<_> = callers
        .iter()
        .map(|caller| {
            let caller = caller.clone();
            let tool = tool.to_owned();
            let args = args.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut id = 1u64;
                while Instant::now() < deadline {
                    let t = Instant::now();
                    caller.call(id, &tool, &args).await?;
                    samples.push(t.elapsed());
                    id += 1;
                }
                anyhow::Ok(samples)
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    Ok(all)
}

fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("cannot read /proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS in /proc/PID/status")
}
