//! The REST face of the MCP endpoint (issue #18, `/rest/v1`), against `mcpflow serve --http`
//! on a real port with keys minted by `mcpflow keys new`: graph and proxied tools (the fixture
//! upstream) listed, described and called with plain JSON; hidden tools neither listed nor
//! callable; the scopes and limits of MCP; hooks, `$caller`, the audit line and sessions, all
//! of which a REST call meets because it is made as an MCP `tools/call`.

mod auth_support;
mod http_common;

use std::time::{Duration, Instant};

use auth_support::{Fixture, fixture_with, mcp, serve};
use serde_json::{Value, json};

/// `echo` says back its text with who called; `secret_report` only some keys see; `approve`
/// waits for its client; `fx__*` are the fixture upstream's. A hook on the graph tools
/// rejects `forbidden`, and one on the upstream rejects parent paths.
const TOOLS: &str = r#"tools:
  - name: echo
    description: says back what it got, and who asked
    inputSchema: { type: object, properties: { text: { type: string } } }
    nodes:
      - { id: entry, type: entry, next: said }
      - id: said
        type: transform
        transform: { expr: '{"said": entry.text, "key": $caller.key, "via": $caller.via}' }
        next: exit
      - { id: exit, type: exit }
  - name: count
    description: how many words, a number rather than an object
    inputSchema: { type: object, properties: { words: { type: array } } }
    nodes:
      - { id: entry, type: entry, next: n }
      - { id: n, type: transform, transform: { expr: '$count(entry.words)' }, next: exit }
      - { id: exit, type: exit }
  - name: secret_report
    description: only some keys may see this
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
        next: done
      - { id: done, type: transform, transform: { expr: '{"ok": ask.ok, "by": $caller.key}' }, next: exit }
      - { id: exit, type: exit }
proxy:
  upstreams:
    fx: { include: ["echo", "fail"] }
hooks:
  - id: no_forbidden
    method: tools/call
    phase: pre
    appliesTo: graph
    tool: echo
    script: |
      (ctx) => ctx.request.params.arguments.text === "forbidden"
        ? {reject: "the hook says no"}
        : ctx
  - id: no_parent_paths
    method: tools/call
    phase: pre
    upstream: fx
    script: |
      (ctx) => ctx.request.params.arguments.path?.includes("..")
        ? {reject: "no parent paths"}
        : ctx
"#;

const CALLER: &[&str] = &["tools:list", "tools:call", "sessions"];

/// The scope keys of `auth_support`, `caller` (list, call, sessions), `other` (the same) and
/// `slow` (the same, at most one request a second), over the fixture upstream.
fn rest_fixture() -> Fixture {
    let f = fixture_with(
        &[("caller", CALLER), ("other", CALLER), ("slow", CALLER)],
        TOOLS,
    );
    let yaml = std::fs::read_to_string(&f.config).expect("config");
    let upstream = http_common::fixture();
    let yaml = yaml
        .replace(
            "mcpServers: {}",
            &format!(
                "mcpServers:\n  fx: {{ command: \"{}\" }}",
                upstream.display()
            ),
        )
        .replacen(
            "  - name: \"slow\"\n",
            "  - name: \"slow\"\n    rateLimit: { requestsPerSecond: 1, burst: 1 }\n",
            1,
        );
    assert!(yaml.contains("rateLimit"), "{yaml}");
    std::fs::write(&f.config, yaml).expect("config written");
    f
}

/// One REST request: status, `Retry-After`, `WWW-Authenticate`, the JSON body.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    challenge: String,
    body: Value,
}

async fn rest(
    http: &reqwest::Client,
    base: &str,
    key: Option<&str>,
    path: &str,
    body: Option<&str>,
) -> Answer {
    let url = format!("{base}/rest/v1{path}");
    let mut request = match body {
        Some(b) => http
            .post(url)
            .header("content-type", "application/json")
            .body(b.to_owned()),
        None => http.get(url),
    };
    if let Some(k) = key {
        request = request.bearer_auth(k);
    }
    let response = request.send().await.expect("sent");
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().expect("ASCII").to_owned())
    };
    let (retry_after, challenge) = (header("retry-after"), header("www-authenticate"));
    let text = response.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    Answer {
        status,
        retry_after,
        challenge: challenge.unwrap_or_default(),
        body,
    }
}

