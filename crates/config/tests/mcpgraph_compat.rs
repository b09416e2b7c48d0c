//! mcpGraph's published files load unchanged.

mod common;

use std::path::Path;

use mcpflow_config::{McpServer, Node, RemoteKind, load};

use common::mcpgraph;

fn node_counts(path: &Path) -> Vec<(String, usize)> {
    let loaded = load(path, None).unwrap_or_else(|e| panic!("{}:\n{e}", path.display()));
    assert!(
        loaded.warnings.is_empty(),
        "unexpected warnings: {:?}",
        loaded.warnings
    );
    loaded
        .config
        .tools
        .iter()
        .map(|t| (t.name.clone(), t.nodes.len()))
        .collect()
}

#[test]
fn the_four_examples_load() {
    let ex = mcpgraph().join("examples");
    assert_eq!(
        node_counts(&ex.join("file_utils.yaml")),
        [("count_files".into(), 4), ("sum_file_sizes".into(), 4)]
    );
    assert_eq!(
        node_counts(&ex.join("loop_example.yaml")),
        [("sum_to_n".into(), 5)]
    );
    assert_eq!(
        node_counts(&ex.join("switch_example.yaml")),
        [("test_switch".into(), 6)]
    );
    assert_eq!(
        node_counts(&ex.join("test_minimal.yaml")),
        [("test_tool".into(), 2)]
    );
}

#[test]
fn example_details_survive_loading() {
    let loaded = load(&mcpgraph().join("examples/file_utils.yaml"), None).expect("loads");
    let c = &loaded.config;
    assert_eq!(c.version, "1.0");
    assert_eq!(c.server.display_title(), "File utilities");
    let Some(McpServer::Stdio(fs)) = c.mcp_servers.get("filesystem") else {
        panic!("filesystem is a stdio server: {:?}", c.mcp_servers);
    };
    assert_eq!(fs.command, "npx");
    assert_eq!(fs.args.len(), 3);
    let Node::Mcp(list) = &c.tools[0].nodes[1] else {
        panic!("second node is an mcp node");
    };
    assert_eq!(
        list.args,
        serde_json::json!({"path": {"expr": "$.entry.directory"}})
    );
    assert_eq!(
        loaded.base_dir,
        std::path::absolute(mcpgraph().join("examples")).expect("absolute")
    );

    let minimal = load(&mcpgraph().join("examples/test_minimal.yaml"), None).expect("loads");
    assert_eq!(minimal.config.server.title, None);
    assert_eq!(minimal.config.server.display_title(), "testMinimal");
    assert_eq!(minimal.config.server.instructions, None);
    assert!(minimal.config.execution_limits.is_none());
}

#[test]
fn positions_of_json_pointers() {
    let path = mcpgraph().join("examples/switch_example.yaml");
    let loaded = load(&path, None).expect("loads");
    let pos = loaded
        .locate("/tools/0/nodes/2")
        .expect("node 2 is in the file");
    assert_eq!((pos.line, pos.col), (51, 9)); // `- id: "high_path"`
    assert!(pos.file.ends_with("switch_example.yaml"));
    assert_eq!(pos.to_string(), format!("{}:51:9", path.display()));
    let cond = loaded
        .locate("/tools/0/nodes/1/conditions/1/next")
        .expect("a condition's next");
    assert_eq!((cond.line, cond.col), (47, 19));
    // A defaulted value points at its nearest written ancestor.
    let dflt = loaded.locate("/tools/0/nodes/0/args").expect("falls back");
    assert_eq!((dflt.line, dflt.col), (30, 9));
    let node = loaded.locate_node("test_switch", "exit").expect("exit");
    assert_eq!(node.line, 72);
    assert!(loaded.locate_node("test_switch", "nope").is_none());
}

#[test]
fn a_file_without_tools_loads_with_none() {
    let loaded = load(&mcpgraph().join("testClaude/graph.yaml"), None).expect("loads");
    assert!(loaded.config.tools.is_empty());
    assert_eq!(loaded.config.server.name, "utils");
    assert_eq!(loaded.config.server.version, "1.0.0");

    let with = load(
        &mcpgraph().join("testClaude/graph.yaml"),
        Some(&mcpgraph().join("testClaude/tools.json")),
    )
    .expect("loads with its tools.json");
    let names: Vec<&String> = with.config.mcp_servers.keys().collect();
    assert_eq!(names, ["fetch", "filesystem"]);
}

#[test]
fn mcp_json_merge_the_graph_wins() {
    let files = mcpgraph().join("tests/files");
    let loaded = load(
        &files.join("test-graph-merge.yaml"),
        Some(&files.join("test-mcp-merge.json")),
    )
    .expect("merges");
    let servers = &loaded.config.mcp_servers;
    let names: Vec<&String> = servers.keys().collect();
    assert_eq!(names, ["sharedServer", "graphOnlyServer", "mcpOnlyServer"]);
    let Some(McpServer::Stdio(shared)) = servers.get("sharedServer") else {
        panic!("sharedServer is stdio");
    };
    assert_eq!(shared.args, ["from-graph"]);
    // A merged server's position is in the mcp.json it came from.
    let pos = loaded
        .locate("/mcpServers/mcpOnlyServer/args/0")
        .expect("located");
    assert!(pos.file.ends_with("test-mcp-merge.json"), "{pos}");
    assert_eq!(pos.line, 9);
    let graph_pos = loaded.locate("/mcpServers/sharedServer").expect("located");
    assert!(
        graph_pos.file.ends_with("test-graph-merge.yaml"),
        "{graph_pos}"
    );
}

#[test]
fn mcp_json_fixtures_that_are_valid() {
    let files = mcpgraph().join("tests/files");
    let graph = files.join("test-graph-with-mcp.yaml");
    let valid = load(&graph, Some(&files.join("test-mcp-valid.json"))).expect("valid");
    let names: Vec<&String> = valid.config.mcp_servers.keys().collect();
    assert_eq!(names, ["testServer", "httpServer"]);
    let Some(McpServer::Remote(http)) = valid.config.mcp_servers.get("httpServer") else {
        panic!("httpServer is remote");
    };
    assert_eq!(http.kind, RemoteKind::StreamableHttp);
    assert_eq!(http.headers["Authorization"], "Bearer token");

    for empty in ["test-mcp-empty.json", "test-mcp-no-servers.json"] {
        let loaded = load(&graph, Some(&files.join(empty))).expect(empty);
        assert!(loaded.config.mcp_servers.is_empty(), "{empty}");
    }
}

#[test]
fn mcp_json_with_a_server_without_command_is_an_error_in_that_file() {
    let files = mcpgraph().join("tests/files");
    let errors = load(
        &files.join("test-graph-with-mcp.yaml"),
        Some(&files.join("test-mcp-invalid.json")),
    )
    .expect_err("a stdio server needs a command");
    assert_eq!(errors.len(), 1, "{errors}");
    let e = &errors.errors[0];
    assert!(e.file.ends_with("test-mcp-invalid.json"), "{e}");
    assert_eq!(e.line, 3);
    assert_eq!(e.pointer, "/mcpServers/invalidServer");
    assert_eq!(
        e.message,
        "missing required key \"command\" in server \"invalidServer\""
    );
}

#[test]
fn a_missing_mcp_json_is_an_error_naming_it() {
    let files = mcpgraph().join("tests/files");
    let errors = load(
        &files.join("test-graph-with-mcp.yaml"),
        Some(&files.join("no-such-mcp.json")),
    )
    .expect_err("missing file");
    assert!(errors.errors[0].file.ends_with("no-such-mcp.json"));
    assert!(errors.to_string().contains("cannot read the file"));
}
