//! Identity in execution (issue #18), against `mcpflow serve --http` on a real port: a graph's
//! expressions read the caller as `$caller` everywhere they run (switch rules, branches, items,
//! a called tool, a session's later steps), hooks read it as `metadata.caller`, and a waiting
//! session is continued, read or cancelled only by the principal that started it, or an admin,
//! over MCP and over the run API alike.

mod auth_support;
mod http_common;

use auth_support::mint::claims;
use auth_support::{AUDIENCE, Fixture, ISSUER, fixture_with, mcp, serve};
use serde_json::{Value, json};

/// Everywhere an expression runs, and a hook on the graph tools that hands its
/// `metadata.caller` to the tool as an argument.
const IDENTITY: &str = r#"tools:
  - name: whoami
    description: who called, as every kind of expression reads it
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: route }
      - id: route
        type: switch
        conditions:
          - { rule: { "==": [ { var: "$caller.via" }, "apiKey" ] }, next: keyed }
        next: other
      - { id: keyed, type: transform, transform: { expr: '"key " & $caller.key' }, next: both }
      - { id: other, type: transform, transform: { expr: '"via " & $caller.via' }, next: both }
      - { id: both, type: parallel, branches: { left: inBranch }, next: each }
      - { id: inBranch, type: transform, transform: { expr: '$caller.subject' }, next: each }
      - { id: each, type: foreach, items: '[$caller.subject, $caller.via]', body: item, next: sub }
      - { id: item, type: transform, transform: { expr: '$caller.subject & ":" & $.each.item' }, next: each }
      - { id: sub, type: call, tool: whoami_inner, args: { asked: { expr: '$caller.subject' } }, next: out }
      - id: out
        type: transform
        transform:
          expr: >-
            {"caller": $caller, "routed": $exists(keyed) ? keyed : other,
             "branch": both.left, "items": each, "sub": sub, "hook": entry.hook}
        next: exit
      - { id: exit, type: exit }
  - name: whoami_inner
    description: a tool another one calls
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: who }
      - { id: who, type: transform, transform: { expr: '{"subject": $caller.subject, "asked": entry.asked}' }, next: exit }
      - { id: exit, type: exit }
  - name: approve
    description: waits for whoever started it
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: ask }
      - id: ask
        type: await
        message: { expr: "'approve, ' & $caller.subject & '?'" }
        inputSchema: { type: object, properties: { ok: { type: boolean } }, required: [ok] }
        next: done
      - { id: done, type: transform, transform: { expr: '{"continuedBy": $caller.subject, "ok": ask.ok}' }, next: exit }
      - { id: exit, type: exit }
# The loader wants `proxy:` beside `hooks:`, even for hooks on graph tools only.
proxy: { upstreams: {} }
hooks:
  - id: stamp
    method: tools/call
    phase: pre
    appliesTo: graph
    tool: whoami
    script: |
      (ctx) => {
        ctx.request.params.arguments.hook = ctx.metadata.caller;
        return ctx;
      }
"#;

const CALLER_SCOPES: &[&str] = &["tools:list", "tools:call", "sessions"];

fn identity_fixture() -> Fixture {
    fixture_with(
        &[("alice", CALLER_SCOPES), ("bob", CALLER_SCOPES)],
        IDENTITY,
    )
}

/// A `tools/call` (2026-07-28, stateless) with `credential`: the JSON-RPC message.
async fn call(http: &reqwest::Client, base: &str, credential: &str, params: Value) -> Value {
    let (status, _, message) = mcp(http, base, Some(credential), "tools/call", params).await;
    assert_eq!(status, 200, "{message}");
    message
}

fn structured(message: &Value) -> &Value {
    let result = &message["result"];
    assert_eq!(result["isError"], json!(false), "{message}");
    &result["structuredContent"]
}

fn tool_error(message: &Value) -> String {
    let result = &message["result"];
    assert_eq!(result["isError"], json!(true), "{message}");
    result["content"][0]["text"]
        .as_str()
        .expect("an error text")
        .to_owned()
}

