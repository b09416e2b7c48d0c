//! Upstream headers templated from the caller (issue #18), against `mcpflow serve --http` on a
//! real port and the fixture upstream over Streamable HTTP, whose `headers` tool says which
//! HTTP headers each call reached it with: a graph's `mcp` node and a proxied call carry
//! `${caller.subject}`, `${caller.via}`, `${caller.key}` and a chosen claim; a header naming
//! what the caller lacks is left out; the caller's own credential goes only to the server
//! marked `forwardCallerToken`, and a config asking for it elsewhere does not load.

mod auth_support;
mod http_common;

use auth_support::mint::claims;
use auth_support::{AUDIENCE, ISSUER, fixture_over_http, fixture_with, mcp, serve};
use serde_json::{Value, json};

fn config_rest(url: &str) -> String {
    format!(
        r#"mcpServers:
  who:
    type: streamableHttp
    url: {url}
    forwardCallerToken: true
    headers:
      X-Static: fixed
      X-User: "user=${{caller.subject}}"
      X-Via: "${{caller.via}}"
      X-Key: "${{caller.key}}"
      X-Email: "${{caller.claims.email}}"
      X-Scopes: "${{caller.scopes}}"
      Authorization: "Bearer ${{caller.token}}"
  quiet:
    type: streamableHttp
    url: {url}
    headers:
      X-User: "${{caller.subject}}"
proxy:
  upstreams:
    who: {{ include: [headers] }}
tools:
  - name: seen
    description: the headers the upstream saw
    inputSchema: {{ type: object }}
    nodes:
      - {{ id: entry, type: entry, next: ask }}
      - {{ id: ask, type: mcp, server: who, tool: headers, args: {{}}, next: exit }}
      - {{ id: exit, type: exit }}
  - name: seen_quietly
    description: the headers an upstream that forwards no credential saw
    inputSchema: {{ type: object }}
    nodes:
      - {{ id: entry, type: entry, next: ask }}
      - {{ id: ask, type: mcp, server: quiet, tool: headers, args: {{}}, next: exit }}
      - {{ id: exit, type: exit }}
"#
    )
}

/// What the fixture shows of `Authorization: Bearer SECRET`: the secret's SHA-256, so that
/// the upstream's answer, which mcpflow logs at trace, cannot leak it.
fn bearer(secret: &str) -> String {
    use sha2::Digest;
    let hex: String = sha2::Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("Bearer sha256:{hex}")
}

async fn headers_seen(
    http: &reqwest::Client,
    base: &str,
    credential: &str,
    tool: &str,
) -> serde_json::Map<String, Value> {
    let (status, _, message) = mcp(
        http,
        base,
        Some(credential),
        "tools/call",
        json!({"name": tool, "arguments": {}}),
    )
    .await;
    assert_eq!(status, 200, "{message}");
    let result = &message["result"];
    assert_eq!(result["isError"], json!(false), "{message}");
    result["structuredContent"]["headers"]
        .as_object()
        .unwrap_or_else(|| panic!("headers: {message}"))
        .clone()
}

