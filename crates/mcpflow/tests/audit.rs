//! The audit log (issue #18) against `mcpflow serve` on a real port and over stdio: a graph
//! call, a proxied call, a hidden tool, a 403, a 401 and the two 429s each leave exactly one
//! line in the audit file with the right fields (the graph call's run id is the one `mcpflow
//! runs list` shows), the store keeps the same rows (`mcpflow audit --json`), and no key, token
//! or argument value is in either.

mod auth_support;
mod http_common;

use std::process::Command;
use std::time::{Duration, Instant};

use auth_support::{fixture_with, mcp, serve};
use serde_json::{Value, json};

/// An argument value that must never reach an audit line.
const SECRET_ARG: &str = "arg-value-7f3c9e2d-never-audited";
/// A well-formed key no one was given.
const WRONG_KEY: &str = "mcpf_0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab";

const CALLER: &[&str] = &["tools:list", "tools:call", "runs:read"];

/// `echo` and `secret_report` (which the `globs` key does not see), `nap` (a run that stays in
/// flight while the fixture sleeps), the fixture's `echo` proxied as `fx__echo`, a store and
/// an audit file beside the config.
fn rest() -> String {
    format!(
        r#"{tools}  - name: nap
    description: sleeps ms milliseconds in the fixture
    inputSchema: {{ type: object, properties: {{ ms: {{ type: integer }} }}, required: [ms] }}
    nodes:
      - {{ id: entry, type: entry, next: sleep }}
      - {{ id: sleep, type: mcp, server: fx, tool: sleep, args: {{ ms: {{ expr: "entry.ms" }} }}, next: exit }}
      - {{ id: exit, type: exit }}
proxy:
  upstreams:
    fx: {{ include: [echo] }}
store: sqlite://state.db
audit:
  file: audit.jsonl
"#,
        tools = auth_support::TOOLS
    )
}

/// Keys: `caller`; `limited` (one request a second); `busy` (one run in flight); and the
/// fixture's per-scope keys and `globs`.
fn audit_fixture() -> auth_support::Fixture {
    let f = fixture_with(
        &[("caller", CALLER), ("limited", CALLER), ("busy", CALLER)],
        &rest(),
    );
    let yaml = std::fs::read_to_string(&f.config).expect("config");
    let yaml = yaml
        .replace(
            "mcpServers: {}",
            &format!(
                "mcpServers:\n  fx: {{ command: \"{}\" }}",
                http_common::fixture().display()
            ),
        )
        .replacen(
            "  - name: \"limited\"\n",
            "  - name: \"limited\"\n    rateLimit: { requestsPerSecond: 1, burst: 1 }\n",
            1,
        )
        .replacen(
            "  - name: \"busy\"\n",
            "  - name: \"busy\"\n    maxConcurrentRuns: 1\n",
            1,
        );
    assert!(
        yaml.contains("rateLimit") && yaml.contains("maxConcurrentRuns"),
        "{yaml}"
    );
    std::fs::write(&f.config, yaml).expect("config written");
    f
}

fn call_params(tool: &str, arguments: Value) -> Value {
    json!({"name": tool, "arguments": arguments})
}

/// The audit file's lines, once it has at least `n` (the writer is off the request path).
fn lines_when(path: &std::path::Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The lines of `subject` calling `tool` with `outcome`.
fn matching<'a>(lines: &'a [Value], subject: Value, tool: &str, outcome: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["subject"] == subject && l["tool"] == tool && l["outcome"] == outcome)
        .collect()
}

fn the_one<'a>(lines: &'a [Value], subject: Value, tool: &str, outcome: &str) -> &'a Value {
    let found = matching(lines, subject.clone(), tool, outcome);
    assert_eq!(
        found.len(),
        1,
        "{subject} {tool} {outcome}: {}",
        serde_json::to_string_pretty(lines).unwrap_or_default()
    );
    found[0]
}

