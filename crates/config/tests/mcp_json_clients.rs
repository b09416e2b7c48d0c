//! `-m mcp.json` as MCP clients write it: Claude Desktop and Cursor (`mcpServers`, `disabled`,
//! `type: "http"`, URL-only entries) and VS Code (`servers`). What no client writes stays an
//! error, and no entry is dropped without a word.

mod common;

use mcpflow_config::model::{McpServer, RemoteKind};
use mcpflow_config::{ConfigErrors, Loaded, Loader};

const GRAPH: &str = "version: \"1.0\"\nserver: {name: s, version: \"1\"}\n";

fn merged(mcp: &str) -> Loaded {
    Loader::new()
        .env(common::no_env)
        .mcp_json_str(mcp, "mcp.json")
        .load_str(GRAPH, "graph.yaml")
        .unwrap_or_else(|e| panic!("expected {mcp} to merge, got:\n{e}"))
}

fn refused(mcp: &str) -> ConfigErrors {
    match Loader::new()
        .env(common::no_env)
        .mcp_json_str(mcp, "mcp.json")
        .load_str(GRAPH, "graph.yaml")
    {
        Ok(l) => panic!(
            "expected {mcp} to be refused, got {:?}",
            l.config.mcp_servers
        ),
        Err(e) => e,
    }
}

fn remote(loaded: &Loaded, name: &str) -> (RemoteKind, String) {
    match loaded.config.mcp_servers.get(name) {
        Some(McpServer::Remote(r)) => (r.kind, r.url.clone()),
        other => panic!("{name} should be remote, got {other:?}"),
    }
}

#[test]
fn a_disabled_entry_is_skipped_and_said_so_in_one_line() {
    let mcp = r#"{
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
    "old": {"command": "old-server", "disabled": true},
    "older": {"command": "older-server", "disabled": true},
    "kept": {"command": "kept-server", "disabled": false, "autoApprove": ["read"], "alwaysAllow": []}
  }
}"#;
    let loaded = merged(mcp);
    let names: Vec<&String> = loaded.config.mcp_servers.keys().collect();
    assert_eq!(names, ["fs", "kept"]);
    let lines: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let w = &loaded.warnings[0];
    assert_eq!((w.file.as_str(), w.line), ("mcp.json", 4), "{w}");
    assert!(
        w.message.contains("\"old\", \"older\"") && w.message.contains("disabled"),
        "{w}"
    );
    assert!(!lines[0].contains('\n'), "one line: {}", lines[0]);
}

#[test]
fn http_and_url_only_entries_are_streamable_http_and_sse_stays_sse() {
    let mcp = r#"{
  "mcpServers": {
    "claude_code": {"type": "http", "url": "https://a.example/mcp", "headers": {"Authorization": "Bearer x"}},
    "cursor": {"url": "https://b.example/mcp"},
    "legacy": {"type": "sse", "url": "https://c.example/sse"},
    "local": {"type": "stdio", "command": "srv", "args": ["--x"], "env": {"A": "1"}}
  }
}"#;
    let loaded = merged(mcp);
    assert_eq!(
        remote(&loaded, "claude_code"),
        (RemoteKind::StreamableHttp, "https://a.example/mcp".into())
    );
    assert_eq!(
        remote(&loaded, "cursor"),
        (RemoteKind::StreamableHttp, "https://b.example/mcp".into())
    );
    assert_eq!(
        remote(&loaded, "legacy"),
        (RemoteKind::Sse, "https://c.example/sse".into())
    );
    assert!(matches!(
        loaded.config.mcp_servers.get("local"),
        Some(McpServer::Stdio(_))
    ));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn vs_code_servers_are_read_and_located_in_their_file() {
    let mcp = r#"{
  "inputs": [],
  "servers": {
    "github": {"type": "http", "url": "https://api.example/mcp/"},
    "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
    "off": {"type": "stdio", "command": "x", "disabled": true}
  }
}"#;
    let loaded = merged(mcp);
    let names: Vec<&String> = loaded.config.mcp_servers.keys().collect();
    assert_eq!(names, ["github", "memory"]);
    assert_eq!(remote(&loaded, "github").0, RemoteKind::StreamableHttp);
    let pos = loaded.locate("/mcpServers/memory/args/1").expect("located");
    assert_eq!((pos.file.as_str(), pos.line), ("mcp.json", 5), "{pos}");
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].message.contains("\"off\""));
}

#[test]
fn what_no_client_writes_is_still_refused_where_it_is_written() {
    let e = refused(r#"{"mcpServers": {"x": {"command": "srv", "enabled": true}}}"#);
    assert_eq!(e.len(), 1, "{e}");
    assert!(e.errors[0].message.contains("enabled"), "{e}");
    assert_eq!(e.errors[0].file, "mcp.json");

    let e = refused(r#"{"mcpServers": {"x": {"type": "websocket", "url": "ws://a"}}}"#);
    assert_eq!(e.errors[0].file, "mcp.json", "{e}");

    let e = refused(r#"{"mcpServers": {"x": {"command": "srv", "disabled": "yes"}}}"#);
    assert_eq!(e.len(), 1, "{e}");
    assert!(e.errors[0].message.contains("true or false"), "{e}");

    let e = refused(r#"{"servers": ["a"]}"#);
    assert!(e.errors[0].message.contains("\"servers\""), "{e}");

    // The same name under both lists would hide one of them: an error, not a choice.
    let e =
        refused(r#"{"mcpServers": {"x": {"command": "a"}}, "servers": {"x": {"command": "b"}}}"#);
    assert!(e.errors[0].message.contains("defined twice"), "{e}");
}
