//! Live event streams: two watchers of one run (one joining late), all runs' stream (runs
//! started outside the API too), thousands of watchers, a watcher that never reads, and a
//! run nobody watches that leaves nothing behind.
mod support;

use std::time::Duration;

use mcpflow_engine::RunRequest;
use serde_json::{Value as Json, json};
use support::{TOOLS, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn names(events: &[(String, Json)]) -> Vec<String> {
    events.iter().map(|e| e.0.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_watchers_one_late_see_the_same_run() {
    let s = serve(TOOLS).await;
    let id = s
        .start(
            "each",
            json!({"list": [1, 2, 3]}),
            json!({"breakpoints": [{"node": "dbl", "condition": "$.fe.index = 1"}]}),
        )
        .await;
    let mut early = s.events(&format!("/api/runs/{id}/events")).await;
    let first = early.until("paused").await;
    // Joins while the run is paused halfway: gets what happened, then follows.
    let mut late = s.events(&format!("/api/runs/{id}/events")).await;
    let replayed = late.until("paused").await;
    assert_eq!(names(&replayed), names(&first));
    assert_eq!(replayed, first);
    s.post(&format!("/api/runs/{id}/resume"), json!({})).await;
    let rest_early = early.until("runFinished").await;
    let rest_late = late.until("runFinished").await;
    assert_eq!(rest_early, rest_late);
    assert_eq!(rest_early.last().expect("end").1["status"], "succeeded");
    // Both streams close after the run's end.
    assert_eq!(early.next().await.map(|e| e.0), Some("end".to_owned()));
    assert_eq!(early.next().await, None);
    assert_eq!(late.next().await.map(|e| e.0), Some("end".to_owned()));
    // A watcher after the end gets the replay, then the end.
    let mut after = s.events(&format!("/api/runs/{id}/events")).await;
    let all = after.until("runFinished").await;
    assert_eq!(all.len(), first.len() + rest_early.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_runs_stream_hears_runs_started_elsewhere() {
    let s = serve(TOOLS).await;
    let mut all = s.events("/api/events").await;
    let (name, live) = all.next().await.expect("the live runs first");
    assert_eq!((name.as_str(), &live["runs"]), ("live", &json!([])));
    // As an MCP client's call does: straight through the engine, not through the API.
    let run = s
        .engine
        .run(RunRequest::new("each", json!({"list": [5]})))
        .await;
    let seen = all.until("runFinished").await;
    assert_eq!(seen[0].0, "runStarted");
    assert_eq!(seen[0].1["runId"], json!(&*run.id));
    assert!(seen.iter().all(|e| e.1["runId"] == json!(&*run.id)));
    // It was watched, so it is kept: its history is there after its end.
    let (status, shown) = s.get(&format!("/api/runs/{}", run.id)).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["status"], "succeeded");
    assert_eq!(
        shown["history"].as_array().map(Vec::len),
        Some(run.history.len())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_nobody_watches_is_neither_recorded_nor_kept() {
    let s = serve(TOOLS).await;
    let run = s
        .engine
        .run(RunRequest::new("each", json!({"list": [1, 2]})))
        .await;
    assert_eq!(run.history.len(), 5);
    // No store, nobody watched: nothing of it stays in memory.
    let (status, _) = s.get(&format!("/api/runs/{}", run.id)).await;
    assert_eq!(status, 404);
    let (_, runs) = s.get("/api/runs").await;
    assert_eq!(runs["runs"], json!([]));
}

/// An SSE request on a raw socket, `Connection: close` so the server ends it with the stream.
async fn raw_watch(addr: &str, path: &str) -> tokio::net::TcpStream {
    let mut sock = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    sock.write_all(req.as_bytes()).await.expect("request sent");
    sock
}

async fn read_all(mut sock: tokio::net::TcpStream) -> String {
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), sock.read_to_end(&mut buf))
        .await
        .expect("the stream ends within 60 s")
        .expect("readable");
    String::from_utf8_lossy(&buf).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_watchers_each_see_the_run_to_its_end() {
    let s = serve(TOOLS).await;
    let id = s
        .start("count", json!({"n": 20}), json!({"pause": true}))
        .await;
    s.until(&id, |r| r["status"] == "paused").await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut socks = Vec::new();
    for _ in 0..2000 {
        socks.push(raw_watch(&addr, &format!("/api/runs/{id}/events")).await);
    }
    s.post(&format!("/api/runs/{id}/resume"), json!({})).await;
    let readers: Vec<_> = socks
        .into_iter()
        .map(|s| tokio::spawn(read_all(s)))
        .collect();
    for r in readers {
        let text = r.await.expect("reader");
        assert!(
            text.contains("event: runFinished"),
            "{}",
            &text[..text.len().min(500)]
        );
        assert_eq!(text.matches("event: nodeFinished").count(), 42);
    }
}

fn vm_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_never_reads_is_dropped_with_an_end_event() {
    let s = serve(TOOLS).await;
    // 60 000 iterations: 120 000 nodes, 240 000 events, far more than a socket buffers.
    let id = s
        .start("count", json!({"n": 60000}), json!({"pause": true}))
        .await;
    s.until(&id, |r| r["status"] == "paused").await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let stuck = raw_watch(&addr, &format!("/api/runs/{id}/events")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = vm_rss_kb();
    s.post(&format!("/api/runs/{id}/resume"), json!({})).await;
    for _ in 0..6000 {
        let (_, run) = s.get("/api/runs?status=succeeded").await;
        if run["runs"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = vm_rss_kb();
    // The run's own history (120 000 records, kept whole because it was watched) and the
    // bounded log; never a copy of the event stream for the stuck watcher. Generous.
    assert!(
        after.saturating_sub(before) < 400 * 1024,
        "grew by {} MiB",
        (after - before) / 1024
    );
    let text = read_all(stuck).await;
    let last = text.rsplit("event: ").next().expect("an event");
    assert!(last.starts_with("end"), "the last event: {last}");
    // A loop of pure transforms outruns its recorder too: what the recorder missed is a `gap`
    // event; what the watcher missed beyond the log, a `dropped` end. Either way, said.
    assert!(
        last.contains("dropped") || text.contains("event: gap"),
        "{last}\nevents: {}, gaps: {}",
        text.matches("event: ").count(),
        text.matches("event: gap").count()
    );
    assert!(text.matches("event: nodeFinished").count() < 120_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_joins_a_run_started_without_a_channel() {
    let s = serve(TOOLS).await;
    // As an MCP client's call does (no progress asked: no event channel), paused at its start.
    let control = mcpflow_engine::Control::new();
    control.pause();
    let engine = s.engine.clone();
    let c = control.clone();
    let run = tokio::spawn(async move {
        engine
            .run(RunRequest::new("each", json!({"list": [1, 2]})).with_control(c))
            .await
    });
    let (_, runs) = loop {
        let (code, runs) = s.get("/api/runs?status=paused").await;
        if runs["runs"].as_array().is_some_and(|r| !r.is_empty()) {
            break (code, runs);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let id = runs["runs"][0]["id"].as_str().expect("id").to_owned();
    let mut watcher = s.events(&format!("/api/runs/{id}/events")).await;
    let (name, joined) = watcher.next().await.expect("an event");
    assert_eq!(name, "joined");
    assert_eq!(joined["debug"]["paused"][0]["nodeId"], "entry");
    let (code, _) = s.post(&format!("/api/runs/{id}/resume"), json!({})).await;
    assert_eq!(code, 200);
    let seen = watcher.until("runFinished").await;
    assert_eq!(
        names(&seen).iter().filter(|n| *n == "nodeFinished").count(),
        5
    );
    assert_eq!(
        run.await.expect("run").status,
        mcpflow_engine::RunStatus::Succeeded
    );
}
