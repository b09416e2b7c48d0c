//! Runs in flight per principal (issue #18, `maxConcurrentRuns`), against `mcpflow serve
//! --http` on a real port: a key at its limit gets 429 with `Retry-After` for the next call
//! over MCP, over the REST face and for a run started over the run API, while another key is
//! served; its slot is back once its run ends, is stopped, or its client goes away.

mod auth_support;
mod http_common;

use std::time::{Duration, Instant};

use auth_support::{fixture_with, stateless_meta};
use serde_json::{Value, json};

/// `nap` holds a run in flight as long as the fixture sleeps; `echo` is over at once.
fn tools() -> String {
    r#"tools:
  - name: nap
    description: sleeps ms milliseconds in the fixture
    inputSchema: { type: object, properties: { ms: { type: integer } }, required: [ms] }
    nodes:
      - { id: entry, type: entry, next: sleep }
      - { id: sleep, type: mcp, server: fixture, tool: sleep, args: { ms: { expr: "entry.ms" } }, next: exit }
      - { id: exit, type: exit }
  - name: echo
    description: says back what it got
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: exit }
      - { id: exit, type: exit }
  - name: approve
    description: waits for its client
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: ask }
      - id: ask
        type: await
        message: "approve?"
        inputSchema: { type: object, properties: { ok: { type: boolean } }, required: [ok] }
        next: exit
      - { id: exit, type: exit }
"#
    .to_owned()
}

const SCOPES: &[&str] = &["tools:list", "tools:call", "debug", "runs:read", "sessions"];

/// Key `a` may have one run in flight (its own `maxConcurrentRuns`); every other caller two
/// (`auth.maxConcurrentRuns`).
fn limited_fixture() -> auth_support::Fixture {
    let f = fixture_with(&[("a", SCOPES), ("b", SCOPES)], &tools());
    let yaml = std::fs::read_to_string(&f.config).expect("config");
    let fixture = http_common::fixture();
    let yaml = yaml
        .replace(
            "mcpServers: {}",
            &format!(
                "mcpServers:\n  fixture: {{ command: \"{}\" }}",
                fixture.display()
            ),
        )
        .replacen("auth:\n", "auth:\n  maxConcurrentRuns: 2\n", 1)
        .replacen(
            "  - name: \"a\"\n",
            "  - name: \"a\"\n    maxConcurrentRuns: 1\n",
            1,
        );
    assert!(yaml.contains("    maxConcurrentRuns: 1\n"), "{yaml}");
    std::fs::write(&f.config, yaml).expect("config written");
    f
}

/// A `tools/call` over Streamable HTTP (2026-07-28, stateless): status, `Retry-After`, message.
async fn call(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    tool: &str,
    arguments: Value,
) -> (u16, Option<String>, Value) {
    let params = json!({"name": tool, "arguments": arguments, "_meta": stateless_meta()});
    let response = http
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .bearer_auth(key)
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
                .to_string(),
        )
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    let retry = retry_after(&response);
    let text = response.text().await.expect("body");
    (status, retry, http_common::message(&text))
}

fn retry_after(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().expect("ASCII").to_owned())
}

/// `POST /api/runs`: status, `Retry-After`, body.
async fn start_run(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    tool: &str,
    args: Value,
) -> (u16, Option<String>, Value) {
    let response = http
        .post(format!("{base}/api/runs"))
        .header("content-type", "application/json")
        .bearer_auth(key)
        .body(json!({"tool": tool, "args": args}).to_string())
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    let retry = retry_after(&response);
    let body = response.json().await.unwrap_or(Value::Null);
    (status, retry, body)
}

