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
fn bad_jsonata_is_placed_inside_the_expression() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: t}\n      - id: t\n        type: transform\n        transform:\n          expr: '$foo('\n        next: exit\n      - {id: exit, type: exit}\n",
    ));
    assert!(
        e.message
            .starts_with("invalid JSONata expression in node \"t\": "),
        "{e}"
    );
    assert!(e.message.ends_with("(S0203)"), "{e}");
    assert_eq!(e.pointer, "/tools/0/nodes/1/transform/expr");
    // `'$foo(` starts at column 17; the parser stops at the end of the text.
    assert_eq!(e.line, 15);
    assert!(e.col > 17 && e.col <= 23, "{e}");
}

#[test]
fn bad_jsonata_in_a_block_scalar_is_placed_on_its_line() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: t}\n      - id: t\n        type: transform\n        transform:\n          expr: |\n            (\n              $x := 1;\n              $x +\n            )\n        next: exit\n      - {id: exit, type: exit}\n",
    ));
    // The `)` is at line 19, column 13; the parser reports just after it.
    assert_eq!((e.line, e.col), (19, 14), "{e}");
}

#[test]
fn bad_expressions_in_mcp_args_and_switch_rules() {
    let e = err(&with_nodes(
        "      - {id: entry, type: entry, next: call}\n      - id: call\n        type: mcp\n        server: fs\n        tool: x\n        args:\n          literal: \"$.not.checked(\"\n          nested: [{expr: \"$.entry.x +\"}]\n        next: s\n      - id: s\n        type: switch\n        conditions:\n          - rule: {\">\": [{var: \"entry.(\"}, 1]}\n            next: exit\n          - rule: {frob: [1]}\n            next: exit\n        next: exit\n      - {id: exit, type: exit}\n",
    ));
    let found: Vec<(u32, &str)> = e.iter().map(|e| (e.line, e.pointer.as_str())).collect();
    assert_eq!(
        found,
        [
            (18, "/tools/0/nodes/1/args/nested/0/expr"),
            (23, "/tools/0/nodes/2/conditions/0/rule/>/0/var"),
            (25, "/tools/0/nodes/2/conditions/1/rule"),
        ],
        "{e}"
    );
    assert!(e.errors[2].message.contains("frob"), "{e}");
}

#[test]
fn invalid_tool_schemas() {
    let e = err(&format!(
        "version: \"1.0\"\nserver: {{name: a, version: \"1\"}}\ntools:\n  - name: t\n    inputSchema: {{type: 5}}\n    outputSchema: [1]\n    nodes:\n{ENTRY_EXIT}"
    ));
    let found: Vec<u32> = e.iter().map(|e| e.line).collect();
    assert_eq!(found, [5, 6], "{e}");
    assert!(
        e.errors[0].message.contains("not a valid JSON Schema"),
        "{e}"
    );
    assert!(
        e.errors[1].message.contains("must be a JSON Schema object"),
        "{e}"
    );
}

#[test]
fn several_errors_at_once_with_their_lines() {
    let text = "\
version: \"1.0\"
server:
  name: many
  version: \"1\"
  titel: Many
executionLimits:
  maxNodeExecutions: 0
mcpServers:
  api:
    type: http
    url: https://example.invalid/mcp
tools:
  - name: first
    nodes:
      - id: entry
        type: entry
        next: middle
      - id: middle
        type: transform
        transform:
          expr: '{ \"a\": }'
        next: ext
      - id: exit
        type: exit
  - name: second
    nodes:
      - id: entry
        type: entry
        next: call
      - id: call
        type: mcp
        server: nope
        tool: x
        next: exit
";
    let e = err(text);
    let found: Vec<(u32, &str)> = e.iter().map(|e| (e.line, e.pointer.as_str())).collect();
    assert_eq!(
        found,
        [
            (5, "/server/titel"),
            (7, "/executionLimits/maxNodeExecutions"),
            (10, "/mcpServers/api/type"),
            (21, "/tools/0/nodes/1/transform/expr"),
            (22, "/tools/0/nodes/1/next"),
            (27, "/tools/1/nodes"),
            (32, "/tools/1/nodes/1/server"),
            (34, "/tools/1/nodes/1/next"),
        ],
        "{e}"
    );
    let text = e.to_string();
    assert!(text.ends_with("\n8 errors"), "{text}");
    assert!(
        text.contains(
            "test.yaml:5:3: unknown key \"titel\" in \"server\" (did you mean \"title\"?)\n  hint: "
        ),
        "{text}"
    );
    assert!(
        text.contains("test.yaml:10:11: unknown server type \"http\" in server \"api\" (did you mean \"streamableHttp\"?)"),
        "{text}"
    );
}
