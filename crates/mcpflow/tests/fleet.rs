//! The fleet (issue #19): three `mcpflow serve --http` replicas on one PostgreSQL behind a
//! real HAProxy (Debian's package, configured as the README's "Running a fleet" says).
//!
//! - A debugger on replica A watches and resumes a run executing on replica B.
//! - A bounded mixed load of graph calls, upstream calls, session starts and continues from
//!   clients of both spec eras goes through HAProxy while one replica is killed with `kill -9`:
//!   only calls in flight at the kill fail (each one checked against the set in flight), no
//!   session is lost (sessions started on the killed replica are continued on the others),
//!   every continue is answered once (a second one is refused as ended).
//! - A rolling restart of all three, one by one (SIGTERM, the drain, a new process on the
//!   same port), under the same load: no call fails.
//!
//! 2025-11-25 clients keep their MCP session on one replica (HAProxy sticks it by
//! `Mcp-Session-Id`); a replica that never saw the id answers 404 and the client initializes
//! again, as the spec asks. Skipped with one line when HAProxy is not installed, unless
//! `MCPFLOW_REQUIRE_HAPROXY` is set (CI).
mod common;
mod http_common;
mod sessions_support;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sessions_support::TestStore;

const CONFIG: &str = r#"
version: "1.0"
server: {name: fleet, version: "1.0.0"}
http: {drainDelayMs: 1500, shutdownTimeoutMs: 20000}
mcpServers:
  fixture: {command: "{fixture}"}
tools:
  - name: double
    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    nodes:
      - {id: entry, type: entry, next: twice}
      - {id: twice, type: transform, transform: {expr: '{"n": entry.n * 2}'}, next: exit}
      - {id: exit, type: exit}
  - name: nap
    inputSchema: {type: object, properties: {ms: {type: integer}}, required: [ms]}
    nodes:
      - {id: entry, type: entry, next: sleep}
      - {id: sleep, type: mcp, server: fixture, tool: sleep, args: {ms: {expr: "entry.ms"}}, next: exit}
      - {id: exit, type: exit}
  - name: approve
    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    nodes:
      - {id: start, type: entry, next: ask}
      - id: ask
        type: await
        message: "Approve?"
        inputSchema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
        next: done
      - id: done
        type: transform
        transform: {expr: "{'n': $.start.n, 'ok': $.ask.ok}"}
        next: finish
      - {id: finish, type: exit}
"#;

/// The HAProxy configuration the README documents, with this test's ports.
fn haproxy_config(front: u16, replicas: &[u16]) -> String {
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, port)| format!("    server r{i} 127.0.0.1:{port} check\n"))
        .collect();
    format!(
        r#"global
    maxconn 4096

defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    # A request that could not reach a replica is sent to another one; one that reached it
    # is never sent twice.
    retries 3
    retry-on conn-failure
    option redispatch 1
    # One request per connection to a replica: a replica that stops never gets a request on
    # a connection it is closing.
    option http-server-close
    http-reuse never

frontend mcp
    bind 127.0.0.1:{front}
    default_backend mcpflow

backend mcpflow
    balance roundrobin
    # A draining replica answers /readyz with 503: two failed checks take it out.
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
    http-check expect status 200
    default-server inter 200ms fall 2 rise 2
    # Which replica answered (the test reads it; not needed in production).
    http-response set-header x-replica %s
    # 2025-11-25 sessions live on the replica that answered their initialize.
    stick-table type string len 128 size 100k expire 1h
    stick match req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
{servers}"#
    )
}

