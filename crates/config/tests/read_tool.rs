//! `Loader::read_tool`: one tool definition read as a tool of an already loaded config, with
//! every check of a whole config, positions in the submitted text and pointers into the
//! config.

mod common;

use std::path::Path;

use common::{no_env, ok};
use mcpflow_config::Loader;

const CONFIG: &str = r#"
version: "1.0"
server: { name: "t", version: "1" }
mcpServers:
  files: { command: "npx", args: ["-y", "server-filesystem", "${HOME:-/}"] }
tools:
  - name: double
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: calc }
      - { id: calc, type: transform, transform: { expr: "entry.n * 2" }, next: exit }
      - { id: exit, type: exit }
"#;

#[test]
fn a_new_tool_is_added_after_the_others_and_a_namesake_replaces_its_tool() {
    let loaded = ok(CONFIG);
    let fresh = "name: triple\nnodes:\n  - {id: entry, type: entry, next: call}\n  - {id: call, type: call, tool: double, next: exit}\n  - {id: exit, type: exit}\n";
    let (draft, index) = Loader::new()
        .env(no_env)
        .read_tool(&loaded.config, Path::new("."), fresh, "submitted")
        .expect("it parses");
    assert_eq!(index, 1);
    let config = draft.config().expect("no problem found");
    assert_eq!(config.tools.len(), 2);
    // The servers were interpolated once, at load: `${…}` is not read again.
    assert_eq!(config.mcp_servers, loaded.config.mcp_servers);

    let replacement = "name: double\nnodes:\n  - {id: entry, type: entry, next: exit}\n  - {id: exit, type: exit}\n";
    let (draft, index) = Loader::new()
        .read_tool(&loaded.config, Path::new("."), replacement, "submitted")
        .expect("it parses");
    assert_eq!(index, 0);
    assert_eq!(draft.config().map(|c| c.tools[0].nodes.len()), Some(2));
}

#[test]
fn problems_point_into_the_submitted_text() {
    let loaded = ok(CONFIG);
    let broken = "name: broken\nnodes:\n  - {id: entry, type: entry, next: calc}\n  - id: calc\n    type: mcp\n    server: fils\n    tool: read\n    next: exti\n  - {id: exit, type: exit}\n";
    let (draft, index) = Loader::new()
        .read_tool(&loaded.config, Path::new("."), broken, "submitted")
        .expect("it parses");
    let errors = draft.finish(Vec::new()).expect_err("two problems");
    let server = errors
        .iter()
        .find(|e| e.pointer == format!("/tools/{index}/nodes/1/server"))
        .unwrap_or_else(|| panic!("no error at the server: {errors}"));
    assert_eq!(
        (server.file.as_str(), server.line),
        ("submitted", 6),
        "{server}"
    );
    assert!(
        server.message.contains("files")
            || server.hint.as_deref().is_some_and(|h| h.contains("files")),
        "{server}"
    );
    let next = errors
        .iter()
        .find(|e| e.pointer == format!("/tools/{index}/nodes/1/next"))
        .unwrap_or_else(|| panic!("no error at next: {errors}"));
    assert_eq!(next.line, 8, "{next}");

    // Text that does not parse is one error, at its place.
    let errors = Loader::new()
        .read_tool(&loaded.config, Path::new("."), "name: [x", "submitted")
        .expect_err("YAML syntax");
    assert_eq!(errors.errors[0].file, "submitted");
}
