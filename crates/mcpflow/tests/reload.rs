//! A running server serves its edited config without a restart: the watch on its files (over
//! stdio) and SIGHUP (over HTTP). A valid change is announced and served, only the upstream
//! whose definition changed gets a new process, and a config that does not load changes
//! nothing (the old one keeps serving; `/readyz` and `/metrics` say so).
mod common;
mod http_common;

use std::path::Path;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::{Value, json};

/// Two upstreams (the same fixture) and a tool that asks each for its process id.
const V1: &str = r#"
version: "1.0"
server: {name: reloading, version: "1.0.0"}
mcpServers:
  one: {command: "{fixture}"}
  two: {command: "{fixture}"}
tools:
  - name: pids
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: a}
      - {id: a, type: mcp, server: one, tool: pid, args: {}, next: b}
      - {id: b, type: mcp, server: two, tool: pid, args: {}, next: both}
      - {id: both, type: transform, transform: {expr: '{"one": a.pid, "two": b.pid}'}, next: exit}
      - {id: exit, type: exit}
"#;

/// `two` defined anew (an environment variable added) and a tool added.
fn v2() -> String {
    V1.replace(
        r#"two: {command: "{fixture}"}"#,
        r#"two: {command: "{fixture}", env: {RELOADED: "yes"}}"#,
    ) + r#"
  - name: hello
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: hi}
      - {id: hi, type: transform, transform: {expr: '"hi"'}, next: exit}
      - {id: exit, type: exit}
"#
}

use common::Listener;

fn write(path: &Path, yaml: &str) {
    let fixture = common::fixture();
    // Written whole and renamed into place, as editors save.
    let tmp = path.with_extension("tmp");
    std::fs::write(
        &tmp,
        yaml.replace("{fixture}", &fixture.display().to_string()),
    )
    .expect("write config");
    std::fs::rename(&tmp, path).expect("rename config");
}

async fn pids(client: &RunningService<rmcp::RoleClient, Listener>) -> (u64, u64) {
    let result = client
        .call_tool(CallToolRequestParams::new("pids"))
        .await
        .expect("tools/call pids");
    let out = result.structured_content.clone().unwrap_or(Value::Null);
    match (out["one"].as_u64(), out["two"].as_u64()) {
        (Some(one), Some(two)) => (one, two),
        _ => panic!("pids answered {out}"),
    }
}

async fn names(client: &RunningService<rmcp::RoleClient, Listener>) -> Vec<String> {
    let tools = client.list_all_tools().await.expect("tools/list");
    tools.iter().map(|t| t.name.to_string()).collect()
}

fn alive(pid: u64) -> bool {
    // A zombie (exited, not yet reaped) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'))
    })
}

