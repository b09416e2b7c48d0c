//! `mcpflow-bench sessions`: start + continue round trips of a tool that waits once, over one
//! stdio session: each round trip is `TOOL {args}` (answered `{status: "waiting", sessionId}`)
//! then `TOOL_continue {sessionId, input}` (answered with the result). With `--leave N`, N more
//! sessions are started and left waiting (to measure what a waiting session costs the store).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

use crate::client;
use crate::stats::Summary;

#[derive(Args, Debug)]
pub struct SessionsArgs {
    /// Measured round trips (start + continue).
    #[arg(long, default_value_t = 1000)]
    rounds: usize,
    /// Round trips made first and not measured.
    #[arg(long, default_value_t = 100)]
    warmup: usize,
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

pub async fn run(a: SessionsArgs) -> anyhow::Result<Value> {
    let args = object("--args", &a.args)?;
    let input: Value = serde_json::from_str(&a.input).context("--input is not JSON")?;
    let version = client::protocol("2025-11-25")?;
    let session = client::connect(&a.command, version, true).await?;
    let continue_tool = format!("{}_continue", a.tool);
    let round = |args: Map<String, Value>| {
        let session = &session;
        let tool = &a.tool;
        let continue_tool = &continue_tool;
        let input = input.clone();
        async move {
            let started = client::call(session, tool, &args).await?;
            let id = session_id(&started)?;
            let Value::Object(cont) = json!({"sessionId": id, "input": input}) else {
                bail!("unreachable: a literal object");
            };
            let done = client::call(session, continue_tool, &cont).await?;
            anyhow::Ok(done)
        }
    };
    let mut first = None;
    for _ in 0..a.warmup {
        first.get_or_insert(round(args.clone()).await?);
    }
    let mut samples: Vec<Duration> = Vec::with_capacity(a.rounds);
    let wall = Instant::now();
    for _ in 0..a.rounds {
        let t = Instant::now();
        let done = round(args.clone()).await?;
        samples.push(t.elapsed());
        first.get_or_insert(done);
    }
    let wall = wall.elapsed();
    for _ in 0..a.leave {
        session_id(&client::call(&session, &a.tool, &args).await?)?;
    }
    let _ = session.cancel().await;
    let s = Summary::of(&samples, wall).context("no samples")?;
    Ok(json!({
        "label": a.label.unwrap_or_else(|| a.command.join(" ")),
        "tool": a.tool,
        "rounds": s.calls,
        "p50_us": (s.p50_us * 10.0).round() / 10.0,
        "p99_us": (s.p99_us * 10.0).round() / 10.0,
        "round_trips_per_s": (s.calls_per_s * 10.0).round() / 10.0,
        "left_waiting": a.leave,
        "result": first.as_ref().map(client::result_value),
    }))
}
