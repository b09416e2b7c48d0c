//! One test per kind of problem: each is found, placed at the right line and column, and
//! explained.

mod common;

use common::{err, ok, one_err, with_nodes};

const ENTRY_EXIT: &str =
    "      - {id: entry, type: entry, next: exit}\n      - {id: exit, type: exit}\n";

#[test]
fn malformed_yaml_reports_the_parser_error_with_position() {
    let e = one_err("version: \"1.0\"\nserver:\n  name: a\n   version: 1\n");
    assert_eq!((e.line, e.col), (4, 11));
    assert!(e.message.starts_with("invalid YAML: "), "{e}");
    let e = one_err("tools: [1, 2\nserver: x\n");
    assert_eq!(e.line, 2);
}

#[test]
fn unknown_key_is_placed_on_the_key_with_a_suggestion() {
    let e = one_err(&with_nodes(
        "      - id: entry\n        type: entry\n        nxt: exit\n      - {id: exit, type: exit}\n",
    ));
    assert_eq!((e.line, e.col), (13, 9));
    assert_eq!(
        e.message,
        "unknown key \"nxt\" in node \"entry\" of tool \"tool\" (did you mean \"next\"?)"
    );
    // The node options (mcpflow extensions) are valid on every node.
    assert_eq!(
        e.hint.as_deref(),
        Some("valid keys here: type, id, next, timeoutMs, retry, onError, optional")
    );
    assert_eq!(e.pointer, "/tools/0/nodes/0/nxt");
}

#[test]
fn unknown_key_far_from_any_is_listed_with_the_valid_ones() {
    let e = one_err(&format!(
        "version: \"1.0\"\nserver: {{name: a, version: \"1\"}}\ncolour: blue\ntools:\n  - name: t\n    nodes:\n{ENTRY_EXIT}"
    ));
    assert_eq!((e.line, e.col), (3, 1));
    assert_eq!(e.message, "unknown key \"colour\" at the top level");
    assert!(e.hint.as_deref().is_some_and(|h| h.contains("mcpServers")));
}

#[test]
fn missing_required_key() {
    let e = one_err(&with_nodes(&format!(
        "{ENTRY_EXIT}      - id: call\n        type: mcp\n        tool: x\n        next: exit\n"
    )));
    assert_eq!(
        e.message,
        "missing required key \"server\" in node \"call\" of tool \"tool\""
    );
    assert_eq!(e.line, 13);
}

#[test]
fn unknown_node_type_suggests_the_close_one() {
    let e = one_err(&with_nodes(&format!(
        "{ENTRY_EXIT}      - id: t\n        type: transfrom\n        next: exit\n"
    )));
    assert_eq!((e.line, e.col), (14, 15));
    assert!(
        e.message
            .contains("unknown node type \"transfrom\" in node \"t\" of tool \"tool\" (did you mean \"transform\"?)"),
        "{e}"
    );
    assert!(e.hint.as_deref().is_some_and(|h| h.contains("switch")));
}

#[test]
fn wrong_value_types() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: [exit]}\n      - {id: exit, type: exit}\n",
    ));
    assert_eq!(
        e.message,
        "\"next\" must be a string, got a list in node \"entry\" of tool \"tool\""
    );
    let e = one_err(&format!(
        "version: 1.0\nserver: {{name: a, version: \"1\"}}\ntools:\n  - name: t\n    nodes:\n{ENTRY_EXIT}"
    ));
    assert_eq!(e.message, "\"version\" must be a string, got 1.0");
    assert_eq!(
        e.hint.as_deref(),
        Some("quote the value to make it a string")
    );
}

#[test]
fn empty_ids_are_errors() {
    let e = err(&with_nodes(
        "      - {id: \"\", type: entry, next: exit}\n      - {id: exit, type: exit}\n",
    ));
    assert_eq!(
        e.errors[0].message,
        "\"id\" must not be empty in node #1 of tool \"tool\""
    );
}

