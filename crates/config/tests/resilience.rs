//! The resilience extensions: node options, parallel, foreach and call, and what `validate`
//! says about their shapes.

mod common;

use common::{err, ok, one_err, with_nodes};
use mcpflow_config::{Node, ParallelMode, RetryOn};

#[test]
fn node_options_and_new_node_types_load() {
    let l = ok(&with_nodes(
        "      - {id: entry, type: entry, next: par}\n\
         \x20     - {id: par, type: parallel, mode: waitAll, branches: {a: a1, b: b1}, next: fe, timeoutMs: 500, onError: exit}\n\
         \x20     - {id: a1, type: mcp, server: fs, tool: t, next: fe, timeoutMs: 100, retry: {maxAttempts: 3, backoffMs: 5, retryOn: [timeout, toolError]}}\n\
         \x20     - {id: b1, type: transform, transform: {expr: '1'}, next: fe, optional: true}\n\
         \x20     - {id: fe, type: foreach, items: '[1,2]', concurrency: 2, body: c, next: exit}\n\
         \x20     - {id: c, type: call, tool: tool2, args: {x: {expr: '$.fe.item'}}, next: fe}\n\
         \x20     - {id: exit, type: exit}\n\
         \x20 - name: tool2\n    nodes:\n\
         \x20     - {id: entry, type: entry, next: exit}\n\
         \x20     - {id: exit, type: exit}\n",
    ));
    let nodes = &l.config.tools[0].nodes;
    let Node::Parallel(p) = &nodes[1] else {
        panic!("parallel")
    };
    assert_eq!(p.mode, Some(ParallelMode::WaitAll));
    assert_eq!(p.options.on_error.as_deref(), Some("exit"));
    let Node::Mcp(m) = &nodes[2] else {
        panic!("mcp")
    };
    let retry = m.options.retry.as_ref().unwrap();
    assert_eq!(retry.max_attempts, 3);
    assert!(retry.retries(RetryOn::ToolError) && !retry.retries(RetryOn::Transport));
    assert!(nodes[3].options().is_optional());
}

#[test]
fn unknown_keys_are_still_caught_next_to_node_options() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: exit, retyr: {maxAttempts: 2}}\n      - {id: exit, type: exit}\n",
    ));
    assert!(e.message.contains("unknown key \"retyr\""), "{e}");
    assert!(e.message.contains("did you mean \"retry\""), "{e}");
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: c}\n      - {id: c, type: mcp, server: fs, tool: t, next: exit, retry: {maxAttempts: 2, backof: 1}}\n      - {id: exit, type: exit}\n",
    ));
    assert!(e.message.contains("unknown key \"backof\""), "{e}");
}

#[test]
fn retry_on_a_node_that_cannot_be_retried_is_an_error() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: t}\n      - {id: t, type: transform, transform: {expr: '1'}, retry: {maxAttempts: 2}, next: exit}\n      - {id: exit, type: exit}\n",
    ));
    assert_eq!(e.pointer, "/tools/0/nodes/1/retry");
    assert!(
        e.message
            .contains("cannot be retried: expression errors are deterministic"),
        "{e}"
    );
}

#[test]
fn unknown_branch_targets_are_errors() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: par}\n      - {id: par, type: parallel, branches: {a: nowhere}, next: exit}\n      - {id: exit, type: exit}\n",
    ));
    assert_eq!(e.pointer, "/tools/0/nodes/1/branches/a");
    assert!(e.message.contains("\"nowhere\""), "{e}");
}

#[test]
fn a_branch_that_never_reaches_its_join_is_an_error() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: par}\n\
         \x20     - {id: par, type: parallel, branches: {a: a1}, next: join}\n\
         \x20     - {id: a1, type: transform, transform: {expr: '1'}, next: a1}\n\
         \x20     - {id: join, type: transform, transform: {expr: '1'}, next: exit}\n\
         \x20     - {id: exit, type: exit}\n",
    ));
    assert_eq!(e.pointer, "/tools/0/nodes/1/branches/a");
    assert!(e.message.contains("never reaches its join \"join\""), "{e}");
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: fe}\n\
         \x20     - {id: fe, type: foreach, items: '[1]', body: b, next: exit}\n\
         \x20     - {id: b, type: transform, transform: {expr: '1'}, next: exit}\n\
         \x20     - {id: exit, type: exit}\n",
    ));
    assert_eq!(e.pointer, "/tools/0/nodes/1/body");
    assert!(e.message.contains("runs into the exit node"), "{e}");
}

#[test]
fn call_cycles_and_unknown_called_tools_are_errors() {
    let cfg = "version: \"1.0\"\nserver: {name: t, version: \"1\"}\ntools:\n\
        \x20 - name: a\n    nodes:\n\
        \x20     - {id: entry, type: entry, next: c}\n\
        \x20     - {id: c, type: call, tool: b, next: exit}\n\
        \x20     - {id: exit, type: exit}\n\
        \x20 - name: b\n    nodes:\n\
        \x20     - {id: entry, type: entry, next: c}\n\
        \x20     - {id: c, type: call, tool: a, next: d}\n\
        \x20     - {id: d, type: call, tool: zz, next: exit}\n\
        \x20     - {id: exit, type: exit}\n";
    let e = err(cfg);
    let messages: Vec<&str> = e.errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(messages.len(), 3, "{e}");
    assert!(
        messages
            .iter()
            .any(|m| m.contains("call cycle: a -> b -> a")),
        "{e}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("call cycle: b -> a -> b")),
        "{e}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("calls tool \"zz\", which is not a tool of this config")),
        "{e}"
    );
}

#[test]
fn foreach_concurrency_is_bounded() {
    let e = one_err(&with_nodes(
        "      - {id: entry, type: entry, next: fe}\n\
         \x20     - {id: fe, type: foreach, items: '[1]', concurrency: 65, body: fe, next: exit}\n\
         \x20     - {id: exit, type: exit}\n",
    ));
    assert!(e.message.contains("concurrency"), "{e}");
}
