//! The graph editor's endpoints (issue #17, the web UI's Edit), against `mcpflow serve --http`
//! on a config whose tools can be saved: a tool as on disk (text and version, or why it cannot
//! be replaced), definitions and expressions checked as they are typed, the catalog and
//! templates, and saves through the authoring tools' save path: written and served, checked by
//! `mcpflow validate`, an invalid one refused with its problems and no file touched, a save
//! racing a change on disk refused with a clear message, a taken name refused; saving needs the
//! config's `authoring.save` and, under `auth:`, the `authoring` scope.

mod auth_support;
mod http_common;

use std::path::Path;
use std::process::Command;

use http_common::{mcpflow, start, write_config};
use serde_json::{Value, json};

const CONFIG: &str = r#"version: "1.0"
server: {name: editing, version: "1.0.0"}
include: ["tools/*.yaml"]
authoring: {save: true}
tools:
  - name: by_hand
    description: written by a person
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

const DOUBLE: &str = "name: double # kept as written\ndescription: Doubles n\ninputSchema:\n  type: object\n  properties:\n    n: {type: number}\nnodes:\n  - id: entry\n    type: entry\n    next: calc\n  - id: calc\n    type: transform\n    transform:\n      expr: '{\"result\": entry.n * 2}'\n    next: exit\n  - id: exit\n    type: exit\n";

async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http.request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(http: &reqwest::Client, url: String) -> (u16, Value) {
    send(http, reqwest::Method::GET, url, None).await
}

async fn post(http: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    send(http, reqwest::Method::POST, url, Some(body)).await
}

fn validate(config: &Path) -> std::process::Output {
    Command::new(mcpflow())
        .args(["validate", config.to_str().expect("UTF-8")])
        .output()
        .expect("mcpflow validate runs")
}