#[test]
fn dangling_next() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: exiit}\n      - {id: exit, type: exit}\n",
    ));
    assert_eq!((e.line, e.col), (11, 40));
    assert_eq!(
        e.message,
        "node \"entry\" goes to \"exiit\", which is not a node of tool \"tool\" (did you mean \"exit\"?)"
    );
    assert_eq!(
        e.hint.as_deref(),
        Some("the nodes of this tool are: entry, exit")
    );
}

#[test]
fn dangling_next_in_a_switch_condition() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: s}\n      - id: s\n        type: switch\n        conditions:\n          - rule: {\"==\": [1, 1]}\n            next: nowhere\n        next: exit\n      - {id: exit, type: exit}\n",
    ));
    assert_eq!(e.pointer, "/tools/0/nodes/1/conditions/0/next");
    assert_eq!(e.line, 16);
}

#[test]
fn unreachable_exit() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: loop}\n      - id: loop\n        type: transform\n        transform: {expr: \"1\"}\n        next: loop\n      - {id: exit, type: exit}\n",
    ));
    assert_eq!(
        e.message,
        "the exit node \"exit\" cannot be reached from the entry node \"entry\""
    );
    assert_eq!(e.line, 16);
}

#[test]
fn unreachable_nodes_are_warnings() {
    let loaded = ok(&with_nodes(&format!(
        "{ENTRY_EXIT}      - id: orphan\n        type: transform\n        transform: {{expr: \"1\"}}\n        next: exit\n"
    )));
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    let w = &loaded.warnings[0];
    assert_eq!(w.line, 13);
    assert_eq!(
        w.message,
        "node \"orphan\" cannot be reached from the entry node \"entry\" and never runs"
    );
}

#[test]
fn missing_entry() {
    let e = one_err(&with_nodes("      - {id: exit, type: exit}\n"));
    assert_eq!(e.message, "tool \"tool\" has no entry node");
    assert_eq!(e.pointer, "/tools/0/nodes");
    assert_eq!(e.line, 11);
    assert!(e.hint.is_some());
}

#[test]
fn missing_exit() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: entry}\n",
    ));
    assert_eq!(e.message, "tool \"tool\" has no exit node");
}

#[test]
fn two_exits() {
    let e = one_err(&with_nodes(&format!(
        "{ENTRY_EXIT}      - {{id: exit2, type: exit}}\n"
    )));
    assert_eq!(
        e.message,
        "tool \"tool\" has more than one exit node: \"exit\" and \"exit2\""
    );
    assert_eq!((e.line, e.col), (13, 27));
    assert_eq!(
        e.hint.as_deref(),
        Some("a tool has exactly one exit node; the first is at line 12")
    );
}

#[test]
fn duplicate_node_id() {
    let e = one_err(&with_nodes(&format!(
        "{ENTRY_EXIT}      - id: exit\n        type: transform\n        transform: {{expr: \"1\"}}\n        next: exit\n"
    )));
    assert_eq!(e.message, "duplicate node id \"exit\" in tool \"tool\"");
    assert_eq!((e.line, e.col), (13, 13));
    assert!(e.hint.as_deref().is_some_and(|h| h.contains("line 12")));
}

#[test]
fn duplicate_yaml_keys() {
    let e = err(
        "version: \"1.0\"\nserver: {name: a, version: \"1\"}\nversion: \"2\"\ntools: []\ntools: []\n",
    );
    let found: Vec<(u32, &str)> = e.iter().map(|e| (e.line, e.message.as_str())).collect();
    assert_eq!(
        found,
        [
            (3, "duplicate key \"version\""),
            (5, "duplicate key \"tools\"")
        ]
    );
}

#[test]
fn duplicate_and_invalid_tool_names() {
    let text = format!(
        "version: \"1.0\"\nserver: {{name: a, version: \"1\"}}\ntools:\n  - name: t\n    nodes:\n{ENTRY_EXIT}  - name: t\n    nodes:\n{ENTRY_EXIT}  - name: \"has space\"\n    nodes:\n{ENTRY_EXIT}"
    );
    let e = err(&text);
    let found: Vec<(u32, &str)> = e.iter().map(|e| (e.line, e.message.as_str())).collect();
    assert_eq!(
        found,
        [
            (8, "duplicate tool name \"t\""),
            (12, "invalid tool name \"has space\": it contains ' '"),
        ]
    );
}

