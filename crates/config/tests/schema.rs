//! The generated JSON Schema accepts what loading accepts and rejects unknown keys.

mod common;

use serde_json::{Value, json};

use common::mcpgraph;

fn yaml_to_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).expect("readable");
    serde_saphyr::from_str(&text).expect("valid YAML")
}

#[test]
fn schema_is_draft_2020_12_and_closed() {
    let schema = mcpflow_config::schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["additionalProperties"], false);
    assert!(jsonschema::meta::is_valid(&schema));
}

#[test]
fn shipped_examples_validate_against_the_schema() {
    let validator = jsonschema::validator_for(&mcpflow_config::schema()).expect("compiles");
    let mut files: Vec<_> = std::fs::read_dir(mcpgraph().join("examples"))
        .expect("examples folder")
        .map(|e| e.expect("entry").path())
        .collect();
    files.push(mcpgraph().join("testClaude/graph.yaml"));
    files.push(mcpgraph().join("tests/files/test-graph-merge.yaml"));
    assert!(files.len() >= 6);
    for path in files {
        let doc = yaml_to_json(&path);
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
}

#[test]
fn schema_rejects_an_unknown_key_and_a_bad_limit() {
    let validator = jsonschema::validator_for(&mcpflow_config::schema()).expect("compiles");
    let good = json!({
        "version": "1.0",
        "server": {"name": "a", "version": "1"},
        "tools": [{"name": "t", "nodes": [
            {"id": "entry", "type": "entry", "next": "exit"},
            {"id": "exit", "type": "exit"}
        ]}]
    });
    assert!(validator.is_valid(&good));
    let mut typo = good.clone();
    typo["tools"][0]["nodes"][0]["nxt"] = json!("exit");
    assert!(!validator.is_valid(&typo));
    let mut top = good.clone();
    top["colour"] = json!("blue");
    assert!(!validator.is_valid(&top));
    let mut limits = good;
    limits["executionLimits"] = json!({"maxNodeExecutions": 0});
    assert!(!validator.is_valid(&limits));
}

#[test]
fn mcp_json_servers_match_the_server_definition() {
    let schema = mcpflow_config::schema();
    let server_schema = json!({
        "$schema": schema["$schema"],
        "$ref": "#/$defs/McpServer",
        "$defs": schema["$defs"],
    });
    let validator = jsonschema::validator_for(&server_schema).expect("compiles");
    let files = mcpgraph().join("tests/files");
    for name in ["test-mcp-valid.json", "test-mcp-merge.json"] {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(files.join(name)).expect("readable"))
                .expect("JSON");
        for (server, def) in doc["mcpServers"].as_object().expect("servers") {
            assert!(validator.is_valid(def), "{name}: {server}");
        }
    }
    let invalid: Value = serde_json::from_str(
        &std::fs::read_to_string(files.join("test-mcp-invalid.json")).expect("readable"),
    )
    .expect("JSON");
    assert!(!validator.is_valid(&invalid["mcpServers"]["invalidServer"]));
}
