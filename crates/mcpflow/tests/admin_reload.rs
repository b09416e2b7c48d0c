//! `POST /api/admin/reload` (issue #19), against `mcpflow serve --http` with access control and
//! the file watch off: only `admin` may ask; a valid change is served at once (a new tool
//! listed and callable); an invalid one is answered 422 with why, and the old config keeps
//! serving; asking again with nothing changed says so.

mod auth_support;
mod http_common;

use auth_support::{TOOLS, fixture, mcp, serve_with};
use serde_json::{Value, json};

async fn reload(http: &reqwest::Client, base: &str, key: &str) -> (u16, Value) {
    let response = http
        .post(format!("{base}/api/admin/reload"))
        .bearer_auth(key)
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn tool_names(http: &reqwest::Client, base: &str, key: &str) -> Vec<String> {
    let (status, _, m) = mcp(http, base, Some(key), "tools/list", json!({})).await;
    assert_eq!(status, 200, "{m}");
    m["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

const ADDED: &str = r#"  - name: added_later
    description: a tool the reload brings
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: said }
      - { id: said, type: transform, transform: { expr: '{"said": "new"}' }, next: exit }
      - { id: exit, type: exit }
"#;

#[tokio::test]
async fn an_admin_reloads_a_valid_config_and_an_invalid_one_changes_nothing() {
    let f = fixture();
    let server = serve_with(&f.config, &[], &["--watch-ms", "0"]);
    let (http, base) = (reqwest::Client::new(), server.base.clone());
    let (admin, lister) = (f.key("admin"), f.key("tools:list"));

    // Nothing changed on disk.
    let (status, body) = reload(&http, &base, admin).await;
    assert_eq!((status, &body["reloaded"]), (200, &json!(false)), "{body}");

    // A new tool on disk: served once an admin asks, not before (the watch is off).
    let original = std::fs::read_to_string(&f.config).expect("config");
    assert!(original.contains(TOOLS), "the fixture's tools end the file");
    std::fs::write(&f.config, format!("{original}{ADDED}")).expect("written");
    assert!(
        !tool_names(&http, &base, admin)
            .await
            .contains(&"added_later".to_owned())
    );
    let (status, body) = reload(&http, &base, lister).await;
    assert_eq!(status, 403, "only admin reloads: {body}");
    let (status, body) = reload(&http, &base, admin).await;
    assert_eq!((status, &body["reloaded"]), (200, &json!(true)), "{body}");
    assert!(
        body["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("added_later"))),
        "{body}"
    );
    assert!(
        tool_names(&http, &base, admin)
            .await
            .contains(&"added_later".to_owned())
    );
    let (status, _, m) = mcp(
        &http,
        &base,
        Some(f.key("tools:call")),
        "tools/call",
        json!({"name": "added_later", "arguments": {}}),
    )
    .await;
    assert_eq!(
        (status, &m["result"]["structuredContent"]),
        (200, &json!({"said": "new"})),
        "{m}"
    );

    // A config that does not load: 422 with why, and the one served stays.
    std::fs::write(
        &f.config,
        format!(
            "{original}{}",
            ADDED.replace("type: transform", "type: transfrom")
        ),
    )
    .expect("written");
    let (status, body) = reload(&http, &base, admin).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "config_invalid", "{body}");
    let why = body["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("transfrom"), "{why}");
    assert!(
        tool_names(&http, &base, admin)
            .await
            .contains(&"added_later".to_owned())
    );
}