#[tokio::test]
async fn expressions_and_hooks_read_the_caller() {
    let f = identity_fixture();
    let server = serve(&f.config, &[("MCPFLOW_LOG", "trace")]);
    let http = reqwest::Client::new();
    let whoami = json!({"name": "whoami", "arguments": {}});

    let by_key = call(&http, &server.base, f.key("alice"), whoami.clone()).await;
    let out = structured(&by_key);
    let alice = json!({"subject": "alice", "via": "apiKey", "key": "alice",
                       "scopes": ["tools:list", "tools:call", "sessions"], "claims": {}});
    assert_eq!(out["caller"], alice, "{out}");
    assert_eq!(out["routed"], "key alice", "a switch rule's var: {out}");
    assert_eq!(out["branch"], "alice", "a parallel branch: {out}");
    assert_eq!(
        out["items"],
        json!(["alice:alice", "alice:apiKey"]),
        "foreach: {out}"
    );
    assert_eq!(
        out["sub"],
        json!({"subject": "alice", "asked": "alice"}),
        "a called tool and its args: {out}"
    );
    assert_eq!(out["hook"], alice, "the hook's metadata.caller: {out}");

    // A token: its subject, the claim the config copies, no key; never the token itself.
    let mut token_claims = claims(ISSUER, AUDIENCE, "carol", "tools:call");
    token_claims["email"] = json!("carol@example.test");
    token_claims["secret_claim"] = json!("not copied");
    let token = f.signer.sign(&token_claims);
    let by_token = call(&http, &server.base, &token, whoami).await;
    let out = structured(&by_token);
    assert_eq!(
        out["caller"],
        json!({"subject": "carol", "via": "jwt", "key": null, "scopes": ["tools:call"],
               "claims": {"email": "carol@example.test"}}),
        "{out}"
    );
    assert_eq!(out["routed"], "via jwt", "{out}");
    assert_eq!(out["hook"], out["caller"], "{out}");
    assert!(!by_token.to_string().contains(&token));
    assert!(!by_key.to_string().contains(f.key("alice")));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let log = server.log.lock().expect("lock").clone();
    assert!(log.len() > 1000, "a trace log was written");
    for secret in [token.as_str(), f.key("alice")] {
        assert!(
            !log.contains(&secret[secret.len() - 32..]),
            "a credential is in the trace log"
        );
    }
}

/// Without `auth:` the caller is the open principal: documented, never undefined or null.
#[tokio::test]
async fn without_access_control_the_caller_is_the_open_principal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let yaml =
        format!("version: \"1.0\"\nserver: {{ name: open, version: \"1.0.0\" }}\n{IDENTITY}");
    let config = dir.path().join("open.yaml");
    std::fs::write(&config, yaml).expect("config written");
    let server = serve(&config, &[]);
    let http = reqwest::Client::new();
    let (status, _, message) = mcp(
        &http,
        &server.base,
        None,
        "tools/call",
        json!({"name": "whoami", "arguments": {}}),
    )
    .await;
    assert_eq!(status, 200);
    let out = structured(&message);
    let open = json!({"subject": "anonymous", "via": "open", "key": null,
                      "scopes": ["admin"], "claims": {}});
    assert_eq!(out["caller"], open, "{out}");
    assert_eq!(out["hook"], open, "{out}");
    assert_eq!(out["routed"], "via open", "{out}");
}

