//! `mcpflow-bench http`: load over Streamable HTTP. `--clients` clients, each with its own
//! session (2025-11-25) or none (2026-07-28, stateless), each keeping one `tools/call` in flight
//! for `--seconds`; then per-call latency and calls/s, one JSON line per client count. With
//! `--server-pid`, each line also says where the CPU went per call (the server's, the load
//! generator's, and how long runnable threads waited for a core), and `--idle-sessions N` then
//! opens N sessions and reports the server's resident memory per open session (VmRSS before
//! and after, from /proc).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::concurrent::Sched;
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
    /// Instead of timing by `--seconds`, make exactly this many measured calls per run (after a
    /// quarter as many warm-up calls): a fixed amount of work, to profile by instruction count.
    #[arg(long)]
    calls: Option<u64>,
    #[arg(long)]
    tool: String,
    #[arg(long, default_value = "{}")]
    args: String,
    /// 2025-11-25 (sessions, initialize) or 2026-07-28 (stateless, per-request _meta).
    #[arg(long, default_value = "2025-11-25")]
    protocol: String,
    /// The server's pid: CPU time per call on every line (Linux /proc), and memory per idle
    /// session with `--idle-sessions`.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Sessions to open (and leave idle) after the runs, to measure memory per session.
    #[arg(long, requires = "server_pid")]
    idle_sessions: Option<usize>,
    /// Sent as `Authorization: Bearer` on every request (an API key or a JWT: `bench/auth.sh`).
    #[arg(long, env = "MCPFLOW_BENCH_BEARER", hide_env_values = true)]
    bearer: Option<String>,
}

/// One client: its session (if any) and the request it repeats.
struct Caller {
    http: reqwest::Client,
    /// Parsed once: parsing it on every request (with IDNA) was a visible share of the
    /// load generator's cost per call.
    url: reqwest::Url,
    protocol: String,
    session: Option<String>,
}

/// The `tools/call` every caller repeats, rendered once: only the id changes between calls, so
/// the load generator (sharing the cores with the server) spends little per call.
struct CallTemplate {
    /// `{"jsonrpc":"2.0","id":`
    head: &'static str,
    /// `,"method":"tools/call","params":{…}}`
    tail: String,
    tool: String,
}

impl CallTemplate {
    fn new(protocol: &str, tool: &str, args: &Value) -> CallTemplate {
        let mut params = json!({"name": tool, "arguments": args});
        if protocol == "2026-07-28" {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}});
        }
        CallTemplate {
            head: r#"{"jsonrpc":"2.0","id":"#,
            tail: format!(r#","method":"tools/call","params":{params}}}"#),
            tool: tool.to_owned(),
        }
    }

    fn body(&self, id: u64) -> String {
        let mut body = String::with_capacity(self.head.len() + 20 + self.tail.len());
        body.push_str(self.head);
        body.push_str(&id.to_string());
        body.push_str(&self.tail);
        body
    }
}

