//! The run API of `mcpflow serve --http`, end to end: a debug session driven over HTTP
//! against the real binary (start paused, a conditional breakpoint inside a foreach, step,
//! the context at an index, resume, stop), and the Host guard in front of `/api` too.
mod http_common;

use std::time::Duration;

use http_common::{config, curl, start, status};
use serde_json::{Value, json};

struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = tokio::time::timeout(Duration::from_secs(30), req.send())
            .await
            .expect("answers within 30 s")
            .expect("HTTP works");
        let code = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (
            code,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// Polls run `id` until `f` holds (within 10 s).
    async fn until(&self, id: &str, f: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..1000 {
            let (code, run) = self.get(&format!("/api/runs/{id}")).await;
            if code == 200 && f(&run) {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("run {id} never reached the expected state");
    }

    /// Waits until the run pauses at a new place (its `paused` differs from `before`).
    async fn paused_after(&self, id: &str, before: &Value) -> Value {
        let run = self
            .until(id, |r| {
                r["status"] == "paused" && r["debug"]["paused"] != *before
            })
            .await;
        run["debug"]["paused"][0].clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debug_session_over_http_against_the_binary() {
    let server = start(&config("run_api.yaml"), &[]);
    let api = Api {
        base: server.base(),
        http: reqwest::Client::new(),
    };
    let (code, started) = api
        .post(
            "/api/runs",
            json!({"tool": "each", "args": {"list": [1, 2, 3, 4, 5]}, "debug": {"pause": true}}),
        )
        .await;
    assert_eq!(code, 201, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    let at = api.paused_after(&id, &Value::Null).await;
    assert_eq!(at["nodeId"], "entry");

    let (code, body) = api
        .call(
            reqwest::Method::PUT,
            &format!("/api/runs/{id}/breakpoints/dbl"),
            Some(json!({"condition": "$.fe.item = 3"})),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    let (code, _) = api.post(&format!("/api/runs/{id}/resume"), json!({})).await;
    assert_eq!(code, 200);
    let at = api.paused_after(&id, &json!([at])).await;
    assert_eq!(
        (&at["nodeId"], &at["item"], &at["reason"]),
        (&json!("dbl"), &json!(2), &json!("breakpoint"))
    );

    let (code, _) = api.post(&format!("/api/runs/{id}/step"), json!({})).await;
    assert_eq!(code, 200);
    let stepped = api.paused_after(&id, &json!([at])).await;
    assert_eq!(
        (&stepped["item"], &stepped["reason"]),
        (&json!(3), &json!("step"))
    );

    // The context after record 2 (the second item's dbl): the outputs so far.
    let (code, ctx) = api.get(&format!("/api/runs/{id}/context?index=2")).await;
    assert_eq!(code, 200, "{ctx}");
    assert_eq!(ctx["context"]["dbl"], json!(4));
    assert_eq!(ctx["context"]["entry"], json!({"list": [1, 2, 3, 4, 5]}));

    let (code, _) = api.post(&format!("/api/runs/{id}/resume"), json!({})).await;
    assert_eq!(code, 200);
    // Nothing pauses any more: the run ends; a stop then no longer applies.
    let run = api.until(&id, |r| r["status"] == "succeeded").await;
    assert_eq!(run["result"], json!([2, 4, 6, 8, 10]));
    let (code, body) = api.post(&format!("/api/runs/{id}/stop"), json!({})).await;
    assert_eq!(code, 409, "{body}");

    // A second run, stopped while paused.
    let (_, started) = api
        .post(
            "/api/runs",
            json!({"tool": "each", "args": {"list": [1, 2]}, "debug": {"breakpoints": [{"node": "dbl"}]}}),
        )
        .await;
    let id = started["id"].as_str().expect("id").to_owned();
    api.paused_after(&id, &Value::Null).await;
    let (code, _) = api.post(&format!("/api/runs/{id}/stop"), json!({})).await;
    assert_eq!(code, 200);
    let run = api.until(&id, |r| r["status"] == "stopped").await;
    assert_eq!(run["live"], false);
    let (_, listed) = api.get("/api/runs?tool=each&status=stopped").await;
    assert_eq!(listed["runs"][0]["id"], json!(id));
}

#[test]
fn the_run_api_is_behind_the_host_guard() {
    let server = start(&config("run_api.yaml"), &[]);
    let url = format!("{}/api/runs", server.base());
    let (head, _) = curl(&[&url]);
    assert_eq!(status(&head), 200);
    let (head, _) = curl(&["-H", "Host: evil.example", &url]);
    assert_eq!(status(&head), 403);
    let (head, _) = curl(&["-H", "Origin: http://evil.example", &url]);
    assert_eq!(status(&head), 403);
}

/// A tool saved while serving (a reload) is drawn with its nodes placed in the file it was
/// saved to: the API's positions follow the config served now, not the one loaded at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_follow_a_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = http_common::write_config(
        dir.path(),
        r#"
version: "1.0"
server: {name: saving, version: "1.0.0"}
include: ["tools/*.yaml"]
authoring: {save: true}
tools:
  - name: by_hand
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#,
    );
    let server = start(&config, &[]);
    let http = reqwest::Client::new();
    let definition = json!({
        "name": "greet",
        "inputSchema": {"type": "object"},
        "nodes": [
            {"id": "entry", "type": "entry", "next": "hello"},
            {"id": "hello", "type": "transform", "transform": {"expr": "'hi'"}, "next": "exit"},
            {"id": "exit", "type": "exit"}
        ]
    });
    let saved = http_common::stateless_call(
        &http,
        &server.url,
        1,
        ("mcpflow_save_tool", json!({"definition": definition})),
        json!({}),
        &[],
    )
    .await;
    assert_eq!(saved["result"]["isError"], false, "{saved}");
    let api = Api {
        base: server.base(),
        http,
    };
    let (code, graph) = api.get("/api/tools/greet/graph").await;
    assert_eq!(code, 200, "{graph}");
    let hello = graph["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["id"] == "hello"))
        .unwrap_or_else(|| panic!("no node `hello` in {graph}"));
    let file = hello["position"]["file"].as_str().unwrap_or_default();
    assert!(file.ends_with("tools/greet.yaml"), "{hello}");
    assert!(
        hello["position"]["line"].as_u64().is_some_and(|l| l > 1),
        "{hello}"
    );
}