async fn call(http: &reqwest::Client, base: &str, key: &str, tool: &str, args: Value) -> Answer {
    let body = args.to_string();
    rest(
        http,
        base,
        Some(key),
        &format!("/tools/{tool}/call"),
        Some(&body),
    )
    .await
}

fn names(tools: &Value) -> Vec<String> {
    let mut names: Vec<String> = tools
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn graph_and_proxied_tools_are_listed_described_and_called() {
    let f = rest_fixture();
    let server = serve(&f.config, &[]);
    let (http, base, key) = (reqwest::Client::new(), &server.base, f.key("caller"));

    // Listed as MCP lists them to the same key: graph and proxied tools, no authoring tools
    // (the key lacks that scope), each with its schema.
    let listed = rest(&http, base, Some(key), "/tools", None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let (_, _, over_mcp) = mcp(&http, base, Some(key), "tools/list", json!({})).await;
    assert_eq!(
        names(&listed.body["tools"]),
        names(&over_mcp["result"]["tools"])
    );
    let listed_names = names(&listed.body["tools"]);
    for name in ["approve", "echo", "fx__echo", "fx__fail", "secret_report"] {
        assert!(listed_names.contains(&name.to_owned()), "{listed_names:?}");
    }
    assert!(
        !listed_names.iter().any(|n| n.starts_with("mcpflow_")),
        "{listed_names:?}"
    );
    for tool in listed.body["tools"].as_array().expect("tools") {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }

    let echo = rest(&http, base, Some(key), "/tools/echo", None).await;
    assert_eq!(echo.status, 200, "{}", echo.body);
    assert_eq!(
        echo.body["description"],
        "says back what it got, and who asked"
    );
    assert_eq!(
        echo.body["inputSchema"]["properties"]["text"]["type"],
        "string"
    );
    let proxied = rest(&http, base, Some(key), "/tools/fx__fail", None).await;
    assert_eq!(proxied.status, 200, "{}", proxied.body);
    assert_eq!(proxied.body["inputSchema"]["required"], json!(["message"]));

    // A graph tool: its output as `result`, `$caller` read in its expression, the time taken.
    let called = call(&http, base, key, "echo", json!({"text": "hi"})).await;
    assert_eq!(called.status, 200, "{}", called.body);
    assert_eq!(called.body["tool"], "echo");
    assert_eq!(called.body["isError"], false);
    assert_eq!(
        called.body["result"],
        json!({"said": "hi", "key": "caller", "via": "apiKey"})
    );
    let ms = called.body["processingTimeMs"]
        .as_f64()
        .expect("processingTimeMs");
    assert!(ms >= 0.0, "{}", called.body);
    assert!(called.body.get("session").is_none(), "{}", called.body);
    // An output that is not an object is given back as itself, not as MCP's text block.
    let counted = call(&http, base, key, "count", json!({"words": ["a", "b"]})).await;
    assert_eq!((counted.status, &counted.body["result"]), (200, &json!(2)));
    // A proxied tool through the gateway, and its tool error as `isError` with its text.
    let called = call(&http, base, key, "fx__echo", json!({"a": [1, 2]})).await;
    assert_eq!(called.status, 200, "{}", called.body);
    assert_eq!(called.body["result"], json!({"a": [1, 2]}));
    assert!(
        called.body["processingTimeMs"].is_number(),
        "{}",
        called.body
    );
    let failed = call(&http, base, key, "fx__fail", json!({"message": "boom"})).await;
    assert_eq!(failed.status, 200, "{}", failed.body);
    assert_eq!(failed.body["isError"], true);
    assert_eq!(failed.body["error"], "boom");
    // Arguments that do not match the schema: the tool's answer, as over MCP.
    let bad = call(&http, base, key, "echo", json!({"text": 5})).await;
    assert_eq!((bad.status, &bad.body["isError"]), (200, &json!(true)));
    let error = bad.body["error"].as_str().expect("error text");
    assert!(error.contains("invalid arguments for `echo`"), "{error}");

    // Hooks see REST calls: on a graph tool and on a proxied one.
    let rejected = call(&http, base, key, "echo", json!({"text": "forbidden"})).await;
    assert_eq!(rejected.status, 200, "{}", rejected.body);
    assert_eq!(rejected.body["isError"], true);
    assert_eq!(rejected.body["error"], "the hook says no");
    let rejected = call(&http, base, key, "fx__echo", json!({"path": "../etc"})).await;
    assert_eq!(rejected.body["isError"], true, "{}", rejected.body);
    assert_eq!(rejected.body["error"], "no parent paths");

    // A body that is not a JSON object never reaches the tool.
    for body in ["[1, 2]", "\"hi\"", "{not json"] {
        let refused = rest(&http, base, Some(key), "/tools/echo/call", Some(body)).await;
        assert_eq!(refused.status, 400, "{body}: {}", refused.body);
        assert_eq!(refused.body["error"]["code"], "bad_request");
        let message = refused.body["error"]["message"].as_str().expect("message");
        assert!(message.contains("JSON object"), "{message}");
    }
    // An empty body is no arguments.
    let empty = rest(&http, base, Some(key), "/tools/fx__echo/call", Some("")).await;
    assert_eq!((empty.status, &empty.body["result"]), (200, &json!({})));

    // Each call left its audit line, as an MCP call does.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let log = server.log.lock().expect("lock").clone();
    let audit: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("mcpflow::audit") && l.contains("caller"))
        .collect();
    for tool in ["echo", "fx__echo", "fx__fail"] {
        let named = |l: &&&str| {
            [
                format!("tool={tool} "),
                format!("tool=\"{tool}\""),
                format!("\"tool\":\"{tool}\""),
            ]
            .iter()
            .any(|t| l.contains(t.as_str()))
        };
        assert!(
            audit.iter().any(|l| named(&l)),
            "no audit line for {tool}: {audit:#?}"
        );
    }
}

#[tokio::test]
async fn hidden_tools_scopes_and_credentials_as_over_mcp() {
    let f = rest_fixture();
    let server = serve(&f.config, &[]);
    let (http, base) = (reqwest::Client::new(), &server.base);

    // `echo*` sees echo alone: the secret is neither listed nor described nor callable, and
    // is refused exactly as a tool that does not exist.
    let globs = f.key("globs");
    let listed = rest(&http, base, Some(globs), "/tools", None).await;
    assert_eq!(names(&listed.body["tools"]), ["echo"]);
    let hidden = rest(&http, base, Some(globs), "/tools/secret_report", None).await;
    let missing = rest(&http, base, Some(globs), "/tools/no_such_tool", None).await;
    let hidden_call = call(&http, base, globs, "secret_report", json!({})).await;
    let missing_call = call(&http, base, globs, "no_such_tool", json!({})).await;
    let words = |a: &Answer, name: &str| {
        let mut error = a.body["error"].clone();
        error["message"] = json!(
            error["message"]
                .as_str()
                .expect("a message")
                .replace(name, "NAME")
        );
        (a.status, error)
    };
    assert_eq!(words(&hidden, "secret_report").0, 404, "{}", hidden.body);
    assert_eq!(
        words(&hidden, "secret_report"),
        words(&missing, "no_such_tool")
    );
    assert_eq!(words(&hidden_call, "secret_report").0, 404);
    assert_eq!(
        words(&hidden_call, "secret_report"),
        words(&missing_call, "no_such_tool")
    );
    assert_eq!(hidden_call.body["error"]["code"], "unknown_tool");
    let said = missing_call.body["error"]["message"]
        .as_str()
        .expect("message");
    assert!(!said.contains("secret_report"), "{said}");
    // The admin sees and calls it, and the authoring tools too.
    let admin = f.key("admin");
    let listed = rest(&http, base, Some(admin), "/tools", None).await;
    let all = names(&listed.body["tools"]);
    assert!(
        all.contains(&"secret_report".to_owned()) && all.iter().any(|n| n.starts_with("mcpflow_")),
        "{all:?}"
    );
    let called = call(&http, base, admin, "secret_report", json!({})).await;
    assert_eq!(called.status, 200, "{}", called.body);

    // The scopes of the MCP methods they stand for; 401 and 403 as the spec says.
    let (list, get_one, echo) = ("/tools", "/tools/echo", "/tools/echo/call");
    for (key, path, body, expected) in [
        (None, list, None, 401),
        (None, get_one, None, 401),
        (None, echo, Some("{}"), 401),
        (Some("mcpf_nope"), list, None, 401),
        (Some(f.key("tools:list")), list, None, 200),
        (Some(f.key("tools:list")), get_one, None, 200),
        (Some(f.key("tools:list")), echo, Some("{}"), 403),
        (Some(f.key("tools:call")), list, None, 403),
        (Some(f.key("tools:call")), get_one, None, 403),
        (Some(f.key("tools:call")), echo, Some("{}"), 200),
        (Some(f.key("runs:read")), list, None, 403),
        (Some(f.key("sessions")), echo, Some("{}"), 403),
    ] {
        let a = rest(&http, base, key, path, body).await;
        assert_eq!(a.status, expected, "{key:?} {path}: {}", a.body);
        match expected {
            401 => assert!(
                a.challenge.contains("resource_metadata="),
                "{}",
                a.challenge
            ),
            403 => assert!(
                a.challenge.contains("error=\"insufficient_scope\""),
                "{}",
                a.challenge
            ),
            _ => {}
        }
        if expected != 200 {
            assert!(a.body["error"]["message"].is_string(), "{}", a.body);
        }
    }
    // Health is public: a probe carries no credential.
    let health = rest(&http, base, None, "/health", None).await;
    assert_eq!(
        (health.status, &health.body["healthy"]),
        (200, &json!(true))
    );
}

#[tokio::test]
async fn a_rate_limited_key_gets_429_while_another_is_served() {
    let f = rest_fixture();
    let server = serve(&f.config, &[]);
    let (http, base) = (reqwest::Client::new(), &server.base);
    let (slow, other) = (f.key("slow"), f.key("other"));
    // One request a second: calls in a row are refused well within a second or two.
    let deadline = Instant::now() + Duration::from_secs(20);
    let refused = loop {
        let a = call(&http, base, slow, "echo", json!({"text": "x"})).await;
        if a.status == 429 {
            break a;
        }
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(
            Instant::now() < deadline,
            "never refused: the limit is not enforced"
        );
    };
    let seconds: u64 = refused
        .retry_after
        .as_deref()
        .expect("Retry-After")
        .parse()
        .expect("whole seconds");
    assert!(seconds >= 1, "{seconds}");
    assert_eq!(refused.body["error"]["code"], "rate_limited");
    // The refusal left its audit line, named by the route's tool, as a refused MCP call does.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let log = server.log.lock().expect("lock").clone();
    assert!(
        log.lines().any(|l| l.contains("mcpflow::audit")
            && l.contains("rate_limited")
            && l.contains("slow")
            && (l.contains("tool=echo") || l.contains("tool=\"echo\""))),
        "no audit line for the refused REST call:\n{log}"
    );
    // Another key is served meanwhile.
    for _ in 0..3 {
        let a = call(&http, base, other, "echo", json!({"text": "y"})).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
}

#[tokio::test]
async fn a_run_that_waits_answers_its_session_to_continue_over_the_run_api() {
    let f = rest_fixture();
    let server = serve(&f.config, &[]);
    let (http, base, key) = (reqwest::Client::new(), &server.base, f.key("caller"));
    let waiting = call(&http, base, key, "approve", json!({})).await;
    assert_eq!(waiting.status, 200, "{}", waiting.body);
    assert_eq!(waiting.body["isError"], false);
    assert_eq!(waiting.body["result"]["status"], "waiting");
    assert_eq!(waiting.body["result"]["message"], "approve?");
    let id = waiting.body["session"]["id"]
        .as_str()
        .expect("a session id");
    assert_eq!(waiting.body["result"]["sessionId"], id);
    assert!(waiting.body["runId"].is_string(), "{}", waiting.body);
    let continue_at = waiting.body["session"]["continue"]
        .as_str()
        .expect("where to continue");
    assert_eq!(continue_at, format!("/api/sessions/{id}/continue"));
    // Another principal may not continue it; its starter may.
    let post = |k: &str| {
        http.post(format!("{base}{continue_at}"))
            .bearer_auth(k)
            .body(json!({"input": {"ok": true}}).to_string())
            .send()
    };
    let theirs = post(f.key("other")).await.expect("sent");
    assert_eq!(theirs.status(), 403);
    let done = post(key).await.expect("sent");
    assert_eq!(done.status(), 200);
    let done: Value = done.json().await.expect("JSON");
    assert_eq!(
        done["result"],
        json!({"ok": true, "by": "caller"}),
        "{done}"
    );
}
