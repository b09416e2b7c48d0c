//! The hook flow editor's endpoints (issue #17, the web UI's Hooks), against `mcpflow serve
//! --http` with the fixture proxied: the hooks as configured (a person's shown, never
//! editable), one hook checked as typed (a script's syntax error at its line and column), tried
//! on a sample request with the gateway's verdict, and the hooks file saved through the tools'
//! save path: a bad script refused with its position and nothing written, a hook the config
//! refuses placed at its line in the candidate file, a save that is served (a call through the
//! gateway is then rejected by the hook), a save racing a change on disk refused; the config
//! with the saved file passes `mcpflow validate`, and one broken by hand is placed at its
//! `file:line:col`. Saving needs `authoring.hooksFile` and, under `auth:`, the `authoring` scope.

mod auth_support;
mod http_common;

use std::path::Path;
use std::process::Command;

use http_common::{fixture, mcpflow, start, stateless_call, write_config};
use serde_json::{Value, json};

fn config(extra: &str) -> String {
    format!(
        r#"version: "1.0"
server: {{name: hooking, version: "1.0.0"}}
mcpServers:
  fixture: {{command: {}}}
proxy:
  upstreams:
    fixture: {{}}
hooks:
  - id: by_hand
    method: tools/call
    phase: post
    upstream: fixture
    script: "(ctx) => undefined"
{extra}tools: []
"#,
        Value::from(fixture().to_str().expect("UTF-8 path"))
    )
}

const SAVING: &str =
    "include: [\"tools/*.yaml\"]\nauthoring: {save: true, hooksFile: hooks.yaml}\n";

fn guard(message: &str) -> Value {
    json!({
        "id": "guard",
        "method": "tools/call",
        "phase": "pre",
        "upstream": "fixture",
        "script": format!("(ctx) => ctx.request.params.arguments.text === 'shout'\n  ? {{reject: '{message}'}}\n  : undefined"),
    })
}

/// A script whose second line does not parse.
const BROKEN: &str = "(ctx) => {\n  return {reject: 'x'\n}";

