//! What the web UI relies on from the run API, against the real binary: a run that starts and
//! ends at once is started (not refused as "did not start"), a continued session's run reads
//! as it ended (not `waiting` from memory), a graph carries what the UI draws and runs
//! with (the tool's `inputSchema`, each node's definition), a tool's time per node over its
//! recent runs, and the upstreams' tools with their schemas.
mod http_common;

use std::path::Path;

use http_common::{Server, config, curl, start, status};
use serde_json::{Value, json};

fn serve(state: &Path) -> Server {
    let db = state.join("state.db");
    start(
        &config("ui_browser.yaml"),
        &["--state", db.to_str().expect("utf-8 temp path")],
    )
}

fn call(method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let mut args = vec!["-X", method];
    let text;
    if let Some(b) = body {
        text = b.to_string();
        args.extend([
            "-H",
            "content-type: application/json",
            "--data-binary",
            &text,
        ]);
    }
    args.push(url);
    let (head, body) = curl(&args);
    (
        status(&head),
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

#[test]
fn quick_runs_start_and_continued_sessions_read_as_ended() {
    let state = tempfile::tempdir().expect("temp dir");
    let server = serve(state.path());
    let base = server.base();

    // A run of a few microseconds ends before the API reads its start: it still started.
    for i in 0..40 {
        let (code, started) = call(
            "POST",
            &format!("{base}/api/runs"),
            Some(json!({"tool": "checked", "args": {"value": i}})),
        );
        assert_eq!(code, 201, "run {i}: {started}");
        assert!(started["id"].is_string(), "{started}");
    }

    // Started here (so recorded and kept in memory when it waits), then continued.
    let (code, started) = call(
        "POST",
        &format!("{base}/api/runs"),
        Some(json!({"tool": "order", "args": {"item": "tea"}})),
    );
    assert_eq!(code, 201, "{started}");
    let id = started["id"].as_str().expect("run id").to_owned();
    let mut session = None;
    for _ in 0..500 {
        let (_, run) = call("GET", &format!("{base}/api/runs/{id}"), None);
        if run["status"] == "waiting" {
            session = run["waiting"]["sessionId"].as_str().map(str::to_owned);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let session = session.expect("the order run waits with a session");
    let (code, continued) = call(
        "POST",
        &format!("{base}/api/sessions/{session}/continue"),
        Some(json!({"input": {"quantity": 2}})),
    );
    assert_eq!(code, 200, "{continued}");
    assert_eq!(continued["runId"], json!(id), "{continued}");
    assert_eq!(continued["result"]["total"], json!(9), "{continued}");
    let (_, run) = call("GET", &format!("{base}/api/runs/{id}"), None);
    assert_eq!(run["status"], "succeeded", "{run}");
    let (_, listed) = call("GET", &format!("{base}/api/runs?tool=order"), None);
    assert_eq!(listed["runs"][0]["status"], "succeeded", "{listed}");

    // What the UI draws a form and a node panel from.
    let (code, graph) = call("GET", &format!("{base}/api/tools/sum_to_n/graph"), None);
    assert_eq!(code, 200, "{graph}");
    assert_eq!(graph["inputSchema"]["required"], json!(["n"]), "{graph}");
    let add = graph["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["id"] == "add"))
        .expect("node add");
    assert_eq!(add["definition"]["type"], "transform", "{add}");
    assert!(
        add["definition"]["transform"]["expr"]
            .as_str()
            .is_some_and(|e| e.contains("$executionCount")),
        "{add}"
    );
}

/// Where a tool's time goes (`GET /api/tools/{tool}/timing`), which the UI marks its slowest
/// nodes from: only ended runs are read, the latest first, each node's executions counted
/// exactly, the slowest first, the mean per run its total over the runs read.
#[test]
fn a_tools_time_per_node_over_its_recent_runs() {
    let state = tempfile::tempdir().expect("temp dir");
    let server = serve(state.path());
    let base = server.base();
    let timing = |query: &str| {
        call(
            "GET",
            &format!("{base}/api/tools/sum_to_n/timing{query}"),
            None,
        )
    };

    let (code, none) = timing("");
    assert_eq!(code, 200, "{none}");
    assert_eq!((&none["runs"], &none["nodes"]), (&json!(0), &json!([])));

    let run = |n: u64, pause: bool| {
        let (code, started) = call(
            "POST",
            &format!("{base}/api/runs"),
            Some(json!({"tool": "sum_to_n", "args": {"n": n}, "debug": {"pause": pause}})),
        );
        assert_eq!(code, 201, "{started}");
        started["id"].as_str().expect("run id").to_owned()
    };
    let ended = |id: &str| {
        for _ in 0..500 {
            let (_, r) = call("GET", &format!("{base}/api/runs/{id}"), None);
            if r["status"] == "succeeded" {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("run {id} did not succeed");
    };
    // n = 3 then n = 2: `add` runs 3 + 2 times, `more` too, the others once a run.
    for n in [3, 2] {
        let id = run(n, false);
        ended(&id);
    }
    // A run still going (paused before its first node) is not read.
    let paused = run(5, true);

    let (code, t) = timing("");
    assert_eq!(code, 200, "{t}");
    assert_eq!(t["tool"], "sum_to_n");
    assert_eq!(t["runs"], 2, "{t}");
    let nodes = t["nodes"].as_array().expect("nodes");
    let of = |id: &str| {
        nodes
            .iter()
            .find(|n| n["node"] == id)
            .unwrap_or_else(|| panic!("node {id} in {t}"))
    };
    for (id, executions) in [
        ("entry", 2),
        ("add", 5),
        ("more", 5),
        ("done", 2),
        ("exit", 2),
    ] {
        assert_eq!(of(id)["executions"], executions, "{id}: {t}");
        assert_eq!(of(id)["runs"], 2, "{id}: {t}");
    }
    let ms = |n: &Value, k: &str| n[k].as_f64().expect("a number");
    for pair in nodes.windows(2) {
        assert!(
            ms(&pair[0], "totalMs") >= ms(&pair[1], "totalMs"),
            "slowest first: {t}"
        );
    }
    for n in nodes {
        assert!(
            (ms(n, "meanMsPerRun") - ms(n, "totalMs") / 2.0).abs() < 1e-9,
            "{n}"
        );
        assert!(ms(n, "maxMs") <= ms(n, "totalMs") + 1e-9, "{n}");
    }

    // `runs=1`: the latest ended run only (n = 2).
    let (_, latest) = timing("?runs=1");
    assert_eq!(latest["runs"], 1, "{latest}");
    let add = latest["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["node"] == "add"))
        .expect("add");
    assert_eq!(add["executions"], 2, "{latest}");

    let (code, bad) = timing("?runs=0");
    assert_eq!(code, 400, "{bad}");
    let (code, unknown) = call("GET", &format!("{base}/api/tools/nope/timing"), None);
    assert_eq!(code, 404, "{unknown}");
    let (code, _) = call("POST", &format!("{base}/api/runs/{paused}/stop"), None);
    assert_eq!(code, 200);
}

/// The upstreams and their tools with their schemas (`GET /api/upstreams`), which the UI's
/// upstreams view draws: a real upstream (the fixture) with its tools as it lists them, and one
/// that cannot start, listed with why rather than failing the answer.
#[test]
fn upstreams_and_their_tools_with_their_schemas() {
    let state = tempfile::tempdir().expect("temp dir");
    let fixture = serde_json::Value::from(
        http_common::fixture()
            .to_str()
            .expect("utf-8 path")
            .to_owned(),
    );
    let config = http_common::write_config(
        state.path(),
        &format!(
            r#"version: "1.0"
server: {{ name: upstreams, version: "1.0.0" }}
mcpServers:
  fixture: {{ command: {fixture} }}
  gone: {{ command: /nonexistent/mcp-server, connectTimeoutMs: 2000 }}
tools:
  - name: hello
    description: says hello
    inputSchema: {{ type: object }}
    nodes:
      - {{ id: entry, type: entry, next: exit }}
      - {{ id: exit, type: exit }}
"#
        ),
    );
    let server = start(&config, &[]);
    let (code, answer) = call("GET", &format!("{}/api/upstreams", server.base()), None);
    assert_eq!(code, 200, "{answer}");
    let upstreams = answer["upstreams"].as_array().expect("upstreams");
    let names: Vec<&str> = upstreams
        .iter()
        .filter_map(|u| u["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["fixture", "gone"],
        "in the config's order: {answer}"
    );
    let fixture = &upstreams[0];
    assert_eq!(fixture["status"], "connected", "{fixture}");
    assert!(
        fixture["server"]["protocolVersion"].is_string(),
        "{fixture}"
    );
    let echo_text = fixture["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "echo_text"))
        .expect("the fixture's echo_text");
    assert_eq!(
        echo_text["inputSchema"]["required"],
        json!(["text"]),
        "{echo_text}"
    );
    assert_eq!(
        echo_text["inputSchema"]["properties"]["text"]["type"], "string",
        "{echo_text}"
    );
    assert!(echo_text["description"].is_string(), "{echo_text}");
    let gone = &upstreams[1];
    assert_eq!(gone["status"], "unavailable", "{gone}");
    assert_eq!(gone["tools"], json!([]), "{gone}");
    assert!(
        gone["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{gone}"
    );
}
