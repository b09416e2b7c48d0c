//! Hostile inputs are refused cheaply; `${VAR}` is read from the environment given.

mod common;

use mcpflow_config::{Loader, McpServer};

use common::{err, one_err};

#[test]
fn billion_laughs_is_rejected() {
    let mut text = String::from(
        "a0: &a0 [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n",
    );
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let e = one_err(&text);
    assert!(e.message.contains("billion laughs"), "{e}");
    assert!(e.line >= 1, "{e}");
}

#[test]
fn deep_nesting_is_rejected() {
    let text = format!("version: {}{}\n", "[".repeat(200), "]".repeat(200));
    let e = one_err(&text);
    assert!(e.message.contains("nested deeper than"), "{e}");
}

#[test]
fn oversized_text_is_rejected() {
    let text = format!("# {}\n", "x".repeat(mcpflow_config::MAX_FILE_BYTES));
    let e = one_err(&text);
    assert!(e.message.contains("the limit is"), "{e}");
}

#[test]
fn several_documents_are_rejected() {
    let e = one_err("version: \"1.0\"\n---\nversion: \"2.0\"\n");
    assert_eq!(e.message, "the file holds more than one YAML document");
}

#[test]
fn unknown_tags_are_rejected() {
    let e = one_err("version: !secret x\n");
    assert!(e.message.contains("!secret"), "{e}");
}

#[test]
fn empty_file_is_an_error() {
    let e = one_err("");
    assert_eq!(
        e.message,
        "the config must be a mapping, got nothing (null)"
    );
}

const SERVERS: &str = "\
version: \"1.0\"
server: {name: s, version: \"1\"}
mcpServers:
  local:
    command: \"${BIN_DIR}/server\"
    args: [\"--token\", \"${TOKEN}\", \"$${NOT_A_VAR}\"]
    cwd: \"${WORK:-/tmp}\"
    env:
      API_KEY: \"${TOKEN}\"
  remote:
    type: sse
    url: \"https://${HOST}/sse\"
    headers:
      Authorization: \"Bearer ${TOKEN}\"
";

fn env(name: &str) -> Option<String> {
    match name {
        "BIN_DIR" => Some("/opt/bin".into()),
        "TOKEN" => Some("hunter2".into()),
        "HOST" => Some("example.invalid".into()),
        _ => None,
    }
}

#[test]
fn variables_are_interpolated_in_server_settings() {
    let loaded = Loader::new()
        .env(env)
        .load_str(SERVERS, "env.yaml")
        .expect("loads");
    let servers = &loaded.config.mcp_servers;
    let Some(McpServer::Stdio(local)) = servers.get("local") else {
        panic!("local is stdio");
    };
    assert_eq!(local.command, "/opt/bin/server");
    assert_eq!(local.args, ["--token", "hunter2", "${NOT_A_VAR}"]);
    assert_eq!(local.cwd.as_deref(), Some("/tmp"));
    assert_eq!(local.env["API_KEY"], "hunter2");
    let Some(McpServer::Remote(remote)) = servers.get("remote") else {
        panic!("remote is remote");
    };
    assert_eq!(remote.url, "https://example.invalid/sse");
    assert_eq!(remote.headers["Authorization"], "Bearer hunter2");
}

#[test]
fn unset_variables_are_errors_that_never_show_values() {
    let only_token = |name: &str| (name == "TOKEN").then(|| "hunter2".to_owned());
    let errors = Loader::new()
        .env(only_token)
        .load_str(SERVERS, "env.yaml")
        .expect_err("BIN_DIR and HOST are unset");
    let found: Vec<(u32, u32, &str)> = errors
        .iter()
        .map(|e| (e.line, e.col, e.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                5,
                15,
                "environment variable \"BIN_DIR\" is not set (used in \"command\" in server \"local\")"
            ),
            (
                12,
                19,
                "environment variable \"HOST\" is not set (used in \"url\" in server \"remote\")"
            ),
        ]
    );
    let text = errors.to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("${BIN_DIR:-default}"), "{text}");
}

#[test]
fn variables_in_mcp_json_are_interpolated_and_located_there() {
    let graph = "version: \"1.0\"\nserver: {name: s, version: \"1\"}\n";
    let mcp = "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"run\", \"args\": [\"${MISSING}\"]}\n  }\n}\n";
    let e = Loader::new()
        .env(common::no_env)
        .mcp_json_str(mcp, "mcp.json")
        .load_str(graph, "graph.yaml")
        .expect_err("MISSING is unset");
    assert_eq!(e.len(), 1, "{e}");
    let e = &e.errors[0];
    assert_eq!((e.file.as_str(), e.line, e.col), ("mcp.json", 3, 39), "{e}");
}

#[test]
fn a_malformed_reference_is_an_error() {
    let e = err(
        "version: \"1.0\"\nserver: {name: s, version: \"1\"}\nmcpServers:\n  a:\n    command: \"${UNCLOSED\"\n",
    );
    assert_eq!(e.len(), 1, "{e}");
    assert!(e.errors[0].message.contains("not closed"), "{e}");
}