#[test]
fn missing_server() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: call}\n      - {id: call, type: mcp, server: fss, tool: x, next: exit}\n      - {id: exit, type: exit}\n",
    ));
    assert_eq!(
        e.message,
        "node \"call\" calls server \"fss\", which is not in mcpServers (did you mean \"fs\"?)"
    );
    assert_eq!((e.line, e.col), (12, 39));
    assert_eq!(e.hint.as_deref(), Some("servers defined: fs"));
}

#[test]
fn bad_limits() {
    let header = "version: \"1.0\"\nserver: {name: a, version: \"1\"}\nexecutionLimits:\n";
    let e = err(&format!(
        "{header}  maxNodeExecutions: 0\n  maxExecutionTimeMs: -5\n"
    ));
    let found: Vec<(u32, u32, &str)> = e
        .iter()
        .map(|e| (e.line, e.col, e.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                4,
                22,
                "\"maxNodeExecutions\" must be a positive integer, got 0"
            ),
            (
                5,
                23,
                "\"maxExecutionTimeMs\" must be a positive integer, got -5"
            ),
        ]
    );
    let e = one_err(&format!("{header}  maxNodeExecutions: 1.5\n"));
    assert_eq!(
        e.message,
        "\"maxNodeExecutions\" must be a positive integer, got 1.5"
    );
    let e = one_err(&format!("{header}  maxNodeExecutions: \"10\"\n"));
    assert_eq!(
        e.message,
        "\"maxNodeExecutions\" must be a positive integer, got the string \"10\""
    );
    // A float with no fraction is an integer, as in JavaScript.
    let loaded = ok(&format!("{header}  maxNodeExecutions: 10.0\n"));
    let limits = loaded.config.execution_limits.expect("limits");
    assert_eq!(limits.max_nodes(), 10);
    assert_eq!(limits.max_time_ms(), 300_000);
}

#[test]
fn compile_errors_are_placed_at_their_pointer_inside_the_value() {
    use mcpflow_config::{CompileError, Loader, Within};
    let text = with_nodes(
        "      - {id: entry, type: entry, next: t}\n      - id: t\n        type: transform\n        transform:\n          expr: '$foo('\n        next: exit\n      - {id: exit, type: exit}\n",
    );
    let draft = Loader::new()
        .env(common::no_env)
        .read_str(&text, "test.yaml")
        .expect("parses");
    assert!(draft.config().is_some(), "the loader finds nothing wrong");
    let e = draft
        .finish(vec![
            CompileError::new("/tools/0/nodes/1/transform/expr", "bad").within(Within::Offset(5)),
            CompileError::new("/tools/0/nodes/1/next", "also bad").hint("a hint"),
        ])
        .expect_err("compile errors fail the config");
    let found: Vec<(u32, u32, &str)> = e
        .iter()
        .map(|e| (e.line, e.col, e.message.as_str()))
        .collect();
    // `'$foo(` starts at column 17: offset 5 is one past the quote and five characters.
    assert_eq!(found, [(15, 23, "bad"), (16, 15, "also bad")], "{e}");
    assert_eq!(e.errors[1].hint.as_deref(), Some("a hint"));
}

#[test]
fn advice_about_a_schema_the_compiler_rejected_is_dropped() {
    use mcpflow_config::{CompileError, Loader};
    let text = format!(
        "version: \"1.0\"\nserver: {{name: a, version: \"1\"}}\ntools:\n  - name: t\n    inputSchema: {{type: 5}}\n    nodes:\n{ENTRY_EXIT}"
    );
    let read = || Loader::new().read_str(&text, "test.yaml").expect("parses");
    let loaded = read()
        .finish(Vec::new())
        .expect("nothing compiled, nothing wrong");
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0]
            .message
            .contains("does not say `type: object`")
    );
    let e = read()
        .finish(vec![CompileError::new(
            "/tools/0/inputSchema/type",
            "not a schema",
        )])
        .expect_err("a compile error");
    assert!(e.warnings.is_empty(), "{e}");
}