impl Caller {
    async fn open(http: &reqwest::Client, url: &str, protocol: &str) -> anyhow::Result<Caller> {
        let mut caller = Caller {
            http: http.clone(),
            url: reqwest::Url::parse(url).context("--url is not a URL")?,
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
        let method = body.get("method").and_then(Value::as_str);
        let name = body.pointer("/params/name").and_then(Value::as_str);
        self.post(body.to_string(), method, name).await
    }

    /// POSTs `body` with the headers the spec asks for (`Mcp-Method`/`Mcp-Name` from 2026-07-28).
    async fn post(
        &self,
        body: String,
        method: Option<&str>,
        name: Option<&str>,
    ) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .http
            .post(self.url.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", &self.protocol);
        if let Some(id) = &self.session {
            request = request.header("mcp-session-id", id);
        }
        if let Some(method) = method {
            request = request.header("mcp-method", method);
            if let Some(name) = name {
                request = request.header("mcp-name", name);
            }
        }
        let response = request.body(body).send().await?;
        if !response.status().is_success() {
            bail!("HTTP {} from the server", response.status());
        }
        Ok(response)
    }

    /// One tools/call; fails unless the answer is a result without isError.
    async fn call(&self, id: u64, call: &CallTemplate) -> anyhow::Result<()> {
        let response = self
            .post(call.body(id), Some("tools/call"), Some(&call.tool))
            .await?;
        let text = response.text().await?;
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
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(token) = &args.bearer {
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
            .context("--bearer is not a header value")?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(max_clients + 8)
        .default_headers(headers)
        .build()?;
    let mut lines = Vec::new();
    let call = Arc::new(CallTemplate::new(&args.protocol, &args.tool, &tool_args));
    for &clients in &args.clients {
        let mut callers = Vec::with_capacity(clients);
        for _ in 0..clients {
            callers.push(Arc::new(
                Caller::open(&http, &args.url, &args.protocol).await?,
            ));
        }
        let seconds = Duration::from_secs_f64(args.seconds);
        let (warmup, measured) = match args.calls {
            Some(n) => (Budget::Calls((n / 4).max(1)), Budget::Calls(n)),
            None => (Budget::Time(seconds / 4), Budget::Time(seconds)),
        };
        load(&callers, &call, warmup).await?;
        let cpu_before = args.server_pid.map(Sched::of_server);
        let started = Instant::now();
        let samples = load(&callers, &call, measured).await?;
        let wall = started.elapsed();
        let s = Summary::of(&samples, wall).context("no calls completed")?;
        let round = |x: f64| (x * 10.0).round() / 10.0;
        let mut line = json!({
            "label": format!("http {} {}", args.protocol, args.tool),
            "clients": clients,
            "calls": s.calls,
            "calls_per_s": round(s.calls_per_s),
            "p50_us": round(s.p50_us),
            "p99_us": round(s.p99_us),
            "mean_us": round(s.mean_us),
            "max_us": round(s.max_us),
        });
        if let (Some(before), Some(pid)) = (cpu_before, args.server_pid) {
            let used = Sched::of_server(pid).since(&before);
            let per_call = |ns: u64| round(ns as f64 / 1000.0 / s.calls as f64);
            // What the 2 cores were spent on: the server's CPU, this load generator's, and the
            // time runnable threads of both waited for a core.
            line["server_cpu_us"] = json!(per_call(used.server.cpu_ns));
            line["client_cpu_us"] = json!(per_call(used.client.cpu_ns));
            line["runq_wait_us"] = json!(per_call(used.server.wait_ns + used.client.wait_ns));
        }
        lines.push(line);
    }
    if let (Some(pid), Some(idle_sessions)) = (args.server_pid, args.idle_sessions) {
        let before = rss_kib(pid)?;
        let mut open = Vec::with_capacity(idle_sessions);
        for _ in 0..idle_sessions {
            open.push(Caller::open(&http, &args.url, "2025-11-25").await?);
        }
        let after = rss_kib(pid)?;
        let per = (after.saturating_sub(before)) as f64 * 1024.0 / idle_sessions as f64;
        lines.push(
            json!({"label": "memory per idle session", "sessions": idle_sessions,
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

/// How long a run lasts: a wall-clock time, or a number of calls shared by all callers.
#[derive(Clone, Copy)]
enum Budget {
    Time(Duration),
    Calls(u64),
}

/// Every caller calls in a loop until the budget is spent; the latency of each call.
async fn load(
    callers: &[Arc<Caller>],
    call: &Arc<CallTemplate>,
    budget: Budget,
) -> anyhow::Result<Vec<Duration>> {
    let (deadline, calls_left) = match budget {
        Budget::Time(d) => (Some(Instant::now() + d), None),
        Budget::Calls(n) => (None, Some(Arc::new(AtomicU64::new(n)))),
    };
    let tasks: Vec<_> = callers
        .iter()
        .map(|caller| {
            let caller = caller.clone();
            let call = call.clone();
            let calls_left = calls_left.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut id = 1u64;
                loop {
                    let go_on = match (&calls_left, deadline) {
                        (Some(left), _) => left
                            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                                n.checked_sub(1)
                            })
                            .is_ok(),
                        (None, Some(deadline)) => Instant::now() < deadline,
                        (None, None) => false,
                    };
                    if !go_on {
                        break;
                    }
                    let t = Instant::now();
                    caller.call(id, &call).await?;
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
