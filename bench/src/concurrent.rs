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
    let before = Sched::now();
    let (samples, wall) = round(&session, &a.tool, &args, a.calls, a.concurrency).await?;
    let used = Sched::now().since(&before);
    let s = Summary::of(&samples, wall).context("no samples")?;
    let per_call = |ns: u64| r(ns as f64 / 1000.0 / s.calls as f64);
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
        // CPU and scheduling per call, summed over threads: `client` is this process, `server`
        // the command and every process it started (a gateway's upstreams too). CPU time is
        // what the work costs; run-queue wait is time runnable threads waited for a core
        // (other load on the machine); switches count wake-ups (voluntary + involuntary).
        "client_cpu_us": per_call(used.client.cpu_ns),
        "server_cpu_us": per_call(used.server.cpu_ns),
        // Of it, what the command's children used: the gateway's own cost is the difference.
        "upstream_cpu_us": per_call(used.upstream.cpu_ns),
        "runq_wait_us": per_call(used.client.wait_ns + used.server.wait_ns),
        "switches": r((used.client.switches + used.server.switches) as f64 / s.calls as f64),
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

/// Scheduler counters of this process and of its descendants, from `/proc` (Linux; zeros
/// elsewhere). Threads that exit between two readings take their counts with them.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Sched {
    pub client: Counters,
    /// The command and everything it started.
    pub server: Counters,
    /// What the command started (a gateway's upstreams): `server` minus the command itself.
    upstream: Counters,
}

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counters {
    pub cpu_ns: u64,
    pub wait_ns: u64,
    pub switches: u64,
}

impl Sched {
    pub(crate) fn now() -> Sched {
        let me = std::process::id();
        let (mut server, mut upstream) = (Counters::default(), Counters::default());
        for (pid, depth) in descendants(me) {
            let counters = process_counters(pid);
            server.add(counters);
            if depth > 1 {
                upstream.add(counters);
            }
        }
        Sched {
            client: process_counters(me),
            server,
            upstream,
        }
    }

    /// This process and a server it did not start (`server_pid`, without its children).
    pub(crate) fn of_server(server_pid: u32) -> Sched {
        Sched {
            client: process_counters(std::process::id()),
            server: process_counters(server_pid),
            upstream: Counters::default(),
        }
    }

    pub(crate) fn since(&self, before: &Sched) -> Sched {
        Sched {
            client: self.client.minus(&before.client),
            server: self.server.minus(&before.server),
            upstream: self.upstream.minus(&before.upstream),
        }
    }
}

impl Counters {
    fn add(&mut self, o: Counters) {
        self.cpu_ns += o.cpu_ns;
        self.wait_ns += o.wait_ns;
        self.switches += o.switches;
    }

    fn minus(&self, o: &Counters) -> Counters {
        Counters {
            cpu_ns: self.cpu_ns.saturating_sub(o.cpu_ns),
            wait_ns: self.wait_ns.saturating_sub(o.wait_ns),
            switches: self.switches.saturating_sub(o.switches),
        }
    }
}

/// Sum over the process's threads of `schedstat` (CPU ns, run-queue wait ns) and context
/// switches from `status`.
fn process_counters(pid: u32) -> Counters {
    let mut total = Counters::default();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return total;
    };
    for task in tasks.flatten() {
        let dir = task.path();
        if let Ok(text) = std::fs::read_to_string(dir.join("schedstat")) {
            let mut fields = text
                .split_whitespace()
                .map(|f| f.parse::<u64>().unwrap_or(0));
            total.cpu_ns += fields.next().unwrap_or(0);
            total.wait_ns += fields.next().unwrap_or(0);
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("status")) {
            total.switches += text
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>();
        }
    }
    total
}

/// Every process below `root` with its depth (1: a child), found through the parent pid in
/// `/proc/PID/stat`.
fn descendants(root: u32) -> Vec<(u32, usize)> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let ppid = stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parent_of.push((pid, ppid));
        }
    }
    let mut found = vec![(root, 0)];
    let mut i = 0;
    while i < found.len() {
        let (parent, depth) = found[i];
        found.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| (*p, depth + 1)),
        );
        i += 1;
    }
    found.remove(0);
    found
}
