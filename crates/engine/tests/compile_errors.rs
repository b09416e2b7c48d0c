//! Errors found by compiling (JSONata, JSON Logic, JSON Schema): the engine compiles, the
//! config loader places its errors, and both kinds are reported at once with their lines and
//! columns, as `mcpflow validate` shows them.

mod common;

use mcpflow_config::{ConfigError, ConfigErrors};

const ENTRY_EXIT: &str =
    "      - {id: entry, type: entry, next: exit}\n      - {id: exit, type: exit}\n";

fn err(text: &str) -> ConfigErrors {
    common::rejected_str(text, "test.yaml")
}

fn one_err(text: &str) -> ConfigError {
    let e = err(text);
    assert_eq!(e.errors.len(), 1, "expected one error, got:\n{e}");
    e.errors.into_iter().next().expect("one error")
}

/// A config made of a header and the given tool nodes (YAML indented for `nodes:`).
fn with_nodes(nodes: &str) -> String {
    format!(
        "version: \"1.0\"\n\
         server:\n  name: t\n  version: \"1\"\n\
         mcpServers:\n  fs:\n    command: echo\n\
         tools:\n  - name: tool\n    nodes:\n{nodes}"
    )
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