#[tokio::test]
async fn an_edited_config_is_served_without_a_restart_over_stdio() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("graph.yaml");
    write(&config, V1);
    let (client, listener) = common::listening(&[
        "serve",
        config.to_str().expect("utf-8"),
        "--watch-ms",
        "100",
    ])
    .await;
    let caps = client
        .peer_info()
        .expect("server info")
        .capabilities
        .clone();
    assert_eq!(caps.tools.and_then(|t| t.list_changed), Some(true));
    let (one, two) = pids(&client).await;

    // A valid change: announced, served, and only `two` (whose definition changed) restarted.
    write(&config, &v2());
    for _ in 0..200 {
        if listener.heard() >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        listener.heard() >= 1,
        "no tools/list_changed after the edit"
    );
    assert!(names(&client).await.contains(&"hello".to_owned()));
    let (one_after, two_after) = pids(&client).await;
    assert_eq!(one_after, one, "`one` did not change: its process stays");
    assert_ne!(two_after, two, "`two` changed: a new process serves it");
    for _ in 0..200 {
        if !alive(two) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(!alive(two), "the replaced process of `two` was shut down");
    assert!(alive(one));

    // A config that does not load changes nothing; the watch goes on.
    let seen = listener.heard();
    write(&config, "version: \"1.0\"\ntools: [ {name: broken\n");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(listener.heard(), seen, "nothing was announced");
    assert!(names(&client).await.contains(&"hello".to_owned()));
    assert_eq!(
        pids(&client).await,
        (one_after, two_after),
        "the same processes serve"
    );

    write(&config, V1);
    for _ in 0..200 {
        if !names(&client).await.contains(&"hello".to_owned()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        !names(&client).await.contains(&"hello".to_owned()),
        "the config fixed after a refusal is served"
    );
    client.cancel().await.expect("client stops");
}

fn sighup(server: &http_common::Server) {
    let status = std::process::Command::new("kill")
        .args(["-HUP", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

async fn answers_hello(http: &reqwest::Client, url: &str) -> bool {
    let answer =
        http_common::stateless_call(http, url, 1, ("hello", json!({})), json!({}), &[]).await;
    answer["result"]["isError"] != json!(true) && answer.get("error").is_none()
}

#[tokio::test]
async fn sighup_reloads_and_a_refused_config_shows_in_readyz_and_metrics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("graph.yaml");
    write(&config, V1);
    // The watch off: only the signal reloads.
    let server = http_common::start(&config, &["--watch-ms", "0"]);
    let http = reqwest::Client::new();
    assert!(!answers_hello(&http, &server.url).await);

    write(&config, &v2());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !answers_hello(&http, &server.url).await,
        "no watch: nothing yet"
    );
    sighup(&server);
    let mut served = false;
    for _ in 0..200 {
        if answers_hello(&http, &server.url).await {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(served, "SIGHUP served the edited config");

    write(
        &config,
        "version: \"1.0\"\nserver: {name: x, version: \"1\"}\ntools: 7\n",
    );
    sighup(&server);
    let mut note = String::new();
    for _ in 0..200 {
        let (head, body) = http_common::curl(&[&format!("{}/readyz", server.base())]);
        if body.contains("config reload refused") {
            assert_eq!(
                http_common::status(&head),
                200,
                "the old config still serves: ready"
            );
            note = body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        note.contains("graph.yaml"),
        "/readyz says what is wrong and where: {note}"
    );
    assert!(
        answers_hello(&http, &server.url).await,
        "the previous config is served"
    );

    let metrics = reqwest::get(format!("{}/metrics", server.base()))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains("mcpflow_config_reloads_total{outcome=\"applied\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("mcpflow_config_reloads_total{outcome=\"refused\"} 1"),
        "{metrics}"
    );
}

/// Counts each kind of list change the server announces.
#[derive(Clone, Default)]
struct Lists {
    tools: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    resources: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    prompts: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ClientHandler for Lists {
    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.tools.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_resource_list_changed(
        &self,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.resources
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_prompt_list_changed(
        &self,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.prompts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Proxied resources and prompts change with the upstreams: a server that passes them
/// declares `listChanged` for them, re-announces an upstream's prompt list change, and
/// announces both lists after a reload.
#[tokio::test]
async fn a_reload_announces_proxied_resources_and_prompts_too() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("graph.yaml");
    let proxy = "proxy:\n  upstreams:\n    one: {resources: true, prompts: true}\n";
    write(&config, &format!("{V1}{proxy}"));
    let mut cmd = tokio::process::Command::new(common::mcpflow());
    cmd.args([
        "serve",
        config.to_str().expect("utf-8"),
        "--watch-ms",
        "100",
    ]);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).expect("mcpflow starts");
    let lists = Lists::default();
    let client = rmcp::ServiceExt::serve(lists.clone(), transport)
        .await
        .expect("initialized");
    let caps = client
        .peer_info()
        .expect("server info")
        .capabilities
        .clone();
    assert_eq!(caps.resources.and_then(|r| r.list_changed), Some(true));
    assert_eq!(caps.prompts.and_then(|p| p.list_changed), Some(true));

    // The upstream says its prompts changed: the client hears it from the gateway.
    client
        .call_tool(CallToolRequestParams::new(
            "one__test_trigger_prompt_change",
        ))
        .await
        .expect("the trigger is called");
    for _ in 0..200 {
        if lists.prompts.load(Ordering::SeqCst) >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        lists.prompts.load(Ordering::SeqCst),
        1,
        "the upstream's prompt change"
    );
    assert_eq!(lists.resources.load(Ordering::SeqCst), 0);

    write(&config, &format!("{}{proxy}", v2()));
    for _ in 0..200 {
        if lists.prompts.load(Ordering::SeqCst) >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        lists.tools.load(Ordering::SeqCst) >= 1,
        "no tools/list_changed"
    );
    assert!(
        lists.resources.load(Ordering::SeqCst) >= 1,
        "no resources/list_changed"
    );
    assert!(
        lists.prompts.load(Ordering::SeqCst) >= 2,
        "no prompts/list_changed after the reload"
    );
    client.cancel().await.expect("client stops");
}