fn haproxy() -> Option<PathBuf> {
    [
        "/usr/sbin/haproxy",
        "/usr/bin/haproxy",
        "/usr/local/sbin/haproxy",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A child process killed (SIGKILL) when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `mcpflow serve CONFIG --http 127.0.0.1:PORT --store URL --instance NAME`, once it listens.
fn replica(config: &Path, port: u16, store: &str, name: &str) -> Proc {
    let mut child = Command::new(http_common::mcpflow())
        .args(["serve", config.to_str().expect("utf-8")])
        .args(["--http", &format!("127.0.0.1:{port}")])
        .args(["--store", store, "--instance", name])
        .env("MCPFLOW_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpflow starts");
    let stderr = child.stderr.take().expect("stderr piped");
    let mut lines = BufReader::new(stderr).lines();
    loop {
        let line = lines
            .next()
            .expect("mcpflow prints its address before exiting")
            .expect("stderr is text");
        if line.starts_with("mcpflow: listening on ") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Proc(child)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// Waits until `url` answers 200, for at most 20 s.
async fn until_ok(url: &str) {
    let http = client();
    for _ in 0..400 {
        if let Ok(r) = http.get(url).send().await
            && r.status() == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{url} never answered 200");
}

/// Three replicas of one config on a fresh PostgreSQL schema behind HAProxy. Dropped, it
/// stops them all, then drops the schema.
struct Fleet {
    replicas: Vec<Proc>,
    _balancer: Proc,
    config: PathBuf,
    ports: Vec<u16>,
    front: u16,
    store: TestStore,
}

impl Fleet {
    /// `None` (the test skipped, with a line) when HAProxy is not installed, unless
    /// `MCPFLOW_REQUIRE_HAPROXY` is set.
    async fn start(yaml: &str) -> Option<Fleet> {
        let Some(haproxy) = haproxy() else {
            if std::env::var_os("MCPFLOW_REQUIRE_HAPROXY").is_some() {
                panic!("haproxy is not installed and MCPFLOW_REQUIRE_HAPROXY is set");
            }
            eprintln!("skipped: haproxy is not installed (apt-get install haproxy)");
            return None;
        };
        let store = TestStore::postgres().await;
        let config = store.config(yaml);
        let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let replicas: Vec<Proc> = ports
            .iter()
            .enumerate()
            .map(|(i, port)| replica(&config, *port, &store.url, &format!("r{i}")))
            .collect();
        let front = free_port();
        let haproxy_cfg = store.dir.path().join("haproxy.cfg");
        std::fs::write(&haproxy_cfg, haproxy_config(front, &ports)).expect("haproxy.cfg");
        let balancer = Proc(
            Command::new(haproxy)
                .args(["-db", "-f", haproxy_cfg.to_str().expect("utf-8")])
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("haproxy starts"),
        );
        until_ok(&format!("http://127.0.0.1:{front}/readyz")).await;
        // Every replica up in HAProxy (two checks each).
        tokio::time::sleep(Duration::from_millis(800)).await;
        Some(Fleet {
            replicas,
            _balancer: balancer,
            config,
            ports,
            front,
            store,
        })
    }

    fn base(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.ports[i])
    }

    /// HAProxy's address.
    fn front(&self) -> String {
        format!("http://127.0.0.1:{}", self.front)
    }

    /// Starts replica `i` again (after it stopped), on its port, under its name.
    fn restart(&mut self, i: usize) {
        // Blocks while it starts: the load's clients go on on the other worker.
        let started = tokio::task::block_in_place(|| {
            replica(
                &self.config,
                self.ports[i],
                &self.store.url,
                &format!("r{i}"),
            )
        });
        self.replicas[i] = started;
    }

    /// The index of the replica HAProxy names `name` (`x-replica`).
    fn index_of(&self, name: &str) -> usize {
        name.strip_prefix('r')
            .and_then(|i| i.parse().ok())
            .filter(|i| *i < self.replicas.len())
            .unwrap_or_else(|| panic!("HAProxy named no replica of ours: {name:?}"))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Era {
    Y2025,
    Y2026,
}

/// What a call came to.
enum Outcome {
    /// A JSON-RPC answer.
    Answer(Value),
    /// 404 on a 2025-11-25 session: the replica does not know it; initialize again.
    Gone,
    Failed(String),
}

/// What the load saw, shared by its clients.
#[derive(Default)]
struct Ledger {
    next_call: AtomicU64,
    in_flight: Mutex<HashSet<u64>>,
    /// The calls in flight when the replica was killed.
    at_kill: Mutex<Option<HashSet<u64>>>,
    failures: Mutex<Vec<(u64, &'static str, String)>>,
    answered: AtomicU64,
    reinitialized: AtomicU64,
    /// Sessions whose continue was answered, and those whose continue was in flight on the
    /// killed replica (claimed there: its lease lapses later).
    completed: Mutex<Vec<String>>,
    stranded: Mutex<Vec<String>>,
    phase: Mutex<&'static str>,
}

/// One MCP client of either era, through one URL.
struct Mcp {
    http: reqwest::Client,
    url: String,
    era: Era,
    session: Option<String>,
    /// The replica that answered the last `initialize` (HAProxy's `x-replica`).
    replica: Option<String>,
    ledger: Arc<Ledger>,
}

impl Mcp {
    async fn new(url: &str, era: Era, ledger: Arc<Ledger>) -> Mcp {
        let mut mcp = Mcp {
            http: client(),
            url: url.to_owned(),
            era,
            session: None,
            replica: None,
            ledger,
        };
        if era == Era::Y2025 {
            mcp.initialize().await;
        }
        mcp
    }

    async fn initialize(&mut self) {
        for _ in 0..50 {
            let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "fleet", "version": "0.0.0"}}});
            let sent = self
                .http
                .post(&self.url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.to_string())
                .send()
                .await;
            if let Ok(r) = sent
                && r.status() == 200
                && let Some(id) = r.headers().get("mcp-session-id")
            {
                let id = id.to_str().expect("ascii").to_owned();
                self.replica = r
                    .headers()
                    .get("x-replica")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let _ = r.text().await;
                let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
                let r = self
                    .http
                    .post(&self.url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-session-id", &id)
                    .header("mcp-protocol-version", "2025-11-25")
                    .body(note.to_string())
                    .send()
                    .await
                    .expect("initialized sent");
                assert!(r.status().is_success(), "initialized: {}", r.status());
                self.session = Some(id);
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("initialize never succeeded through {}", self.url);
    }

    /// One `tools/call`, counted in flight from before it is sent to its answer.
    async fn send(&self, name: &str, arguments: &Value) -> Outcome {
        let id = self.ledger.next_call.fetch_add(1, Ordering::Relaxed);
        self.ledger.in_flight.lock().expect("ledger").insert(id);
        let outcome = self.post(id, name, arguments).await;
        self.ledger.in_flight.lock().expect("ledger").remove(&id);
        if let Outcome::Failed(why) = &outcome {
            let phase = *self.ledger.phase.lock().expect("ledger");
            self.ledger.failures.lock().expect("ledger").push((
                id,
                phase,
                format!("{name}: {why}"),
            ));
        }
        outcome
    }

    async fn post(&self, id: u64, name: &str, arguments: &Value) -> Outcome {
        let mut params = json!({"name": name, "arguments": arguments});
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        match self.era {
            Era::Y2025 => {
                request = request.header("mcp-protocol-version", "2025-11-25").header(
                    "mcp-session-id",
                    self.session.as_deref().unwrap_or_default(),
                );
            }
            Era::Y2026 => {
                params["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "fleet", "version": "0.0.0"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                });
                request = request
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", "tools/call")
                    .header("mcp-name", name);
            }
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let response = match request.body(body.to_string()).send().await {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(format!("not answered: {e}")),
        };
        let status = response.status().as_u16();
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => return Outcome::Failed(format!("answer cut: {e}")),
        };
        if status == 404 && self.era == Era::Y2025 {
            return Outcome::Gone;
        }
        if status != 200 {
            return Outcome::Failed(format!("HTTP {status}: {text}"));
        }
        let message = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|m| m.get("id").is_some())
            .or_else(|| serde_json::from_str(&text).ok());
        match message {
            Some(m) if m.get("result").is_some() => Outcome::Answer(m["result"].clone()),
            Some(m) => Outcome::Failed(format!("JSON-RPC error: {m}")),
            None => Outcome::Failed(format!("answer cut: {text:?}")),
        }
    }

    /// A call, initializing again first whenever the replica does not know the session.
    async fn call(&mut self, name: &str, arguments: Value) -> Option<Value> {
        loop {
            match self.send(name, &arguments).await {
                Outcome::Answer(result) => {
                    self.ledger.answered.fetch_add(1, Ordering::Relaxed);
                    return Some(result);
                }
                Outcome::Gone => {
                    self.ledger.reinitialized.fetch_add(1, Ordering::Relaxed);
                    self.initialize().await;
                }
                Outcome::Failed(_) => return None,
            }
        }
    }
}

fn structured(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "the call failed: {result}");
    &result["structuredContent"]
}

/// Continues `session` once; a continue that got no answer is resolved by the session's
/// status (continued when it still waits, done when completed, stranded when its continue
/// is still claimed by the killed replica).
async fn finish(mcp: &mut Mcp, session: &str, n: i64) {
    let ledger = mcp.ledger.clone();
    for _ in 0..3 {
        let input = json!({"sessionId": session, "input": {"ok": true}});
        if let Some(result) = mcp.call("approve_continue", input).await {
            assert_eq!(structured(&result), &json!({"n": n, "ok": true}));
            ledger
                .completed
                .lock()
                .expect("ledger")
                .push(session.to_owned());
            return;
        }
        let Some(status) = mcp
            .call("approve_status", json!({"sessionId": session}))
            .await
        else {
            continue;
        };
        match structured(&status)["status"].as_str() {
            Some("waiting") => continue,
            Some("completed") => {
                ledger
                    .completed
                    .lock()
                    .expect("ledger")
                    .push(session.to_owned());
                return;
            }
            Some("claimed") => {
                ledger
                    .stranded
                    .lock()
                    .expect("ledger")
                    .push(session.to_owned());
                return;
            }
            other => panic!("session {session} is {other:?} after a failed continue"),
        }
    }
    panic!("session {session} could not be continued");
}

/// One client's share of the load, until `stop` (at most `rounds` rounds).
async fn load(mut mcp: Mcp, client: i64, rounds: i64, stop: Arc<AtomicBool>) {
    for round in 0..rounds {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let n = client * 1000 + round;
        if let Some(r) = mcp.call("double", json!({"n": n})).await {
            assert_eq!(structured(&r), &json!({"n": n * 2}));
        }
        if let Some(r) = mcp.call("nap", json!({"ms": 150})).await {
            structured(&r);
        }
        let Some(started) = mcp.call("approve", json!({"n": n})).await else {
            continue;
        };
        let handle = structured(&started);
        assert_eq!(handle["status"], "waiting", "{handle}");
        let session = handle["sessionId"].as_str().expect("sessionId").to_owned();
        finish(&mut mcp, &session, n).await;
    }
}

async fn run_load(
    url: &str,
    ledger: &Arc<Ledger>,
    stop: &Arc<AtomicBool>,
    rounds: i64,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut clients = Vec::new();
    for c in 0..6 {
        let era = if c % 2 == 0 { Era::Y2025 } else { Era::Y2026 };
        let mcp = Mcp::new(url, era, ledger.clone()).await;
        clients.push(tokio::spawn(load(mcp, c, rounds, stop.clone())));
    }
    clients
}

/// Reads a run's SSE stream until `end`, collecting the event names.
async fn watch_events(url: String) -> Vec<String> {
    let mut response = client()
        .get(&url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("events requested");
    assert_eq!(response.status(), 200, "{url}");
    let mut names = Vec::new();
    let mut text = String::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(at) = text.find("\n\n") {
            let block: String = text.drain(..at + 2).collect();
            if let Some(name) = block.lines().find_map(|l| l.strip_prefix("event:")) {
                names.push(name.trim().to_owned());
            }
        }
        if names.last().is_some_and(|n| n == "end") {
            break;
        }
    }
    names
}

async fn debugger_on_a_sees_a_run_on_b(a: &str, b: &str) {
    let http = client();
    let started: Value = http
        .post(format!("{b}/api/runs"))
        .header("content-type", "application/json")
        .body(json!({"tool": "double", "args": {"n": 4}, "debug": {"pause": true}}).to_string())
        .send()
        .await
        .expect("run started on B")
        .json()
        .await
        .expect("JSON");
    let id = started["id"].as_str().expect("run id").to_owned();
    let watcher = tokio::spawn(watch_events(format!("{a}/api/runs/{id}/events")));
    // The watcher is attached before the run goes on: resumed from A, through the fleet.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let resumed = http
        .post(format!("{a}/api/runs/{id}/resume"))
        .send()
        .await
        .expect("resume sent");
    let status = resumed.status();
    let body = resumed.text().await.unwrap_or_default();
    assert_eq!(status, 200, "resumed from A: {body}");
    let names = tokio::time::timeout(Duration::from_secs(20), watcher)
        .await
        .expect("the run's stream ends")
        .expect("watcher");
    assert!(
        names.iter().any(|n| n == "nodeFinished")
            && names.last().map(String::as_str) == Some("end"),
        "A saw B's run: {names:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_behind_haproxy_survive_a_kill_and_a_rolling_restart() {
    let Some(mut fleet) = Fleet::start(CONFIG).await else {
        return;
    };
    let base = |i: usize| fleet.base(i);
    let url = format!("{}/mcp", fleet.front());

    debugger_on_a_sees_a_run_on_b(&base(0), &base(1)).await;

    // Sessions that wait on the replica about to be killed.
    let ledger = Arc::new(Ledger::default());
    let mut on_r2 = Mcp::new(&format!("{}/mcp", base(2)), Era::Y2026, ledger.clone()).await;
    let mut doomed = Vec::new();
    for n in 0..4 {
        let r = on_r2
            .call("approve", json!({"n": n}))
            .await
            .expect("started");
        doomed.push((
            structured(&r)["sessionId"].as_str().expect("id").to_owned(),
            n,
        ));
    }

    // A 2025-11-25 client whose MCP session lives on r2 (HAProxy's round robin gets there
    // within three initializes).
    let mut pinned = Mcp::new(&url, Era::Y2025, ledger.clone()).await;
    for _ in 0..6 {
        if pinned.replica.as_deref() == Some("r2") {
            break;
        }
        pinned.initialize().await;
    }
    assert_eq!(
        pinned.replica.as_deref(),
        Some("r2"),
        "no initialize reached r2"
    );

    // The load, and kill -9 of r2 in the middle of it.
    *ledger.phase.lock().expect("ledger") = "kill";
    let stop = Arc::new(AtomicBool::new(false));
    let clients = run_load(&url, &ledger, &stop, 12).await;
    while ledger.answered.load(Ordering::Relaxed) < 40 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    {
        // Nothing starts or ends between the snapshot and the kill.
        let in_flight = ledger.in_flight.lock().expect("ledger");
        let killed = &mut fleet.replicas[2].0;
        killed.kill().expect("kill -9");
        killed.wait().expect("reaped");
        *ledger.at_kill.lock().expect("ledger") = Some(in_flight.clone());
    }
    // r2's MCP sessions are gone with it: the replica a request goes to now answers 404, and
    // the client initializes again (on a live replica) and is answered.
    let seen = ledger.reinitialized.load(Ordering::Relaxed);
    let r = pinned
        .call("double", json!({"n": 21}))
        .await
        .expect("answered");
    assert_eq!(structured(&r), &json!({"n": 42}));
    assert!(
        ledger.reinitialized.load(Ordering::Relaxed) > seen,
        "the session of the killed replica was re-initialized"
    );
    assert_ne!(pinned.replica.as_deref(), Some("r2"));
    let mut through_lb = Mcp::new(&url, Era::Y2025, ledger.clone()).await;
    for (session, n) in &doomed {
        finish(&mut through_lb, session, *n).await;
    }
    for c in clients {
        c.await.expect("a client panicked");
    }
    let failed: Vec<(u64, &str, String)> = ledger.failures.lock().expect("ledger").clone();
    let at_kill = ledger
        .at_kill
        .lock()
        .expect("ledger")
        .clone()
        .unwrap_or_default();
    for (id, _, why) in &failed {
        assert!(
            at_kill.contains(id),
            "call {id} failed but was not in flight at the kill: {why}"
        );
    }
    let completed: Vec<String> = ledger.completed.lock().expect("ledger").clone();
    let stranded: Vec<String> = ledger.stranded.lock().expect("ledger").clone();
    for (session, _) in &doomed {
        assert!(
            completed.contains(session),
            "session {session} started on the killed replica was lost"
        );
    }
    // Exactly once: a completed session refuses another continue.
    let again = through_lb
        .call(
            "approve_continue",
            json!({"sessionId": completed[0], "input": {"ok": false}}),
        )
        .await
        .expect("answered");
    assert_eq!(again["isError"], true, "{again}");
    let unique: HashSet<&String> = completed.iter().collect();
    assert_eq!(unique.len(), completed.len(), "a session completed twice");
    eprintln!(
        "fleet: kill -9 phase: {} calls answered, {} failed (all {} were in flight at the kill, \
         {} were in flight then), {} sessions completed, {} continues stranded on the killed \
         replica, {} re-initializations",
        ledger.answered.load(Ordering::Relaxed),
        failed.len(),
        failed.len(),
        at_kill.len(),
        completed.len(),
        stranded.len(),
        ledger.reinitialized.load(Ordering::Relaxed)
    );

    // Back to three, then a rolling restart of all three under load: nothing fails.
    fleet.restart(2);
    tokio::time::sleep(Duration::from_millis(800)).await;
    *ledger.phase.lock().expect("ledger") = "rolling";
    let before = ledger.failures.lock().expect("ledger").len();
    let stop = Arc::new(AtomicBool::new(false));
    let clients = run_load(&url, &ledger, &stop, 200).await;
    for i in 0..fleet.replicas.len() {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let running = &mut fleet.replicas[i];
        let pid = running.0.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let exited = loop {
            if let Some(status) = running.0.try_wait().expect("try_wait") {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(exited.success(), "replica {i} stopped cleanly: {exited:?}");
        fleet.restart(i);
        until_ok(&format!("{}/readyz", fleet.base(i))).await;
        // HAProxy takes it back after two good checks.
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.expect("a client panicked");
    }
    let failures = ledger.failures.lock().expect("ledger");
    let rolling: Vec<&(u64, &str, String)> = failures[before..].iter().collect();
    assert!(
        rolling.is_empty(),
        "calls failed in the rolling restart: {rolling:?}"
    );
    eprintln!(
        "fleet: rolling restart: {} calls answered in all, {} re-initializations in all",
        ledger.answered.load(Ordering::Relaxed),
        ledger.reinitialized.load(Ordering::Relaxed)
    );
}

/// A resumable tool whose upstream call naps, on a fleet whose replicas hold their runs for
/// 2 s without renewing (`store.leaseSeconds`).
const RESUMABLE: &str = r#"
version: "1.0"
server: {name: fleet, version: "1.0.0"}
store: {leaseSeconds: 2}
mcpServers:
  fixture: {command: "{fixture}"}
tools:
  - name: slow
    resumable: true
    inputSchema: {type: object, properties: {ms: {type: integer}}, required: [ms]}
    nodes:
      - {id: entry, type: entry, next: first}
      - {id: first, type: mcp, server: fixture, tool: echo, args: {text: "first"}, next: nap}
      - {id: nap, type: mcp, server: fixture, tool: sleep, args: {ms: {expr: "entry.ms"}}, next: exit}
      - {id: exit, type: exit}
"#;

/// `GET /api/runs/{id}` through `url` until the run ended, for at most 20 s (a lease of 2 s
/// lapses, a peer's upkeep sees it within a second, and the nap runs again).
async fn until_ended(url: &str, id: &str) -> Value {
    let http = client();
    for _ in 0..200 {
        if let Ok(r) = http.get(format!("{url}/api/runs/{id}")).send().await
            && r.status() == 200
            && let Ok(run) = r.json::<Value>().await
            && !["running", "paused", "interrupted"].contains(&run["status"].as_str().unwrap_or(""))
        {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("run {id} never ended");
}

fn executions(run: &Value, node: &str) -> usize {
    run["history"]
        .as_array()
        .map_or(0, |h| h.iter().filter(|r| r["nodeId"] == node).count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_restarts_a_killed_replicas_resumable_run_once_its_lease_lapses() {
    let Some(mut fleet) = Fleet::start(RESUMABLE).await else {
        return;
    };
    let front = fleet.front();
    let http = client();

    // A live replica keeps its short lease: a run longer than it is not taken by a peer
    // (it would fail here, its owner's next write refused as a lost lease).
    let ledger = Arc::new(Ledger::default());
    let mut mcp = Mcp::new(&format!("{front}/mcp"), Era::Y2026, ledger).await;
    let r = mcp
        .call("slow", json!({"ms": 3000}))
        .await
        .expect("a run longer than the lease answered");
    structured(&r);

    // A run started through HAProxy, killed with its replica in the middle of its nap.
    let started = http
        .post(format!("{front}/api/runs"))
        .header("content-type", "application/json")
        .body(json!({"tool": "slow", "args": {"ms": 2000}}).to_string())
        .send()
        .await
        .expect("run started");
    let owner = started
        .headers()
        .get("x-replica")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .expect("HAProxy names the replica");
    let started: Value = started.json().await.expect("JSON");
    let id = started["id"].as_str().expect("run id").to_owned();
    let b = fleet.index_of(&owner);
    // Its first upstream call is committed before the nap starts.
    let on_b = fleet.base(b);
    let mut committed = false;
    for _ in 0..200 {
        let run: Value = http
            .get(format!("{on_b}/api/runs/{id}"))
            .send()
            .await
            .expect("run read")
            .json()
            .await
            .expect("JSON");
        if executions(&run, "first") == 1 {
            committed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(committed, "the run's first call was never recorded");
    let killed = &mut fleet.replicas[b].0;
    killed.kill().expect("kill -9");
    killed.wait().expect("reaped");

    let run = until_ended(&front, &id).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    // Restarted after its last committed node: the first call is not made again.
    assert_eq!(executions(&run, "first"), 1, "{run}");
    assert_eq!(executions(&run, "nap"), 1, "{run}");
    let text = run["result"].to_string();
    assert!(text.contains("2000"), "the nap's result: {run}");
}

/// What the replicas say on the fleet channel (the test listens to it too).
struct Channel(sqlx::postgres::PgListener);

impl Channel {
    async fn listen(store: &TestStore) -> Channel {
        let schema = store.schema().expect("a PostgreSQL store");
        let mut listener = sqlx::postgres::PgListener::connect(&sessions_support::pg_base_url())
            .await
            .expect("the test listens");
        listener
            .listen(&format!("mcpflow_{schema}"))
            .await
            .expect("LISTEN");
        Channel(listener)
    }

    /// The messages sent within `window` from now.
    async fn heard(&mut self, window: Duration) -> Vec<Value> {
        let mut heard = Vec::new();
        let until = tokio::time::Instant::now() + window;
        while let Ok(Ok(note)) = tokio::time::timeout_at(until, self.0.recv()).await {
            heard.push(serde_json::from_str(note.payload()).expect("a fleet message is JSON"));
        }
        heard
    }

    /// The first message `matches` accepts, within 30 s.
    async fn until(&mut self, matches: impl Fn(&Value) -> bool) -> Value {
        let heard = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let note = self.0.recv().await.expect("the channel is up");
                let m: Value = serde_json::from_str(note.payload()).expect("JSON");
                if matches(&m) {
                    return m;
                }
            }
        })
        .await;
        heard.expect("the fleet message never came")
    }
}

/// One SSE stream read on a task of its own: (event, data) as they come. Dropping it (or
/// aborting its task) closes the connection.
struct Sse {
    events: tokio::sync::mpsc::UnboundedReceiver<(String, Value)>,
    task: tokio::task::JoinHandle<()>,
}

impl Sse {
    async fn open(url: String) -> Sse {
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let mut response = reqwest::Client::new()
            .get(&url)
            .header("accept", "text/event-stream")
            .send()
            .await
            .expect("events requested");
        assert_eq!(response.status(), 200, "{url}");
        let task = tokio::spawn(async move {
            let mut text = String::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                text.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(at) = text.find("\n\n") {
                    let block: String = text.drain(..at + 2).collect();
                    let field = |name: &str| {
                        block
                            .lines()
                            .find_map(|l| l.strip_prefix(name))
                            .map(|v| v.trim().to_owned())
                    };
                    if let Some(event) = field("event:") {
                        let data = field("data:")
                            .and_then(|d| serde_json::from_str(&d).ok())
                            .unwrap_or(Value::Null);
                        if tx.send((event, data)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Sse { events, task }
    }

    /// The next event `matches` accepts (the others are passed over), within 30 s.
    async fn until(&mut self, matches: impl Fn(&str, &Value) -> bool) -> (String, Value) {
        let found = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let (event, data) = self.events.recv().await.expect("the stream is open");
                if matches(&event, &data) {
                    return (event, data);
                }
            }
        })
        .await;
        found.expect("the event never came")
    }

    fn close(self) {
        self.task.abort();
    }
}

/// Starts `double` on the replica at `base` through the run API; its id.
async fn start_double(base: &str, n: i64, pause: bool) -> String {
    let started: Value = client()
        .post(format!("{base}/api/runs"))
        .header("content-type", "application/json")
        .body(json!({"tool": "double", "args": {"n": n}, "debug": {"pause": pause}}).to_string())
        .send()
        .await
        .expect("run started")
        .json()
        .await
        .expect("JSON");
    started["id"].as_str().expect("run id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_of_all_runs_sees_the_fleets_and_nothing_is_sent_unwatched() {
    let Some(fleet) = Fleet::start(CONFIG).await else {
        return;
    };
    let (a, b) = (fleet.base(0), fleet.base(1));
    let mut channel = Channel::listen(&fleet.store).await;

    // Nobody watches: a run on B sends nothing to the fleet.
    let id = start_double(&b, 1, false).await;
    until_ended(&b, &id).await;
    let heard = channel.heard(Duration::from_millis(500)).await;
    assert!(heard.is_empty(), "sent while nobody watched: {heard:?}");

    // A watcher of all runs on A: each replica answers with its live runs, then B's run's
    // events reach it.
    let mut all = Sse::open(format!("{a}/api/events")).await;
    for _ in 0..3 {
        all.until(|event, _| event == "live").await;
    }
    let id = start_double(&b, 2, false).await;
    let (_, started) = all
        .until(|event, data| event == "runStarted" && data["runId"] == id.as_str())
        .await;
    assert_eq!(started["tool"], "double", "{started}");
    let (_, twice) = all
        .until(|event, data| {
            event == "nodeFinished"
                && data["runId"] == id.as_str()
                && data.to_string().contains(r#""nodeId":"twice""#)
        })
        .await;
    assert!(twice.to_string().contains(r#""n":4"#), "{twice}");
    let (_, finished) = all
        .until(|event, data| event == "runFinished" && data["runId"] == id.as_str())
        .await;
    assert_eq!(finished["status"], "succeeded", "{finished}");

    // The watcher goes: A says so, and B sends nothing more.
    all.close();
    channel.until(|m| m["t"] == "unwatchAll").await;
    // B stops on its next check of who watches (once a second).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let id = start_double(&b, 3, false).await;
    until_ended(&b, &id).await;
    let heard = channel.heard(Duration::from_millis(500)).await;
    assert!(
        !heard.iter().any(|m| m["t"] == "all"),
        "sent after the watcher left: {heard:?}"
    );

    // A watcher of one run on B, from A, that goes away before the run ends: B stops
    // sending that run's events.
    let id = start_double(&b, 4, true).await;
    let mut one = Sse::open(format!("{a}/api/runs/{id}/events")).await;
    one.until(|_, _| true).await;
    let watch = channel
        .until(|m| m["t"] == "watch" && m["run"] == id.as_str())
        .await;
    let w = watch["w"].as_str().expect("watch id").to_owned();
    one.close();
    channel
        .until(|m| m["t"] == "unwatch" && m["w"] == w.as_str())
        .await;
    // What B sent before it heard that (its replay) is not what this checks.
    channel.heard(Duration::from_millis(300)).await;
    let resumed = client()
        .post(format!("{b}/api/runs/{id}/resume"))
        .send()
        .await
        .expect("resumed");
    assert_eq!(resumed.status(), 200);
    until_ended(&b, &id).await;
    let heard = channel.heard(Duration::from_millis(500)).await;
    assert!(
        !heard.iter().any(|m| m["w"] == w.as_str()),
        "run {id}'s events sent after its watcher left: {heard:?}"
    );
}
