//! `mcpflow-bench sessions`: start + continue round trips of a tool that waits once, over one
//! stdio session: each round trip is `TOOL {args}` (answered `{status: "waiting", sessionId}`)
//! then `TOOL_continue {sessionId, input}` (answered with the result). `--clients N` keeps N
//! round trips in flight at once (concurrent calls over the one session), until `--rounds`
//! are done. With `--leave N`, N more sessions are started and left waiting (to measure what
//! a waiting session costs the store).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

use crate::client;
use crate::concurrent::Sched;
use crate::stats::Summary;

#[derive(Args, Debug)]
pub struct SessionsArgs {
    /// Measured round trips (start + continue).
    #[arg(long, default_value_t = 1000)]
    rounds: usize,
    /// Round trips made first (at the same concurrency) and not measured.
    #[arg(long, default_value_t = 100)]
    warmup: usize,
    /// Round trips in flight at once.
    #[arg(long, default_value_t = 1)]
    clients: usize,
    /// Sessions started at the end and left waiting.
    #[arg(long, default_value_t = 0)]
    leave: usize,
    #[arg(long)]
    tool: String,
    #[arg(long, default_value = "{}")]
    args: String,
    /// What `TOOL_continue` sends as `input`.
    #[arg(long, default_value = "{}")]
    input: String,
    #[arg(long)]
    label: Option<String>,
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

fn object(what: &str, text: &str) -> anyhow::Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(text).with_context(|| format!("{what} is not JSON"))? {
        Value::Object(m) => Ok(m),
        other => bail!("{what} must be a JSON object, got {other}"),
    }
}

fn session_id(r: &CallToolResult) -> anyhow::Result<String> {
    let v = client::result_value(r);
    match (v.get("status"), v.get("sessionId")) {
        (Some(s), Some(Value::String(id))) if s == "waiting" => Ok(id.clone()),
        _ => bail!("the tool did not wait: it answered {v}"),
    }
}

/// What every round trip sends.
struct Trip {
    tool: String,
    continue_tool: String,
    args: Map<String, Value>,
    input: Value,
}

impl Trip {
    async fn once(&self, session: &client::Session) -> anyhow::Result<CallToolResult> {
        let started = client::call(session, &self.tool, &self.args).await?;
        let id = session_id(&started)?;
        let Value::Object(cont) = json!({"sessionId": id, "input": self.input}) else {
            bail!("unreachable: a literal object");
        };
        client::call(session, &self.continue_tool, &cont).await
    }
}

/// `rounds` round trips by `clients` loops: every round trip's duration, the wall time, and
/// the first answer.
async fn rounds(
    session: &Arc<client::Session>,
    trip: &Arc<Trip>,
    rounds: usize,
    clients: usize,
) -> anyhow::Result<(Vec<Duration>, Duration, Option<CallToolResult>)> {
    let left = Arc::new(AtomicUsize::new(rounds));
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (session, trip, left) = (session.clone(), trip.clone(), left.clone());
        tasks.spawn(async move {
            let mut samples = Vec::new();
            let mut first = None;
            while left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
            {
                let t = Instant::now();
                let done = trip.once(&session).await?;
                samples.push(t.elapsed());
                first.get_or_insert(done);
            }
            anyhow::Ok((samples, first))
        });
    }
    let mut all = Vec::with_capacity(rounds);
    let mut first = None;
    while let Some(done) = tasks.join_next().await {
        let (samples, answer) = done.context("a client panicked")??;
        all.extend(samples);
        if first.is_none() {
            first = answer;
        }
    }
    Ok((all, start.elapsed(), first))
}

pub async fn run(a: SessionsArgs) -> anyhow::Result<Value> {
    if a.clients == 0 || a.rounds == 0 {
        bail!("--clients and --rounds must be at least 1");
    }
    let trip = Arc::new(Trip {
        args: object("--args", &a.args)?,
        input: serde_json::from_str(&a.input).context("--input is not JSON")?,
        continue_tool: format!("{}_continue", a.tool),
        tool: a.tool.clone(),
    });
    let version = client::protocol("2025-11-25")?;
    let session = Arc::new(client::connect(&a.command, version, true).await?);
    rounds(&session, &trip, a.warmup, a.clients).await?;
    let before = Sched::now();
    let (samples, wall, first) = rounds(&session, &trip, a.rounds, a.clients).await?;
    let used = Sched::now().since(&before);
    for _ in 0..a.leave {
        session_id(&client::call(&session, &a.tool, &trip.args).await?)?;
    }
    let s = Summary::of(&samples, wall).context("no samples")?;
    let per_trip = |ns: u64| (ns as f64 / 1000.0 / s.calls as f64 * 10.0).round() / 10.0;
    Ok(json!({
        "label": a.label.unwrap_or_else(|| a.command.join(" ")),
        "tool": a.tool,
        "clients": a.clients,
        "rounds": s.calls,
        "p50_us": (s.p50_us * 10.0).round() / 10.0,
        "p99_us": (s.p99_us * 10.0).round() / 10.0,
        "round_trips_per_s": (s.calls_per_s * 10.0).round() / 10.0,
        // CPU per round trip: the server and the upstream it started, and this process.
        "server_cpu_us": per_trip(used.server.cpu_ns),
        "client_cpu_us": per_trip(used.client.cpu_ns),
        "left_waiting": a.leave,
        "result": first.as_ref().map(client::result_value),
    }))
}
