//! Access control of `mcpflow serve --http` (issue #18), against the real binary on a real
//! port: keys minted by `mcpflow keys new`, a static-key JWT for the expired column, the
//! scope matrix of every endpoint and MCP method, hidden tools, and no secret in a trace log.

mod auth_support;
mod http_common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use auth_support::mint::{claims, now};
use auth_support::{AUDIENCE, ISSUER, SCOPES, challenge, fixture, mcp, serve};
use http_common::mcpflow;
use serde_json::{Value, json};

/// One request of the matrix.
#[derive(Clone, Copy)]
enum Probe {
    Get(&'static str),
    Post(&'static str),
    /// A JSON-RPC method on `/mcp`: `initialize` in the 2025-11-25 era, the rest stateless
    /// (2026-07-28), which need no session.
    Mcp(&'static str),
}

async fn probe(
    http: &reqwest::Client,
    base: &str,
    credential: Option<&str>,
    p: Probe,
) -> (u16, String) {
    let request = match p {
        Probe::Mcp(method) => {
            let params = match method {
                "tools/call" => json!({"name": "echo", "arguments": {"text": "hi"}}),
                _ => json!({}),
            };
            let (status, challenge, _) = mcp(http, base, credential, method, params).await;
            return (status, challenge);
        }
        Probe::Get(path) => http.get(format!("{base}{path}")),
        Probe::Post(path) => http.post(format!("{base}{path}")).body("{}"),
    };
    let request = match credential {
        Some(c) => request.bearer_auth(c),
        None => request,
    };
    let response = request.send().await.expect("sent");
    (response.status().as_u16(), challenge(&response))
}

/// Every endpoint and MCP method: the scope it needs (`None`: public) and its status when
/// allowed.
const MATRIX: &[(Probe, Option<&str>, u16)] = &[
    (Probe::Mcp("initialize"), Some("mcp"), 200),
    (Probe::Mcp("tools/list"), Some("tools:list"), 200),
    (Probe::Mcp("tools/call"), Some("tools:call"), 200),
    (Probe::Get("/sse"), Some("mcp"), 200),
    (Probe::Get("/metrics"), Some("metrics"), 200),
    (Probe::Get("/ui/"), None, 200),
    (Probe::Get("/ui/runs/x"), None, 200),
    (Probe::Get("/api/openapi.json"), Some("runs:read"), 200),
    (Probe::Get("/api/whoami"), Some("known"), 200),
    (Probe::Get("/api/tools"), Some("runs:read"), 200),
    (Probe::Get("/api/runs"), Some("runs:read"), 200),
    (Probe::Get("/api/runs/nope"), Some("runs:read"), 404),
    (Probe::Post("/api/runs/nope/pause"), Some("debug"), 404),
    (Probe::Get("/api/sessions"), Some("sessions"), 200),
    (Probe::Get("/rest/v1/tools"), Some("tools:list"), 200),
    (Probe::Get("/rest/v1/tools/echo"), Some("tools:list"), 200),
    (
        Probe::Post("/rest/v1/tools/echo/call"),
        Some("tools:call"),
        200,
    ),
    (Probe::Get("/rest/v1/health"), None, 200),
    (Probe::Get("/healthz"), None, 200),
    (Probe::Get("/readyz"), None, 200),
    (
        Probe::Get("/.well-known/oauth-protected-resource/mcp"),
        None,
        200,
    ),
];

/// `known`: any caller the server knows, whatever its scopes.
fn allowed(scope: &str, needs: &str) -> bool {
    scope == "admin"
        || scope == needs
        || needs == "known"
        || (needs == "mcp" && scope.starts_with("tools:"))
}

#[tokio::test]
async fn the_scope_matrix_of_every_endpoint_and_method() {
    let f = fixture();
    let server = serve(&f.config, &[]);
    let http = reqwest::Client::new();
    let mut expired = claims(ISSUER, AUDIENCE, "alice", "admin");
    expired["exp"] = json!(now() - 600);
    let expired = f.signer.sign(&expired);
    let valid_jwt = f.signer.sign(&claims(ISSUER, AUDIENCE, "alice", "admin"));
    let wrong = "mcpf_0000000000000000000000000000000000000000000000000000000000000000";
    let mut failures = Vec::new();
    for &(p, needs, ok) in MATRIX {
        let label = match p {
            Probe::Get(x) => format!("GET {x}"),
            Probe::Post(x) => format!("POST {x}"),
            Probe::Mcp(m) => format!("MCP {m}"),
        };
        let public = needs.is_none();
        let mut columns: Vec<(String, Option<&str>, u16)> = vec![
            ("no credential".into(), None, if public { ok } else { 401 }),
            (
                "a wrong key".into(),
                Some(wrong),
                if public { ok } else { 401 },
            ),
            (
                "an expired token".into(),
                Some(&expired),
                if public { ok } else { 401 },
            ),
            ("an admin token".into(), Some(&valid_jwt), ok),
        ];
        for scope in SCOPES {
            let expect = match needs {
                None => ok,
                Some(n) if allowed(scope, n) => ok,
                Some(_) => 403,
            };
            columns.push((format!("`{scope}` alone"), Some(f.key(scope)), expect));
        }
        for (column, credential, expect) in columns {
            let (status, challenge) = probe(&http, &server.base, credential, p).await;
            if status != expect {
                failures.push(format!(
                    "{label} with {column}: {status}, expected {expect}"
                ));
            }
            let challenged = match status {
                401 => challenge.starts_with("Bearer ") && challenge.contains("resource_metadata="),
                403 => challenge.contains("error=\"insufficient_scope\""),
                _ => true,
            };
            if !challenged {
                failures.push(format!(
                    "{label} with {column}: {status} with {challenge:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The web UI under `auth:`: its files load without a credential (they hold no data), every
/// operation of the run API and the REST face but the health probe still refuses a request
/// without one, and `GET /api/whoami` tells each caller its own scopes, never its key.
#[tokio::test]
async fn the_ui_is_public_its_api_is_not_and_whoami_tells_each_caller_its_scopes() {
    let f = fixture();
    let server = serve(&f.config, &[]);
    let http = reqwest::Client::new();

    let index = http
        .get(format!("{}/ui/", server.base))
        .send()
        .await
        .expect("sent");
    assert_eq!(index.status(), 200);
    let index = index.text().await.expect("index.html");
    let assets: Vec<&str> = index
        .split('"')
        .filter(|s| s.starts_with("/ui/assets/"))
        .collect();
    assert!(assets.len() >= 2, "a script and a stylesheet: {index}");
    for asset in assets {
        let r = http
            .get(format!("{}{asset}", server.base))
            .send()
            .await
            .expect("sent");
        assert_eq!(r.status(), 200, "{asset}");
    }

    let doc: Value = serde_json::from_str(mcpflow_api::OPENAPI).expect("the OpenAPI document");
    let mut open = Vec::new();
    let mut operations = 0;
    for (path, ops) in doc["paths"].as_object().expect("paths") {
        for method in ops.as_object().expect("operations").keys() {
            if !["get", "post", "put", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            let Ok(method) = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()) else {
                continue;
            };
            if path == "/rest/v1/health" {
                continue;
            }
            operations += 1;
            let concrete = path.replace('{', "x").replace('}', "");
            let r = http
                .request(method.clone(), format!("{}{concrete}", server.base))
                .body("{}")
                .send()
                .await
                .expect("sent");
            if r.status() != 401 || !challenge(&r).starts_with("Bearer ") {
                open.push(format!("{method} {path}: {}", r.status()));
            }
        }
    }
    assert!(operations >= 25, "the document's operations: {operations}");
    assert!(open.is_empty(), "served without a credential: {open:#?}");

    let whoami = |credential: Option<String>| {
        let http = http.clone();
        let base = server.base.clone();
        async move {
            let mut request = http.get(format!("{base}/api/whoami"));
            if let Some(c) = credential {
                request = request.bearer_auth(c);
            }
            let r = request.send().await.expect("sent");
            let status = r.status().as_u16();
            (status, r.text().await.expect("body"))
        }
    };
    assert_eq!(whoami(None).await.0, 401);
    for scope in SCOPES {
        let key = f.key(scope);
        let (status, body) = whoami(Some(key.to_owned())).await;
        assert_eq!(status, 200, "{scope}: {body}");
        assert!(!body.contains(key), "the key is never answered: {body}");
        let me: Value = serde_json::from_str(&body).expect("JSON");
        let name = format!("only-{scope}");
        assert_eq!(
            (&me["subject"], &me["via"], &me["key"]),
            (&json!(name), &json!("apiKey"), &json!(name)),
            "{me}"
        );
        assert_eq!(me["scopes"], json!([scope]), "{me}");
        assert_eq!(me["accessControl"], true, "{me}");
    }
    let token = f
        .signer
        .sign(&claims(ISSUER, AUDIENCE, "alice", "runs:read debug"));
    let (status, body) = whoami(Some(token.clone())).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains(&token),
        "the token is never answered: {body}"
    );
    let me: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        (&me["subject"], &me["via"]),
        (&json!("alice"), &json!("jwt"))
    );
    assert_eq!(me["scopes"], json!(["runs:read", "debug"]));
}

#[tokio::test]
async fn hidden_tools_are_neither_listed_nor_callable() {
    let f = fixture();
    let server = serve(&f.config, &[]);
    let http = reqwest::Client::new();
    let names = |m: &Value| -> Vec<String> {
        m["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_owned())
            .collect()
    };
    // The admin sees everything, the built-in authoring tools included.
    let (_, _, all) = mcp(
        &http,
        &server.base,
        Some(f.key("admin")),
        "tools/list",
        json!({}),
    )
    .await;
    let all = names(&all);
    assert!(
        all.contains(&"secret_report".to_owned()) && all.iter().any(|n| n.starts_with("mcpflow_")),
        "{all:?}"
    );
    // `echo*` sees echo only: not the secret, not the authoring tools (no `authoring` scope).
    let (status, _, listed) = mcp(
        &http,
        &server.base,
        Some(f.key("globs")),
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!((status, names(&listed)), (200, vec!["echo".to_owned()]));
    let call = |name: String| {
        let http = http.clone();
        let base = server.base.clone();
        let key = f.key("globs").to_owned();
        async move {
            let (status, _, m) = mcp(
                &http,
                &base,
                Some(&key),
                "tools/call",
                json!({"name": name, "arguments": {}}),
            )
            .await;
            (status, m)
        }
    };
    let (status, echoed) = call("echo".into()).await;
    assert_eq!(status, 200);
    assert!(echoed["result"].is_object(), "{echoed}");
    // A hidden tool is refused exactly as one that does not exist, and the refusal names only
    // what the caller may see.
    let (_, hidden) = call("secret_report".into()).await;
    let (_, missing) = call("no_such_tool".into()).await;
    let text = |m: &Value| m["error"]["message"].as_str().expect("an error").to_owned();
    assert_eq!(
        text(&hidden).replace("secret_report", "NAME"),
        text(&missing).replace("no_such_tool", "NAME"),
    );
    assert_eq!(hidden["error"]["code"], missing["error"]["code"]);
    assert!(
        !text(&missing).contains("secret_report"),
        "{}",
        text(&missing)
    );
    // A built-in authoring tool needs the `authoring` scope too.
    let builtin = all
        .iter()
        .find(|n| n.starts_with("mcpflow_"))
        .expect("authoring tools")
        .clone();
    let (_, authoring) = call(builtin.clone()).await;
    assert_eq!(
        text(&authoring).replace(&builtin, "NAME"),
        text(&missing).replace("no_such_tool", "NAME"),
    );
    // The admin may call the secret tool.
    let (status, _, m) = mcp(
        &http,
        &server.base,
        Some(f.key("admin")),
        "tools/call",
        json!({"name": "secret_report", "arguments": {}}),
    )
    .await;
    assert!(status == 200 && m["result"].is_object(), "{m}");
}

#[tokio::test]
async fn no_key_or_token_appears_in_a_trace_log() {
    let f = fixture();
    let server = serve(&f.config, &[("MCPFLOW_LOG", "trace")]);
    let http = reqwest::Client::new();
    let token = f
        .signer
        .sign(&claims(ISSUER, AUDIENCE, "alice", "tools:call"));
    let mut expired = claims(ISSUER, AUDIENCE, "alice", "tools:call");
    expired["exp"] = json!(now() - 600);
    let expired = f.signer.sign(&expired);
    let wrong = "mcpf_ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
    let credentials = [f.key("tools:call"), f.key("admin"), &token, &expired, wrong];
    for c in credentials {
        let _ = probe(&http, &server.base, Some(c), Probe::Mcp("tools/call")).await;
        let _ = probe(&http, &server.base, Some(c), Probe::Get("/api/runs")).await;
    }
    let canary = "an-argument-value-the-audit-line-must-not-show";
    let (status, _, _) = mcp(
        &http,
        &server.base,
        Some(f.key("tools:call")),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": canary}}),
    )
    .await;
    assert_eq!(status, 200);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let log = server.log.lock().expect("lock").clone();
    assert!(log.len() > 1000, "a trace log was written: {log}");
    // One audit line per call: who, which tool, the outcome; never an argument value.
    let audit: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("mcpflow::audit"))
        .collect();
    assert!(
        audit
            .iter()
            .any(|l| l.contains("only-tools:call") && l.contains("echo") && l.contains("ok")),
        "{audit:#?}"
    );
    assert!(audit.iter().all(|l| !l.contains(canary)), "{audit:#?}");
    // The calls with the `tools:call` key (twice), the admin key and the token, and the two
    // refused before they ran (the expired token, the unknown key), naming no one.
    assert_eq!(audit.len(), 6, "{audit:#?}");
    let refused = audit
        .iter()
        .filter(|l| l.contains("outcome=\"unauthenticated\"") && l.contains("subject=\"\""));
    assert_eq!(refused.count(), 2, "{audit:#?}");
    for c in credentials {
        // The whole credential, and its secret half (a token's signature, a key's last 32).
        let tail = &c[c.len() - 32..];
        assert!(
            !log.contains(c) && !log.contains(tail),
            "a credential is in the log"
        );
    }
    let hash_digest = std::fs::read_to_string(&f.config).expect("config");
    for line in hash_digest.lines().filter(|l| l.contains("hash:")) {
        let digest = line
            .rsplit(':')
            .next()
            .expect("digest")
            .trim_matches(|c| c == '"' || c == ' ');
        assert!(!log.contains(digest), "a key digest is in the log");
    }
}

/// Over stdio the identity comes from `MCPFLOW_TOKEN`, with the same scope rules and globs.
#[test]
fn stdio_takes_the_identity_from_the_environment() {
    use std::io::Write;
    let f = fixture();
    let session = |token: Option<&str>, requests: &[Value]| -> (bool, Vec<Value>, String) {
        let mut command = Command::new(mcpflow());
        command
            .args(["serve", f.config.to_str().expect("UTF-8")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_remove("MCPFLOW_TOKEN");
        if let Some(t) = token {
            command.env("MCPFLOW_TOKEN", t);
        }
        let mut child = command.spawn().expect("mcpflow starts");
        let mut stdin = child.stdin.take().expect("piped");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "auth-test", "version": "0"}}});
        let mut lines = vec![
            init,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ];
        lines.extend(requests.iter().cloned());
        for l in &lines {
            // A server that refused its token has exited: the pipe may be closed.
            let _ = writeln!(stdin, "{l}");
        }
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let expected = requests.len() + 1;
        let answers: Vec<Value> = stdout
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .filter(|m| m.get("id").is_some())
            .take(expected)
            .collect();
        drop(stdin);
        let out = child.wait_with_output().expect("exits");
        (
            out.status.success(),
            answers,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "secret_report", "arguments": {}}});
    // `echo*` with tools:list and tools:call: sees echo only, and the secret is unknown.
    let (_, answers, _) = session(Some(f.key("globs")), &[list.clone(), call.clone()]);
    let names: Vec<&str> = answers[1]["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["echo"], "{answers:?}");
    assert!(
        answers[2]["error"]["message"]
            .as_str()
            .expect("error")
            .contains("unknown tool")
    );
    // tools:list alone: the call is refused for its scope.
    let (_, answers, _) = session(Some(f.key("tools:list")), std::slice::from_ref(&call));
    let refused = answers[1]["error"]["message"].as_str().expect("an error");
    assert!(refused.contains("tools:call"), "{refused}");
    // No token and no anonymous MCP scope: the server says so at start and does not serve.
    let (ok, answers, stderr) = session(None, &[]);
    assert!(
        !ok && answers.is_empty() && stderr.contains("MCPFLOW_TOKEN is not set"),
        "{stderr}"
    );
    // A wrong token stops the server before it serves, saying why (not what the token was).
    let wrong = "mcpf_1111111111111111111111111111111111111111111111111111111111111111";
    let (ok, _, stderr) = session(Some(wrong), &[]);
    assert!(
        !ok && stderr.contains("MCPFLOW_TOKEN refused") && !stderr.contains(wrong),
        "{stderr}"
    );
}

/// A Streamable HTTP session is used only by the principal that opened it; a legacy SSE
/// session takes posts only from its opener.
#[tokio::test]
async fn one_principal_cannot_use_anothers_session() {
    let f = fixture();
    let server = serve(&f.config, &[]);
    let http = reqwest::Client::new();
    let post = |key: String, session: Option<String>, body: Value| {
        let http = http.clone();
        let url = format!("{}/mcp", server.base);
        async move {
            let mut request = http
                .post(url)
                .bearer_auth(key)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .body(body.to_string());
            if let Some(s) = session {
                request = request.header("mcp-session-id", s);
            }
            let response = request.send().await.expect("sent");
            let status = response.status().as_u16();
            let id = response
                .headers()
                .get("mcp-session-id")
                .map(|v| v.to_str().expect("ASCII").to_owned());
            (status, id)
        }
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "0"}}});
    let owner = f.key("tools:list").to_owned();
    let (status, session) = post(owner.clone(), None, init).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(owner.clone(), Some(session.clone()), initialized)
            .await
            .0,
        202
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    // Another key with the same scope, and the admin: the session is unknown to them.
    for other in ["globs", "admin"] {
        let (status, _) = post(f.key(other).to_owned(), Some(session.clone()), list.clone()).await;
        assert_eq!(status, 404, "{other}");
    }
    assert_eq!(post(owner, Some(session), list).await.0, 200);
}

/// A real client, the Python `mcp` SDK (scripts/conformance-clients), with a bearer token:
/// both eras over Streamable HTTP and legacy SSE see only the key's tools; without the token
/// it cannot connect.
#[test]
fn the_python_sdk_connects_with_a_bearer_token() {
    let f = fixture();
    let server = serve(&f.config, &[]);
    let script = http_common::repo_root().join("scripts/conformance-clients");
    let run = |mode: &str, url: &str, token: Option<&str>| {
        let mut command = Command::new("bash");
        command
            .arg(&script)
            .args(["python", mode, url, "echo", r#"{"text": "hi"}"#])
            .env_remove("MCP_BEARER_TOKEN");
        if let Some(t) = token {
            command.env("MCP_BEARER_TOKEN", t);
        }
        command.output().expect("the Python client runs")
    };
    let mcp_url = format!("{}/mcp", server.base);
    let sse_url = format!("{}/sse", server.base);
    for (mode, url) in [
        ("legacy", &mcp_url),
        ("2026-07-28", &mcp_url),
        ("sse", &sse_url),
    ] {
        let out = run(mode, url, Some(f.key("globs")));
        assert!(
            out.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
        assert_eq!(printed["tools"], json!(["echo"]), "{mode}");
        assert_eq!(
            printed["result"]["isError"],
            json!(false),
            "{mode}: {printed}"
        );
        let refused = run(mode, url, None);
        assert!(!refused.status.success(), "{mode} without a token");
    }
}
