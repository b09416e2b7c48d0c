//! mcpGraph 0.1.23's format, as `npx mcpgraph` installs it: the repo's own benchmark configs
//! written for it load with its meaning and a warning naming the version and the fix, and
//! `migrate` rewrites them, comments kept, into files that load as their current-format twins.

use std::path::PathBuf;

use mcpflow_config::{Loaded, Loader, migrate};

mod common;

fn bench(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/configs")
        .join(name)
}

fn load_file(name: &str) -> Loaded {
    Loader::new()
        .env(common::no_env)
        .load(&bench(name))
        .unwrap_or_else(|e| panic!("{name} loads:\n{e}"))
}

fn load_text(text: &str) -> Loaded {
    Loader::new()
        .env(common::no_env)
        .load_str(text, "migrated.yaml")
        .unwrap_or_else(|e| panic!("the migrated text loads:\n{e}\n{text}"))
}

#[test]
fn a_0_1_23_switch_runs_with_its_meaning_and_says_how_to_migrate() {
    let old = load_file("loop_big_mcpgraph.yaml");
    let current = load_file("loop_big.yaml");
    assert_eq!(old.config, current.config, "the same graph once read");
    assert_eq!(old.warnings.len(), 1, "{:?}", old.warnings);
    let w = &old.warnings[0];
    assert!(w.message.contains("mcpGraph 0.1.23"), "{w}");
    assert!(
        w.hint
            .as_deref()
            .unwrap_or_default()
            .contains("mcpflow migrate"),
        "{w}"
    );
    // At the first `target:` of the file.
    assert_eq!(w.line, 68, "{w}");
    assert!(current.warnings.is_empty(), "{:?}", current.warnings);
}

#[test]
fn migrate_rewrites_a_0_1_23_switch_keeping_comments() {
    let text = std::fs::read_to_string(bench("loop_big_mcpgraph.yaml")).expect("read");
    let migrated = migrate(&text, "loop_big_mcpgraph.yaml").expect("migrates");
    assert_eq!(migrated.changes.len(), 2, "{:?}", migrated.changes);
    let loaded = load_text(&migrated.text);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.config, load_file("loop_big.yaml").config);
    // Only the two spellings changed: every comment is still there, the default's included.
    for line in text.lines().filter(|l| l.trim_start().starts_with('#')) {
        assert!(migrated.text.contains(line), "lost comment {line:?}");
    }
    assert!(
        migrated
            .text
            .contains("        next: \"exit_sum\"  # Default: exit when counter >= target\n"),
        "{}",
        migrated.text
    );
    assert!(!migrated.text.contains("target: \""), "{}", migrated.text);
    // Migrating again changes nothing.
    let again = migrate(&migrated.text, "again.yaml").expect("migrates");
    assert!(again.changes.is_empty(), "{:?}", again.changes);
    assert_eq!(again.text, migrated.text);
}

#[test]
fn a_dollar_argument_alone_is_sent_as_written_with_a_warning() {
    let old = load_file("echo_graph_mcpgraph.yaml");
    let args = serde_json::to_value(&old.config.tools[0].nodes[1]).expect("json");
    assert_eq!(
        args["args"]["x"], "$.entry.x",
        "0.1.32's meaning: a literal"
    );
    assert_eq!(old.warnings.len(), 1, "{:?}", old.warnings);
    let w = &old.warnings[0];
    assert!(w.message.contains("0.1.23"), "{w}");
    assert!(
        w.hint
            .as_deref()
            .unwrap_or_default()
            .contains("{expr: \"$.entry.x\"}"),
        "{w}"
    );
    assert_eq!(w.line, 32, "{w}");

    let text = std::fs::read_to_string(bench("echo_graph_mcpgraph.yaml")).expect("read");
    let migrated = migrate(&text, "echo_graph_mcpgraph.yaml").expect("migrates");
    assert!(
        migrated.text.contains("x: {expr: \"$.entry.x\"}"),
        "{}",
        migrated.text
    );
    let loaded = load_text(&migrated.text);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.config, load_file("echo_graph.yaml").config);
}

#[test]
fn a_0_1_23_file_with_dollar_arguments_evaluates_them() {
    let text = r#"version: "1.0"
server: {name: s, version: "1"}
mcpServers:
  fx: {command: fixture, args: []}
tools:
  - name: t
    description: d
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - id: call
        type: mcp
        server: fx
        tool: echo
        args:
          x: '$.entry.x'  # single-quoted
          y: "not an expression"
          z: {expr: "$.entry.z"}
        next: route
      - id: route
        type: switch
        conditions:
          - {rule: {"==": [1, 1]}, target: exit}
          - target: exit
      - {id: exit, type: exit}
"#;
    let loaded = load_text(text);
    let call = serde_json::to_value(&loaded.config.tools[0].nodes[1]).expect("json");
    assert_eq!(call["args"]["x"], serde_json::json!({"expr": "$.entry.x"}));
    assert_eq!(call["args"]["y"], "not an expression");
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0].message.contains("1 mcp argument"),
        "{:?}",
        loaded.warnings
    );

    let migrated = migrate(text, "flow.yaml").expect("migrates");
    assert!(
        migrated
            .text
            .contains("x: {expr: \"$.entry.x\"}  # single-quoted"),
        "{}",
        migrated.text
    );
    assert!(
        migrated
            .text
            .contains("{rule: {\"==\": [1, 1]}, next: exit}"),
        "{}",
        migrated.text
    );
    assert!(
        migrated.text.contains("        next: exit\n"),
        "{}",
        migrated.text
    );
    let again = load_text(&migrated.text);
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.config, loaded.config);
}

#[test]
fn what_migrate_cannot_rewrite_safely_is_refused_with_the_line() {
    let text = r#"version: "1.0"
server: {name: s, version: "1"}
tools:
  - name: t
    description: d
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: route}
      - {id: route, type: switch, conditions: [{rule: true, target: exit}, {target: exit}]}
      - {id: exit, type: exit}
"#;
    let e = migrate(text, "flow.yaml").expect_err("flow-style conditions");
    assert_eq!(e.line, 9, "{e}");
    assert!(e.to_string().contains("by hand"), "{e}");
    // It still loads, with 0.1.23's meaning.
    let loaded = load_text(text);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
}

#[test]
fn a_current_file_is_left_as_it_is() {
    let text = std::fs::read_to_string(bench("loop_big.yaml")).expect("read");
    let migrated = migrate(&text, "loop_big.yaml").expect("nothing to do");
    assert!(migrated.changes.is_empty());
    assert_eq!(migrated.text, text);
}