async fn post(http: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let response = http.post(url).json(&body).send().await.expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(http: &reqwest::Client, url: String) -> (u16, Value) {
    let response = http.get(url).send().await.expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn validate(config: &Path) -> std::process::Output {
    Command::new(mcpflow())
        .args(["validate", config.to_str().expect("UTF-8")])
        .output()
        .expect("mcpflow validate runs")
}

/// The text of a `tools/call` of the fixture's `echo_text` through the gateway, and whether it
/// was a tool error.
async fn echo(http: &reqwest::Client, server: &http_common::Server, text: &str) -> (bool, String) {
    let answer = stateless_call(
        http,
        &server.url,
        1,
        ("fixture__echo_text", json!({"text": text})),
        json!({}),
        &[],
    )
    .await;
    let result = &answer["result"];
    (
        result["isError"] == true,
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[tokio::test]
async fn hooks_are_listed_checked_tried_and_saved_through_the_save_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_config(dir.path(), &config(SAVING));
    let server = start(&path, &["--watch-ms", "0"]);
    let (http, base) = (reqwest::Client::new(), server.base());
    let hooks_file = dir.path().join("hooks.yaml");

    // As configured: the person's hook, not editable, at its place; no hooks file yet.
    let (status, flows) = get(&http, format!("{base}/api/hooks")).await;
    assert_eq!(status, 200, "{flows}");
    assert_eq!(flows["save"]["allowed"], true, "{flows}");
    assert_eq!(flows["upstreams"], json!(["fixture"]), "{flows}");
    assert_eq!(flows["version"], Value::Null, "{flows}");
    let by_hand = &flows["hooks"][0];
    assert_eq!(by_hand["hook"]["id"], "by_hand", "{flows}");
    assert_eq!(by_hand["editable"], false, "{flows}");
    assert!(
        by_hand["writtenAt"]
            .as_str()
            .is_some_and(|w| w.contains("graph.yaml:")),
        "{flows}"
    );

    // Checked as typed: a syntax error at its line and column in the script.
    let mut broken = guard("x");
    broken["script"] = json!(BROKEN);
    let (status, checked) = post(
        &http,
        format!("{base}/api/hooks/check"),
        json!({"hook": broken}),
    )
    .await;
    assert_eq!(
        (status, &checked["valid"]),
        (200, &json!(false)),
        "{checked}"
    );
    let problem = &checked["problems"][0];
    assert_eq!(problem["path"], "/script", "{checked}");
    assert!(
        problem["line"].as_u64().is_some_and(|l| l >= 2),
        "{checked}"
    );
    assert!(problem["column"].as_u64().is_some(), "{checked}");
    let (_, fine) = post(
        &http,
        format!("{base}/api/hooks/check"),
        json!({"hook": guard("no")}),
    )
    .await;
    assert_eq!(fine["valid"], true, "{fine}");

    // Tried: the gateway's verdict on a sample, nothing sent upstream; a broken script is 422
    // with its position.
    let sample = |text: &str| json!({"name": "echo_text", "arguments": {"text": text}});
    let (status, trial) = post(
        &http,
        format!("{base}/api/hooks/try"),
        json!({"hook": guard("no shouting"), "upstream": "fixture", "params": sample("shout")}),
    )
    .await;
    assert_eq!(status, 200, "{trial}");
    assert_eq!(
        (&trial["outcome"], &trial["message"], &trial["rejects"]),
        (&json!("rejected"), &json!("no shouting"), &json!(true)),
        "{trial}"
    );
    let (_, trial) = post(
        &http,
        format!("{base}/api/hooks/try"),
        json!({"hook": guard("no shouting"), "upstream": "fixture", "params": sample("calm")}),
    )
    .await;
    assert_eq!(trial["outcome"], "passed", "{trial}");
    let (status, refused) = post(
        &http,
        format!("{base}/api/hooks/try"),
        json!({"hook": broken, "upstream": "fixture", "params": sample("x")}),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid", "{refused}");
    assert!(
        refused["error"]["problems"][0]["line"].as_u64().is_some(),
        "{refused}"
    );

    // Saved: a bad script is 422 with its place and nothing is written.
    let save = format!("{base}/api/hooks/save");
    let (status, refused) = post(
        &http,
        save.clone(),
        json!({"hooks": [broken], "base": null}),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    let problem = &refused["error"]["problems"][0];
    assert_eq!(problem["path"], "/hooks/0/script", "{refused}");
    assert!(problem["line"].as_u64().is_some(), "{refused}");
    assert!(!hooks_file.exists(), "a refused save wrote the file");
    // A hook the whole config refuses (the person's id taken again) is placed in the candidate
    // file, which is still not written.
    let mut twin = guard("x");
    twin["id"] = json!("by_hand");
    let (status, refused) = post(&http, save.clone(), json!({"hooks": [twin], "base": null})).await;
    assert_eq!(status, 422, "{refused}");
    let problem = &refused["error"]["problems"][0];
    assert!(
        problem["message"]
            .as_str()
            .is_some_and(|m| m.contains("duplicate hook id")),
        "{refused}"
    );
    assert!(
        problem["at"]
            .as_str()
            .is_some_and(|a| a.contains("hooks.yaml:")),
        "{refused}"
    );
    assert!(!hooks_file.exists(), "a refused save wrote the file");

    // Before the save a shout passes the gateway; after it the hook rejects it.
    assert_eq!(echo(&http, &server, "shout").await, (false, "shout".into()));
    let (status, saved) = post(
        &http,
        save.clone(),
        json!({"hooks": [guard("no shouting")], "base": null}),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["created"], true, "{saved}");
    let version = saved["version"].as_str().expect("a version").to_owned();
    let (rejected, text) = echo(&http, &server, "shout").await;
    assert!(rejected && text.contains("no shouting"), "{text}");
    assert_eq!(echo(&http, &server, "calm").await, (false, "calm".into()));
    let (_, flows) = get(&http, format!("{base}/api/hooks")).await;
    assert_eq!(flows["version"], json!(version), "{flows}");
    assert_eq!(flows["hooks"][1]["hook"]["id"], "guard", "{flows}");
    assert_eq!(flows["hooks"][1]["editable"], true, "{flows}");
    assert!(
        validate(&path).status.success(),
        "the saved config validates"
    );

    // A save racing a change on disk: refused, the change kept.
    let by_hand_text = format!(
        "{}# edited by hand\n",
        std::fs::read_to_string(&hooks_file).expect("saved")
    );
    std::fs::write(&hooks_file, &by_hand_text).expect("edited");
    for base_version in [json!(version), json!(null)] {
        let (status, refused) = post(
            &http,
            save.clone(),
            json!({"hooks": [guard("other")], "base": base_version}),
        )
        .await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (409, &json!("changed_on_disk")),
            "{refused}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&hooks_file).expect("kept"),
        by_hand_text
    );

    // The hooks file broken by hand: `validate` places the script's error at its line in it.
    std::fs::write(
        &hooks_file,
        "hooks:\n  - id: guard\n    method: tools/call\n    phase: pre\n    script: |\n      (ctx) => {\n        return {reject: 'x'\n      }\n",
    )
    .expect("broken by hand");
    let out = validate(&path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    // The script is lines 6 to 8 of the file; the parser stops at its end.
    assert!(
        (6..=9).any(|line| stderr.contains(&format!("hooks.yaml:{line}:")))
            && stderr.contains("syntax error"),
        "the syntax error is placed in the hooks file: {stderr}"
    );
}

#[tokio::test]
async fn saving_hooks_needs_a_hooks_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_config(
        dir.path(),
        &config("include: [\"tools/*.yaml\"]\nauthoring: {save: true}\n"),
    );
    let server = start(&path, &["--watch-ms", "0"]);
    let (http, base) = (reqwest::Client::new(), server.base());
    let (_, flows) = get(&http, format!("{base}/api/hooks")).await;
    assert_eq!(flows["save"]["allowed"], false, "{flows}");
    assert!(
        flows["save"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("hooksFile")),
        "{flows}"
    );
    let (status, refused) = post(
        &http,
        format!("{base}/api/hooks/save"),
        json!({"hooks": [guard("no")], "base": null}),
    )
    .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (403, &json!("save_disabled")),
        "{refused}"
    );
}

#[tokio::test]
async fn under_access_control_checking_trying_and_saving_hooks_need_the_authoring_scope() {
    let f = auth_support::fixture_with(
        &[],
        &format!(
            "mcpServers:\n  fixture: {{command: {}}}\nproxy:\n  upstreams:\n    fixture: {{}}\n{SAVING}{}",
            Value::from(fixture().to_str().expect("UTF-8 path")),
            auth_support::TOOLS
        ),
    );
    let server = auth_support::serve_with(&f.config, &[], &["--watch-ms", "0"]);
    let http = reqwest::Client::new();
    let base = server.base.clone();
    let calls = [
        ("check", json!({"hook": guard("no")})),
        (
            "try",
            json!({"hook": guard("no"), "upstream": "fixture", "params": {"name": "echo_text", "arguments": {"text": "shout"}}}),
        ),
        ("save", json!({"hooks": [guard("no")], "base": null})),
    ];
    for (key, expected) in [("runs:read", 403), ("authoring", 200)] {
        for (endpoint, body) in &calls {
            let response = http
                .post(format!("{base}/api/hooks/{endpoint}"))
                .bearer_auth(f.key(key))
                .json(body)
                .send()
                .await
                .expect("sent");
            let status = response.status().as_u16();
            let text = response.text().await.unwrap_or_default();
            assert_eq!(status, expected, "{endpoint} with {key}: {text}");
        }
    }
    let listed = http
        .get(format!("{base}/api/hooks"))
        .bearer_auth(f.key("runs:read"))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        listed.status().as_u16(),
        200,
        "reading the hooks is reading"
    );
}