/// `mcpflow ARGS…` and its stdout as JSON.
fn cli_json(args: &[&str]) -> Value {
    let out = Command::new(http_common::mcpflow())
        .args(args)
        .output()
        .expect("mcpflow runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// Nothing secret in `text`: no key (whole or its tail), no argument value.
fn assert_no_secret(text: &str, f: &auth_support::Fixture, what: &str) {
    assert!(!text.contains(SECRET_ARG), "an argument value in {what}");
    assert!(!text.contains("mcpf_"), "a key in {what}");
    assert!(
        !text.contains(&WRONG_KEY[WRONG_KEY.len() - 32..]),
        "a key in {what}"
    );
    for (_, key) in &f.keys {
        assert!(!text.contains(&key[key.len() - 32..]), "a key in {what}");
    }
    assert!(!text.contains("sha256:"), "a key's digest in {what}");
}

/// A `tools/call` as `key` over Streamable HTTP (2026-07-28): the status and the message.
async fn call(http: &reqwest::Client, base: &str, key: &str, params: Value) -> (u16, Value) {
    let (status, _, m) = mcp(http, base, Some(key), "tools/call", params).await;
    (status, m)
}

/// A call that was served and did not fail.
fn served(status: u16, m: &Value) {
    assert_eq!(
        (status, &m["result"]["isError"]),
        (200, &json!(false)),
        "{m}"
    );
}

#[tokio::test]
async fn every_call_and_every_refusal_leaves_one_line_in_the_file_and_the_store() {
    let f = audit_fixture();
    let server = serve(&f.config, &[]);
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let file = f.dir.path().join("audit.jsonl");

    // A graph tool's call, with an argument value that must stay out of the log.
    let (status, m) = call(
        &http,
        &base,
        f.key("caller"),
        call_params("echo", json!({"text": SECRET_ARG})),
    )
    .await;
    served(status, &m);
    // A proxied tool's call.
    let (status, m) = call(
        &http,
        &base,
        f.key("caller"),
        call_params("fx__echo", json!({"secret": SECRET_ARG})),
    )
    .await;
    served(status, &m);
    // A tool hidden from the caller: answered as unknown.
    let (status, m) = call(
        &http,
        &base,
        f.key("globs"),
        call_params("secret_report", json!({})),
    )
    .await;
    assert_eq!(status, 200, "{m}");
    assert!(m["error"]["message"].as_str().is_some(), "{m}");
    // 403: a key without `tools:call`.
    let (status, m) = call(
        &http,
        &base,
        f.key("tools:list"),
        call_params("echo", json!({"text": SECRET_ARG})),
    )
    .await;
    assert_eq!(status, 403, "{m}");
    // 401: a key no one was given.
    let (status, m) = call(
        &http,
        &base,
        WRONG_KEY,
        call_params("echo", json!({"text": SECRET_ARG})),
    )
    .await;
    assert_eq!(status, 401, "{m}");
    // 429, the rate: `limited` is served until its bucket is empty.
    // Two calls at once, so that however slow the machine, the second finds the bucket empty.
    let (mut limited_served, mut limited_refused) = (0, 0);
    let limited = async || {
        let params = call_params("echo", json!({"text": SECRET_ARG}));
        mcp(&http, &base, Some(f.key("limited")), "tools/call", params).await
    };
    while limited_refused == 0 {
        let (a, b) = tokio::join!(limited(), limited());
        for (status, _, m) in [a, b] {
            match status {
                429 => limited_refused += 1,
                200 => limited_served += 1,
                _ => panic!("{status}: {m}"),
            }
        }
        assert!(limited_served < 20, "never rate-limited");
    }
    // 429, the runs in flight: `busy`'s nap holds its one slot. On a loaded machine a nap may
    // end before a call meets it: then another nap.
    let nap = |ms: u64| {
        let (http, base, key) = (http.clone(), base.clone(), f.key("busy").to_owned());
        tokio::spawn(async move {
            let params = call_params("nap", json!({"ms": ms}));
            mcp(&http, &base, Some(&key), "tools/call", params).await
        })
    };
    // A call that passed the middleware's check just before the nap took the slot is refused
    // by the engine instead (a JSON-RPC error inside a 200): audited as `too_many_runs` too.
    let (mut busy_served, mut busy_refused) = (0, 0);
    let mut naps = Vec::new();
    'naps: for _ in 0..3 {
        naps.push(nap(2000));
        // Sent at once, an echo could take the slot before the nap does.
        tokio::time::sleep(Duration::from_millis(200)).await;
        loop {
            let (status, m) =
                call(&http, &base, f.key("busy"), call_params("echo", json!({}))).await;
            if status == 429 {
                busy_refused += 1;
                break 'naps;
            }
            assert_eq!(status, 200, "{m}");
            if m["error"]["code"] == json!(-32001) {
                busy_refused += 1;
            } else {
                assert_eq!(m["result"]["isError"], json!(false), "{m}");
                busy_served += 1;
            }
            if naps.last().is_some_and(|n| n.is_finished()) {
                continue 'naps;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert!(
        matches!(naps.len(), 1..=3) && busy_refused > 0,
        "never refused while a run was in flight"
    );
    // A nap an echo beat to the slot all the same is refused, and audited so.
    let (mut naps_slept, mut naps_refused) = (0, 0);
    for nap in naps.iter_mut() {
        let (status, _, m) = nap.await.expect("the nap's call");
        if status == 429 || m["error"]["code"] == json!(-32001) {
            naps_refused += 1;
            continue;
        }
        served(status, &m);
        naps_slept += 1;
    }
    assert!(naps_slept > 0, "no nap ran");

    let expected = 5 + limited_served + limited_refused + busy_served + busy_refused + naps.len();
    let lines = lines_when(&file, expected);
    assert_eq!(
        lines.len(),
        expected,
        "{}",
        serde_json::to_string_pretty(&lines).unwrap_or_default()
    );

    let graph = the_one(&lines, json!("caller"), "echo", "ok");
    assert_eq!(graph["via"], "apiKey");
    assert_eq!(graph["key"], "caller");
    assert!(graph["durationMs"].is_i64(), "{graph}");
    assert!(
        graph["time"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{graph}"
    );
    let run_id = graph["runId"]
        .as_str()
        .expect("the graph call's run id")
        .to_owned();

    let proxied = the_one(&lines, json!("caller"), "fx__echo", "ok");
    assert_eq!(proxied["runId"], Value::Null, "{proxied}");

    let hidden = the_one(&lines, json!("globs"), "secret_report", "forbidden");
    assert_eq!(
        (&hidden["key"], &hidden["runId"]),
        (&json!("globs"), &Value::Null)
    );

    let scope = the_one(&lines, json!("only-tools:list"), "echo", "forbidden");
    assert_eq!(scope["via"], "apiKey");

    let unknown = the_one(&lines, Value::Null, "echo", "unauthenticated");
    assert_eq!(
        (&unknown["via"], &unknown["key"]),
        (&Value::Null, &Value::Null)
    );

    assert_eq!(
        matching(&lines, json!("limited"), "echo", "rate_limited").len(),
        limited_refused
    );
    assert_eq!(
        matching(&lines, json!("limited"), "echo", "ok").len(),
        limited_served
    );

    assert_eq!(
        matching(&lines, json!("busy"), "echo", "too_many_runs").len(),
        busy_refused
    );
    let slept = matching(&lines, json!("busy"), "nap", "ok");
    assert_eq!(slept.len(), naps_slept, "{slept:?}");
    assert_eq!(
        matching(&lines, json!("busy"), "nap", "too_many_runs").len(),
        naps_refused
    );
    assert!(slept.iter().all(|n| n["runId"].is_string()), "{slept:?}");
    assert_eq!(
        matching(&lines, json!("busy"), "echo", "ok").len(),
        busy_served
    );

    // The run id is the run's: `mcpflow runs list` shows it, started by the caller.
    let store = format!("sqlite://{}", f.dir.path().join("state.db").display());
    let deadline = Instant::now() + Duration::from_secs(20);
    let run = loop {
        let runs = cli_json(&[
            "runs", "list", "--json", "--store", &store, "--tool", "echo",
        ]);
        let found = runs
            .as_array()
            .expect("a list")
            .iter()
            .find(|r| r["id"] == run_id.as_str())
            .cloned();
        if let Some(run) = found {
            break run;
        }
        assert!(
            Instant::now() < deadline,
            "run {run_id} never listed: {runs}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(run["startedBy"], "caller", "{run}");

    // The store holds the same rows as the file, read through the config's `store:`.
    let config = f.config.to_str().expect("UTF-8");
    let deadline = Instant::now() + Duration::from_secs(20);
    let rows = loop {
        let rows = cli_json(&["audit", "--json", "--config", config, "--limit", "1000"]);
        if rows.as_array().is_some_and(|r| r.len() >= expected) || Instant::now() > deadline {
            break rows;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let sorted = |values: &[Value]| {
        let mut texts: Vec<String> = values.iter().map(Value::to_string).collect();
        texts.sort();
        texts
    };
    assert_eq!(sorted(rows.as_array().expect("a list")), sorted(&lines));
    // `--since` keeps only what is recent enough; the table names the run.
    let none = cli_json(&[
        "audit",
        "--json",
        "--config",
        config,
        "--since",
        "2099-01-01",
    ]);
    assert_eq!(none, json!([]));
    let table = Command::new(http_common::mcpflow())
        .args(["audit", "--config", config, "--since", "1h"])
        .output()
        .expect("mcpflow audit");
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.starts_with("TIME") && table.contains(&run_id),
        "{table}"
    );

    let text = std::fs::read_to_string(&file).expect("the audit file");
    assert_no_secret(&text, &f, "the audit file");
    assert_no_secret(&rows.to_string(), &f, "the store's audit rows");
    // The same lines on stderr, at info under `mcpflow::audit`.
    let log = server.log.lock().expect("lock").clone();
    assert!(
        log.contains("mcpflow::audit") && log.contains("rate_limited"),
        "{log}"
    );
    assert_no_secret(&log, &f, "the log");
}

/// Over stdio the caller is who `MCPFLOW_TOKEN` names: its calls are audited the same, and a
/// call its scopes refuse before rmcp sees it leaves a line too.
#[test]
fn over_stdio_calls_and_refusals_are_audited_to_the_file() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let f = audit_fixture();
    let file = f.dir.path().join("audit.jsonl");
    let session = |key: &str, tool: &str| {
        let mut child = Command::new(http_common::mcpflow())
            .args(["serve", f.config.to_str().expect("UTF-8")])
            .env("MCPFLOW_TOKEN", key)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mcpflow starts");
        let mut stdin = child.stdin.take().expect("piped");
        for line in [
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "audit-test", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": tool, "arguments": {"text": SECRET_ARG}}}),
        ] {
            writeln!(stdin, "{line}").expect("written");
        }
        let answer = BufReader::new(child.stdout.take().expect("piped"))
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .find(|m| m["id"] == 1)
            .expect("the call's answer");
        // End of input: the server finishes its audit before it exits.
        drop(stdin);
        let status = child.wait().expect("exits");
        assert!(status.success(), "{status}");
        answer
    };
    let ok = session(f.key("caller"), "echo");
    assert_eq!(ok["result"]["isError"], json!(false), "{ok}");
    let refused = session(f.key("tools:list"), "echo");
    assert!(refused["error"]["message"].is_string(), "{refused}");

    let lines = lines_when(&file, 2);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let call = the_one(&lines, json!("caller"), "echo", "ok");
    assert_eq!(
        (&call["via"], &call["key"]),
        (&json!("apiKey"), &json!("caller"))
    );
    assert!(call["runId"].is_string(), "{call}");
    the_one(&lines, json!("only-tools:list"), "echo", "forbidden");
    let text = std::fs::read_to_string(&file).expect("the audit file");
    assert_no_secret(&text, &f, "the audit file");
}

/// Rotation: the file moved away and SIGHUP sent, the next lines go to a new file at the
/// configured path; none is lost between the two.
#[tokio::test]
async fn the_audit_file_is_opened_anew_on_sighup() {
    let f = audit_fixture();
    let server = serve(&f.config, &[]);
    let http = reqwest::Client::new();
    let file = f.dir.path().join("audit.jsonl");
    let rotated = f.dir.path().join("audit.jsonl.1");
    let echo = async || {
        let params = call_params("echo", json!({"text": "x"}));
        let (status, m) = call(&http, &server.base, f.key("caller"), params).await;
        served(status, &m);
    };
    echo().await;
    assert_eq!(lines_when(&file, 1).len(), 1);
    std::fs::rename(&file, &rotated).expect("moved away");
    let hup = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(hup.success());
    // The signal is handled asynchronously: calls until one lands in the new file.
    let mut calls = 1;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !file.exists() {
        assert!(
            Instant::now() < deadline,
            "the audit file was never reopened"
        );
        echo().await;
        calls += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = lines_when(&file, 1).len();
    let before = lines_when(&rotated, calls - after).len();
    assert!(after >= 1, "nothing in the new file");
    assert_eq!(before + after, calls, "a line was lost in the rotation");
}

/// Without `auth:`, an `audit:` section audits calls all the same, as the open caller's.
#[test]
fn without_access_control_the_audit_section_audits_calls_as_the_open_callers() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("open.yaml");
    let yaml = format!(
        "version: \"1.0\"\nserver: {{ name: open, version: \"1.0.0\" }}\n{}audit:\n  file: audit.jsonl\n  stderr: false\n",
        auth_support::TOOLS
    );
    std::fs::write(&config, yaml).expect("config written");
    let mut child = Command::new(http_common::mcpflow())
        .args(["serve", config.to_str().expect("UTF-8")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcpflow starts");
    let mut stdin = child.stdin.take().expect("piped");
    for line in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "audit-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": SECRET_ARG}}}),
    ] {
        writeln!(stdin, "{line}").expect("written");
    }
    let answer = BufReader::new(child.stdout.take().expect("piped"))
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .find(|m| m["id"] == 1)
        .expect("the call's answer");
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    drop(stdin);
    assert!(child.wait().expect("exits").success());
    let lines = lines_when(&dir.path().join("audit.jsonl"), 1);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(
        (&line["subject"], &line["via"]),
        (&json!("anonymous"), &json!("open"))
    );
    assert_eq!(
        (&line["tool"], &line["outcome"], &line["key"]),
        (&json!("echo"), &json!("ok"), &Value::Null)
    );
    // No store here (no tool waits): a graph run has an id all the same.
    assert!(line["runId"].is_string(), "{line}");
    assert!(!line.to_string().contains(SECRET_ARG));
}

/// A call its client cancels leaves its line all the same, as `cancelled`.
#[test]
fn a_cancelled_call_leaves_a_cancelled_line() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let f = audit_fixture();
    let file = f.dir.path().join("audit.jsonl");
    let mut child = Command::new(http_common::mcpflow())
        .args(["serve", f.config.to_str().expect("UTF-8")])
        .env("MCPFLOW_TOKEN", f.key("caller"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcpflow starts");
    let mut stdin = child.stdin.take().expect("piped");
    let mut out = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut send = |message: Value| writeln!(stdin, "{message}").expect("written");
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "audit-test", "version": "0"}}}),
    );
    assert!(out.next().is_some(), "initialized");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "nap", "arguments": {"ms": 30000}}}));
    std::thread::sleep(Duration::from_millis(500));
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 1, "reason": "changed my mind"}}),
    );
    let lines = lines_when(&file, 1);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["outcome"], "cancelled", "{lines:?}");
    assert_eq!(
        (&lines[0]["tool"], &lines[0]["subject"]),
        (&json!("nap"), &json!("caller"))
    );
}