#[tokio::test]
async fn a_tool_is_opened_checked_and_saved_through_the_authoring_save_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), CONFIG);
    let server = start(&config, &["--watch-ms", "0"]);
    let (http, base) = (reqwest::Client::new(), server.base());

    // What the editor needs, and every template checks out.
    let (status, overview) = get(&http, format!("{base}/api/authoring")).await;
    assert_eq!(status, 200, "{overview}");
    assert_eq!(overview["save"]["allowed"], true, "{overview}");
    let transform = overview["catalog"]["nodeTypes"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["type"] == "transform"))
        .expect("transform in the catalog");
    assert!(
        transform["schema"].to_string().contains("\"expr\""),
        "{transform}"
    );
    for template in overview["templates"].as_array().expect("templates") {
        let (status, checked) = post(
            &http,
            format!("{base}/api/authoring/check"),
            json!({"definition": template["definition"]}),
        )
        .await;
        assert_eq!(
            (status, &checked["valid"]),
            (200, &json!(true)),
            "{checked}"
        );
    }

    // A hand-written tool opens, but a save cannot replace it.
    let (status, by_hand) = get(&http, format!("{base}/api/tools/by_hand/source")).await;
    assert_eq!(status, 200, "{by_hand}");
    assert!(
        by_hand["readOnly"]
            .as_str()
            .is_some_and(|w| w.contains("never rewrites")),
        "{by_hand}"
    );
    assert!(
        by_hand["writtenAt"]
            .as_str()
            .is_some_and(|w| w.contains("graph.yaml:")),
        "{by_hand}"
    );
    let (status, _) = get(&http, format!("{base}/api/tools/nothing/source")).await;
    assert_eq!(status, 404);

    // Checked as typed: a broken expression is placed at its node's field with its code; YAML
    // that does not parse is one problem at its line, with no definition.
    let broken = DOUBLE.replace("entry.n * 2}", "entry.n * }");
    let (status, checked) = post(
        &http,
        format!("{base}/api/authoring/check"),
        json!({"definition": broken}),
    )
    .await;
    assert_eq!(
        (status, &checked["valid"]),
        (200, &json!(false)),
        "{checked}"
    );
    let problem = &checked["problems"][0];
    assert_eq!(problem["path"], "/nodes/1/transform/expr", "{checked}");
    assert!(
        problem["code"].as_str().is_some_and(|c| c.starts_with('S')),
        "{checked}"
    );
    assert_eq!(checked["definition"]["nodes"][1]["id"], "calc", "{checked}");
    let (_, unparsed) = post(
        &http,
        format!("{base}/api/authoring/check"),
        json!({"definition": "name: x\nnodes: [\n  - {id: entry"}),
    )
    .await;
    assert_eq!(unparsed["valid"], false, "{unparsed}");
    assert!(unparsed["definition"].is_null(), "{unparsed}");
    assert!(
        unparsed["problems"][0]["line"].as_u64().is_some(),
        "{unparsed}"
    );

    // One expression as a node compiles it.
    let (_, e) = post(
        &http,
        format!("{base}/api/authoring/expression"),
        json!({"language": "jsonata", "expression": "entry.n *"}),
    )
    .await;
    assert_eq!(e["valid"], false, "{e}");
    assert!(e["error"]["position"].as_u64().is_some(), "{e}");
    let (_, e) = post(
        &http,
        format!("{base}/api/authoring/expression"),
        json!({"language": "logic", "expression": {"<": [{"var": "entry.n"}, 3]}}),
    )
    .await;
    assert_eq!(e, json!({"valid": true}));
    let (status, _) = post(
        &http,
        format!("{base}/api/authoring/expression"),
        json!({"language": "python", "expression": "1"}),
    )
    .await;
    assert_eq!(status, 400);

    // An invalid definition is not saved, and nothing is written.
    let save = format!("{base}/api/authoring/save");
    let (status, refused) = post(
        &http,
        save.clone(),
        json!({"definition": broken, "base": null}),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid", "{refused}");
    assert_eq!(
        refused["error"]["problems"][0]["path"],
        "/nodes/1/transform/expr"
    );
    assert!(!dir.path().join("tools/double.yaml").exists());

    // A new tool: written to its own file (its text kept), valid, served.
    let (status, saved) = post(
        &http,
        save.clone(),
        json!({"definition": DOUBLE, "base": null}),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(
        (&saved["saved"], &saved["created"]),
        (&json!("double"), &json!(true))
    );
    let file = dir.path().join("tools/double.yaml");
    let written = std::fs::read_to_string(&file).expect("the tool's file");
    assert!(
        written.contains("name: double # kept as written"),
        "{written}"
    );
    let checked = validate(&config);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let (_, tools) = get(&http, format!("{base}/api/tools")).await;
    assert!(
        tools["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "double")),
        "{tools}"
    );

    // Opened again: its text as written and the version a save sends back.
    let (_, source) = get(&http, format!("{base}/api/tools/double/source")).await;
    assert_eq!(source["text"], DOUBLE, "{source}");
    assert_eq!(source["version"], saved["version"], "{source}");
    assert!(source["readOnly"].is_null(), "{source}");

    // A second new tool of the same name is refused: the name is taken.
    let (status, taken) = post(
        &http,
        save.clone(),
        json!({"definition": DOUBLE, "base": null}),
    )
    .await;
    assert_eq!(
        (status, &taken["error"]["code"]),
        (409, &json!("changed_on_disk")),
        "{taken}"
    );

    // A change on disk since the editor opened it: the save is refused, the change kept.
    let by_someone = written.replace("Doubles n", "Doubles n, edited by hand");
    std::fs::write(&file, &by_someone).expect("edited on disk");
    let tripled = DOUBLE.replace("* 2", "* 3");
    let (status, raced) = post(
        &http,
        save.clone(),
        json!({"definition": tripled, "base": source["version"]}),
    )
    .await;
    assert_eq!(status, 409, "{raced}");
    let message = raced["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("changed on disk since it was opened"),
        "{raced}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("file"), by_someone);

    // Opened anew, it saves.
    let (_, fresh) = get(&http, format!("{base}/api/tools/double/source")).await;
    let (status, saved) = post(
        &http,
        save.clone(),
        json!({"definition": tripled, "base": fresh["version"]}),
    )
    .await;
    assert_eq!((status, &saved["created"]), (200, &json!(false)), "{saved}");
    let (_, graph) = get(&http, format!("{base}/api/tools/double/graph")).await;
    assert!(
        graph.to_string().contains("entry.n * 3"),
        "served with the change: {graph}"
    );

    // Bad input.
    let (status, _) = post(&http, save.clone(), json!({"definition": DOUBLE})).await;
    assert_eq!(status, 400, "`base` is required");
    let (status, _) = post(&http, save, json!({"definition": 3, "base": null})).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn saving_needs_the_configs_save_flag() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), &CONFIG.replace("authoring: {save: true}\n", ""));
    let server = start(&config, &["--watch-ms", "0"]);
    let (http, base) = (reqwest::Client::new(), server.base());
    let (_, overview) = get(&http, format!("{base}/api/authoring")).await;
    assert_eq!(overview["save"]["allowed"], false, "{overview}");
    assert!(
        overview["save"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("authoring: {save: true}"))
    );
    let (status, refused) = post(
        &http,
        format!("{base}/api/authoring/save"),
        json!({"definition": DOUBLE, "base": null}),
    )
    .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (403, &json!("save_disabled")),
        "{refused}"
    );
    assert!(!dir.path().join("tools").exists());
}

#[tokio::test]
async fn under_access_control_checking_and_saving_need_the_authoring_scope() {
    let f = auth_support::fixture_with(
        &[],
        &format!(
            "include: [\"tools/*.yaml\"]\nauthoring: {{save: true}}\n{}",
            auth_support::TOOLS
        ),
    );
    let server = auth_support::serve_with(&f.config, &[], &["--watch-ms", "0"]);
    let http = reqwest::Client::new();
    let base = server.base.clone();
    let body = json!({"definition": DOUBLE, "base": null});
    for (key, check, save) in [("runs:read", 403, 403), ("authoring", 200, 200)] {
        let status = |r: reqwest::Response| r.status().as_u16();
        let checked = http
            .post(format!("{base}/api/authoring/check"))
            .bearer_auth(f.key(key))
            .json(&json!({"definition": DOUBLE}))
            .send()
            .await
            .expect("sent");
        assert_eq!(status(checked), check, "check with {key}");
        let saved = http
            .post(format!("{base}/api/authoring/save"))
            .bearer_auth(f.key(key))
            .json(&body)
            .send()
            .await
            .expect("sent");
        assert_eq!(status(saved), save, "save with {key}");
    }
    let source = http
        .get(format!("{base}/api/tools/double/source"))
        .bearer_auth(f.key("runs:read"))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        source.status().as_u16(),
        200,
        "reading a tool is reading its graph"
    );
}