#[tokio::test]
async fn upstream_headers_carry_who_calls_and_only_a_marked_server_gets_the_credential() {
    let upstream = fixture_over_http();
    let f = fixture_with(
        &[("alice", &["tools:list", "tools:call"])],
        &config_rest(&upstream.url),
    );
    let server = serve(&f.config, &[("MCPFLOW_LOG", "trace")]);
    let http = reqwest::Client::new();
    let alice = f.key("alice");

    // A graph's call, made for a key: its name is subject and key; no email claim, so no
    // X-Email at all; the key itself only where forwarding was asked for.
    let seen = headers_seen(&http, &server.base, alice, "seen").await;
    assert_eq!(seen["x-static"], "fixed", "{seen:?}");
    assert_eq!(seen["x-user"], "user=alice", "{seen:?}");
    assert_eq!(seen["x-via"], "apiKey", "{seen:?}");
    assert_eq!(seen["x-key"], "alice", "{seen:?}");
    assert_eq!(seen["x-scopes"], "tools:list tools:call", "{seen:?}");
    assert!(!seen.contains_key("x-email"), "a missing claim: {seen:?}");
    assert_eq!(seen["authorization"], bearer(alice), "{seen:?}");

    let quiet = headers_seen(&http, &server.base, alice, "seen_quietly").await;
    assert_eq!(quiet["x-user"], "alice", "{quiet:?}");
    assert!(
        !quiet.contains_key("authorization"),
        "no credential without forwardCallerToken: {quiet:?}"
    );

    // A proxied call, made for a token: its subject and the claim the config keeps.
    let mut token_claims = claims(ISSUER, AUDIENCE, "carol", "tools:call");
    token_claims["email"] = json!("carol@example.test");
    let token = f.signer.sign(&token_claims);
    let seen = headers_seen(&http, &server.base, &token, "who__headers").await;
    assert_eq!(seen["x-user"], "user=carol", "{seen:?}");
    assert_eq!(seen["x-via"], "jwt", "{seen:?}");
    assert_eq!(seen["x-email"], "carol@example.test", "{seen:?}");
    assert!(!seen.contains_key("x-key"), "a token has no key: {seen:?}");
    assert_eq!(seen["authorization"], bearer(&token), "{seen:?}");

    // Forwarded where asked, and still never written to the log.
    let log = server.log.lock().expect("lock").clone();
    assert!(!log.contains(alice), "the key is in the log");
    assert!(!log.contains(&token), "the token is in the log");
}

#[test]
fn a_credential_is_forwarded_only_where_the_config_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let check = |headers: &str, forward: bool| {
        let yaml = format!(
            "version: \"1.0\"\nserver: {{ name: h, version: \"1\" }}\nmcpServers:\n  up:\n    \
             type: streamableHttp\n    url: http://127.0.0.1:9/mcp\n    forwardCallerToken: {forward}\n    \
             headers: {{ {headers} }}\ntools: []\n"
        );
        let config = http_common::write_config(dir.path(), &yaml);
        let out = std::process::Command::new(http_common::mcpflow())
            .args(["validate", config.to_str().expect("UTF-8")])
            .output()
            .expect("validate runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout),
        )
    };
    let (ok, text) = check(r#"Authorization: "Bearer ${caller.token}""#, false);
    assert!(!ok, "{text}");
    assert!(text.contains("forwardCallerToken"), "{text}");
    assert!(
        text.contains("headers/Authorization") || text.contains("Authorization"),
        "{text}"
    );
    let (ok, text) = check(r#"Authorization: "Bearer ${caller.token}""#, true);
    assert!(ok, "{text}");
    let (ok, text) = check(r#"X-Who: "${caller.password}""#, false);
    assert!(!ok, "{text}");
    assert!(text.contains("names nothing of the caller"), "{text}");
    let (ok, text) = check(r#"X-Who: "${caller.subject} ${caller.claims.team}""#, false);
    assert!(ok, "{text}");
}

/// Over stdio the caller is who `MCPFLOW_TOKEN` names, and that token is the credential a
/// `forwardCallerToken` upstream receives.
#[test]
fn over_stdio_the_token_of_the_environment_is_the_callers() {
    let upstream = fixture_over_http();
    let f = fixture_with(
        &[("alice", &["tools:list", "tools:call"])],
        &config_rest(&upstream.url),
    );
    let alice = f.key("alice");
    let mut client = auth_support::StdioClient::start(&f.config, alice);
    client.call(1, "seen", json!({}));
    let answer = client.answer(1);
    let seen = &answer["result"]["structuredContent"]["headers"];
    assert_eq!(seen["x-user"], "user=alice", "{answer}");
    assert_eq!(seen["authorization"], bearer(alice), "{answer}");
}