/// Waits until the run API lists a running run of `tool` (seen with `key`).
async fn until_running(http: &reqwest::Client, base: &str, key: &str, tool: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listed: Value = http
            .get(format!("{base}/api/runs?tool={tool}&status=running"))
            .bearer_auth(key)
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("run API JSON");
        if listed["runs"].as_array().is_some_and(|r| !r.is_empty()) {
            return;
        }
        assert!(Instant::now() < deadline, "no running {tool}: {listed}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `POST /rest/v1/tools/{tool}/call`: status, `Retry-After`, body.
async fn rest_call(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    tool: &str,
    args: Value,
) -> (u16, Option<String>, Value) {
    let response = http
        .post(format!("{base}/rest/v1/tools/{tool}/call"))
        .bearer_auth(key)
        .body(args.to_string())
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    let retry = retry_after(&response);
    let body = response.json().await.unwrap_or(Value::Null);
    (status, retry, body)
}

/// Calls `echo` as `key` until it is refused (the run that fills the limit is in flight),
/// then checks the refusal. Fails if it is never refused: the limit is not enforced.
async fn until_refused(http: &reqwest::Client, base: &str, key: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, retry, message) = call(http, base, key, "echo", json!({})).await;
        if status == 429 {
            assert_eq!(retry.as_deref(), Some("1"), "Retry-After: {message}");
            let text = message["error"]["message"].as_str().unwrap_or_default();
            assert!(text.contains("too many runs"), "{message}");
            return;
        }
        assert_eq!(status, 200, "{message}");
        assert!(
            Instant::now() < deadline,
            "never refused while a run was in flight: {message}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Calls `echo` as `key` until it is served again (its slot was given back); fails if the
/// slot never is.
async fn until_served(http: &reqwest::Client, base: &str, key: &str, why: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _, message) = call(http, base, key, "echo", json!({})).await;
        if status == 200 {
            assert_eq!(message["result"]["isError"], json!(false), "{message}");
            return;
        }
        assert_eq!(status, 429, "{message}");
        assert!(
            Instant::now() < deadline,
            "slot never given back after {why}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_principal_past_its_runs_in_flight_gets_429_while_another_is_served() {
    let f = limited_fixture();
    let server = auth_support::serve(&f.config, &[]);
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let (a, b) = (f.key("a").to_owned(), f.key("b").to_owned());

    // A's slow run over MCP fills its one slot. It is running before A calls again: a call
    // racing it could take the slot first and have the nap refused.
    let slow = {
        let (http, base, a) = (http.clone(), base.clone(), a.clone());
        tokio::spawn(async move { call(&http, &base, &a, "nap", json!({"ms": 3000})).await })
    };
    until_running(&http, &base, &a, "nap").await;
    until_refused(&http, &base, &a).await;
    // A run started over the run API is refused alike, with a JSON error and Retry-After.
    let (status, retry, body) = start_run(&http, &base, &a, "echo", json!({})).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(retry.as_deref(), Some("1"));
    assert_eq!(body["error"]["code"], "too_many_runs", "{body}");
    // And a call over the REST face.
    let (status, retry, body) = rest_call(&http, &base, &a, "echo", json!({})).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(retry.as_deref(), Some("1"));
    assert_eq!(body["error"]["code"], "too_many_runs", "{body}");
    // B counts apart: served, twice at once (the default limit is 2).
    let (b1, b2) = tokio::join!(
        call(&http, &base, &b, "nap", json!({"ms": 200})),
        call(&http, &base, &b, "echo", json!({})),
    );
    for (status, _, message) in [b1, b2] {
        assert_eq!(status, 200, "{message}");
        assert_eq!(message["result"]["isError"], json!(false), "{message}");
    }

    // A's run ends: A is served again, over MCP and over the run API.
    let (status, _, message) = slow.await.expect("the slow call");
    assert_eq!(status, 200, "{message}");
    assert_eq!(
        message["result"]["structuredContent"],
        json!({"slept": 3000}),
        "{message}"
    );
    let (status, _, message) = call(&http, &base, &a, "echo", json!({})).await;
    assert_eq!(status, 200, "{message}");

    // A run started over the run API holds A's slot until it is stopped.
    let (status, _, body) = start_run(&http, &base, &a, "nap", json!({"ms": 60000})).await;
    assert!(status == 200 || status == 201, "{status} {body}");
    let id = body["id"].as_str().expect("a run id").to_owned();
    until_refused(&http, &base, &a).await;
    let stopped = http
        .post(format!("{base}/api/runs/{id}/stop"))
        .bearer_auth(&a)
        .send()
        .await
        .expect("sent");
    assert!(stopped.status().is_success(), "{}", stopped.status());
    until_served(&http, &base, &a, "a stopped run").await;

    // A client that goes away mid-run gives its slot back (the run is cancelled).
    let gone = {
        let (http, base, a) = (http.clone(), base.clone(), a.clone());
        tokio::spawn(async move { call(&http, &base, &a, "nap", json!({"ms": 60000})).await })
    };
    until_running(&http, &base, &a, "nap").await;
    until_refused(&http, &base, &a).await;
    gone.abort();
    let _ = gone.await;
    until_served(&http, &base, &a, "its client went away").await;
}

/// Over stdio (the caller `MCPFLOW_TOKEN` names) a call past the limit is a JSON-RPC error that
/// says why; the slot is back once the run in flight ends.
#[test]
fn over_stdio_a_call_past_the_limit_is_a_json_rpc_error() {
    let f = limited_fixture();
    let mut client = auth_support::StdioClient::start(&f.config, f.key("a"));
    client.call(1, "nap", json!({"ms": 3000}));
    // The nap is read and admitted first; an echo sent at once could race it for the slot.
    std::thread::sleep(Duration::from_millis(500));
    // `echo` is answered at once: asked until the nap's run is in flight, and refused then.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut id = 2;
    let refused = loop {
        client.call(id, "echo", json!({}));
        let answer = client.answer(id);
        if answer.get("error").is_some() {
            break answer;
        }
        assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
        assert!(Instant::now() < deadline, "never refused: {answer}");
        std::thread::sleep(Duration::from_millis(50));
        id += 1;
    };
    let text = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(text.contains("too many runs"), "{refused}");
    let first = client.answer(1);
    assert_eq!(first["result"]["isError"], json!(false), "{first}");
    client.call(id + 1, "echo", json!({}));
    let again = client.answer(id + 1);
    assert_eq!(again["result"]["isError"], json!(false), "{again}");
}

/// A run waiting for its client holds no slot; continuing it takes one, over MCP and over the
/// run API alike.
#[tokio::test]
async fn a_waiting_session_holds_no_slot_and_its_continue_takes_one() {
    let f = limited_fixture();
    let server = auth_support::serve(&f.config, &[]);
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let a = f.key("a").to_owned();

    let (status, _, waiting) = call(&http, &base, &a, "approve", json!({})).await;
    assert_eq!(status, 200, "{waiting}");
    let handle = &waiting["result"]["structuredContent"];
    assert_eq!(handle["status"], "waiting", "{waiting}");
    let session = handle["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    // A's one slot is free while its run waits.
    let (status, _, message) = call(&http, &base, &a, "echo", json!({})).await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["result"]["isError"], json!(false), "{message}");

    // With A's slot taken, its continue is refused over MCP and over the run API.
    let slow = {
        let (http, base, a) = (http.clone(), base.clone(), a.clone());
        tokio::spawn(async move { call(&http, &base, &a, "nap", json!({"ms": 3000})).await })
    };
    until_running(&http, &base, &a, "nap").await;
    until_refused(&http, &base, &a).await;
    let arguments = json!({"sessionId": session, "input": {"ok": true}});
    let (status, retry, message) =
        call(&http, &base, &a, "approve_continue", arguments.clone()).await;
    assert_eq!((status, retry.as_deref()), (429, Some("1")), "{message}");
    let response = http
        .post(format!("{base}/api/sessions/{session}/continue"))
        .header("content-type", "application/json")
        .bearer_auth(&a)
        .body(json!({"input": {"ok": true}}).to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(retry_after(&response).as_deref(), Some("1"));
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], "too_many_runs", "{body}");

    // Once the nap is over the session, still waiting, is continued.
    let (status, _, message) = slow.await.expect("the slow call");
    assert_eq!(status, 200, "{message}");
    let (status, _, message) = call(&http, &base, &a, "approve_continue", arguments).await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["result"]["isError"], json!(false), "{message}");
}

/// Calls over the REST face that race for the last slot: whether access control sees the
/// limit first or the engine refuses the run, each refused call is a 429 with `Retry-After`,
/// and exactly as many run as the key may have in flight; a REST client that goes away
/// mid-run gives its slot back.
#[tokio::test]
async fn rest_calls_racing_for_a_slot_are_served_or_refused_with_429() {
    let f = limited_fixture();
    let server = auth_support::serve(&f.config, &[]);
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let a = f.key("a").to_owned();
    let calls = (0..6).map(|_| {
        let (http, base, a) = (http.clone(), base.clone(), a.clone());
        // Long enough that all six arrive while the first still runs, even on a loaded machine.
        tokio::spawn(async move { rest_call(&http, &base, &a, "nap", json!({"ms": 5000})).await })
    });
    let mut served = 0;
    for answer in futures::future::join_all(calls).await {
        let (status, retry, body) = answer.expect("a call");
        match status {
            200 => {
                assert_eq!(body["result"], json!({"slept": 5000}), "{body}");
                served += 1;
            }
            429 => {
                assert_eq!(retry.as_deref(), Some("1"), "{body}");
                assert_eq!(body["error"]["code"], "too_many_runs", "{body}");
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(
        served, 1,
        "a key with maxConcurrentRuns 1 ran {served} at once"
    );

    // A REST client that goes away mid-run gives its slot back, as an MCP client does.
    let gone = {
        let (http, base, a) = (http.clone(), base.clone(), a.clone());
        tokio::spawn(async move { rest_call(&http, &base, &a, "nap", json!({"ms": 60000})).await })
    };
    until_running(&http, &base, &a, "nap").await;
    until_refused(&http, &base, &a).await;
    gone.abort();
    let _ = gone.await;
    until_served(&http, &base, &a, "its REST client went away").await;
}