/// The waiting answer's session id, after checking the await's message read the caller.
fn session_of(message: &Value, subject: &str) -> String {
    let handle = structured(message);
    assert_eq!(handle["status"], "waiting", "{message}");
    assert_eq!(
        handle["message"],
        format!("approve, {subject}?"),
        "{message}"
    );
    handle["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned()
}

#[tokio::test]
async fn one_principal_cannot_continue_read_or_cancel_anothers_session() {
    let f = identity_fixture();
    let server = serve(&f.config, &[("MCPFLOW_LOG", "trace")]);
    let http = reqwest::Client::new();
    let base = &server.base;
    let (alice, bob, admin) = (f.key("alice"), f.key("bob"), f.key("admin"));
    let start = json!({"name": "approve", "arguments": {}});
    let session = session_of(&call(&http, base, alice, start.clone()).await, "alice");
    let companion = |tool: &str, with_input: bool| {
        let mut arguments = json!({"sessionId": session});
        if with_input {
            arguments["input"] = json!({"ok": true});
        }
        json!({"name": tool, "arguments": arguments})
    };

    // Over MCP: bob can neither continue, read nor cancel it, nor continue it by a
    // 2026-07-28 retry; each refusal says why and tells nothing of the session.
    let retry = json!({"name": "approve", "arguments": {}, "requestState": session,
        "inputResponses": {"input": {"action": "accept", "content": {"ok": true}}}});
    let asked_again = json!({"name": "approve", "arguments": {}, "requestState": session});
    let declined = json!({"name": "approve", "arguments": {}, "requestState": session,
        "inputResponses": {"input": {"action": "decline"}}});
    for params in [
        companion("approve_continue", true),
        companion("approve_status", false),
        companion("approve_cancel", false),
        retry,
        asked_again,
        declined,
    ] {
        let refused = tool_error(&call(&http, base, bob, params.clone()).await);
        assert!(
            refused.contains("started by another principal"),
            "{params}: {refused}"
        );
        assert!(
            !refused.contains("approve,") && !refused.contains("ok"),
            "{params} tells nothing of the session: {refused}"
        );
    }

    // Over the run API: 403, and bob's listing does not show it; alice's does.
    let api = |key: &str, method: reqwest::Method, path: String, body: Option<Value>| {
        let request = http
            .request(method, format!("{base}{path}"))
            .bearer_auth(key);
        let request = match body {
            Some(b) => request
                .header("content-type", "application/json")
                .body(b.to_string()),
            None => request,
        };
        async move {
            let response = request.send().await.expect("sent");
            let status = response.status().as_u16();
            let body: Value = response.json().await.expect("JSON");
            (status, body)
        }
    };
    let continue_path = format!("/api/sessions/{session}/continue");
    let cancel_path = format!("/api/sessions/{session}/cancel");
    let input = Some(json!({"input": {"ok": true}}));
    for (path, body) in [
        (continue_path.clone(), input.clone()),
        (cancel_path.clone(), None),
    ] {
        let (status, refused) = api(bob, reqwest::Method::POST, path.clone(), body).await;
        assert_eq!(status, 403, "{path}: {refused}");
        assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
        assert!(
            !refused.to_string().contains("approve,"),
            "{path}: {refused}"
        );
    }
    let listed = |body: &Value| -> Vec<String> {
        body["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .map(|s| s["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let (status, bobs) = api(bob, reqwest::Method::GET, "/api/sessions".into(), None).await;
    assert_eq!(status, 200);
    assert!(!listed(&bobs).contains(&session), "{bobs}");
    let (_, alices) = api(alice, reqwest::Method::GET, "/api/sessions".into(), None).await;
    assert!(listed(&alices).contains(&session), "{alices}");
    let mine = &alices["sessions"][0];
    assert_eq!(mine["startedBy"], "alice", "{alices}");

    // The admin may read it; alice continues it, and its last step runs as her.
    let status = call(&http, base, admin, companion("approve_status", false)).await;
    assert_eq!(structured(&status)["status"], "waiting", "{status}");
    let done = call(&http, base, alice, companion("approve_continue", true)).await;
    assert_eq!(
        structured(&done),
        &json!({"continuedBy": "alice", "ok": true}),
        "{done}"
    );

    // A second session of alice's: the admin cancels it over the run API.
    let second = session_of(&call(&http, base, alice, start).await, "alice");
    let (status, body) = api(
        admin,
        reqwest::Method::POST,
        format!("/api/sessions/{second}/cancel"),
        None,
    )
    .await;
    assert_eq!(
        (status, &body["status"]),
        (200, &json!("cancelled")),
        "{body}"
    );
    assert_eq!(body["startedBy"], "alice", "{body}");

    // A run started over the run API is its caller's too.
    let (status, started) = api(
        admin,
        reqwest::Method::POST,
        "/api/runs".into(),
        Some(json!({"tool": "approve"})),
    )
    .await;
    assert_eq!(status, 201, "{started}");
    let run_id = started["id"].as_str().expect("a run id").to_owned();
    let mut found = None;
    for _ in 0..200 {
        let (_, all) = api(admin, reqwest::Method::GET, "/api/sessions".into(), None).await;
        let sessions = all["sessions"].as_array().expect("sessions").clone();
        found = sessions.into_iter().find(|s| s["runId"] == run_id.as_str());
        if found.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let found = found.expect("the API-started run waits in a session");
    assert_eq!(found["startedBy"], "only-admin", "{found}");

    // Nothing of the keys reached the trace log on the way.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let log = server.log.lock().expect("lock").clone();
    for key in [alice, bob, admin] {
        assert!(!log.contains(&key[key.len() - 32..]), "a key is in the log");
    }
}

/// Over stdio the caller is who `MCPFLOW_TOKEN` names, as over HTTP.
#[test]
fn over_stdio_the_caller_is_who_the_token_names() {
    let f = identity_fixture();
    let mut client = auth_support::StdioClient::start(&f.config, f.key("alice"));
    client.call(1, "whoami", json!({}));
    let answer = client.answer(1);
    let out = structured(&answer);
    assert_eq!(out["caller"]["subject"], "alice", "{out}");
    assert_eq!(out["caller"]["via"], "apiKey", "{out}");
    assert_eq!(out["hook"], out["caller"], "{out}");
}
