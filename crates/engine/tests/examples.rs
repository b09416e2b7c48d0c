//! The mcpGraph examples give the results SEMANTICS.md lists, through the engine.
mod common;

use mcpflow_engine::{RunErrorKind, RunRequest};
use serde_json::{Value, json};

async fn run(file: &str, tool: &str, args: Value) -> mcpflow_engine::Run {
    let (_, engine) = common::load_path(&common::example(file));
    engine.run(RunRequest::new(tool, args)).await
}

#[tokio::test]
async fn loop_sums_and_records_nine_steps_for_three() {
    let r = run("loop_example.yaml", "sum_to_n", json!({"n": 3})).await;
    assert_eq!(r.output().map(|v| v.to_json()), Some(json!({"sum": 6})));
    assert_eq!(r.history.len(), 9);
    let ids: Vec<&str> = r.history.records().iter().map(|r| &*r.node_id).collect();
    assert_eq!(ids[..3], ["entry_sum", "increment_node", "check_condition"]);
    assert_eq!(ids[7..], ["exit_sum", "exit_sum_final"]);
}

#[tokio::test]
async fn loop_gives_the_reference_results() {
    for (n, sum) in [(0, 1), (1, 1), (4, 10), (5, 15)] {
        let r = run("loop_example.yaml", "sum_to_n", json!({"n": n})).await;
        assert_eq!(
            r.output().map(|v| v.to_json()),
            Some(json!({"sum": sum})),
            "n = {n}"
        );
    }
}

#[tokio::test]
async fn switch_routes_with_loose_comparison() {
    let cases = [
        (json!({"value": 15}), "high"),
        (json!({"value": "15"}), "high"),
        (json!({"value": 5}), "low"),
        (json!({"value": 10}), "low"),
        (json!({"value": 0}), "zero_or_negative"),
        (json!({"value": -5}), "zero_or_negative"),
        (json!({}), "zero_or_negative"),
    ];
    for (args, want) in cases {
        let r = run("switch_example.yaml", "test_switch", args.clone()).await;
        assert_eq!(
            r.output().map(|v| v.to_json()),
            Some(json!({"result": want})),
            "{args}"
        );
        // A switch records the id of the node it routed to.
        let path = match want {
            "high" => "high_path",
            "low" => "low_path",
            _ => "zero_path",
        };
        assert_eq!(
            r.history.records()[1].output.as_ref().map(|v| v.to_json()),
            Some(json!(path))
        );
    }
}

#[tokio::test]
async fn minimal_passes_arguments_through() {
    let r = run("test_minimal.yaml", "test_tool", json!({"a": 1})).await;
    assert_eq!(r.output().map(|v| v.to_json()), Some(json!({"a": 1})));
    let r = run("test_minimal.yaml", "test_tool", json!({})).await;
    assert_eq!(r.output().map(|v| v.to_json()), Some(json!({})));
}

#[tokio::test]
async fn node_limit_names_the_limit_and_the_count() {
    // 1000 nodes by default: n = 1000 needs about 2,000.
    let r = run("loop_example.yaml", "sum_to_n", json!({"n": 1000})).await;
    let err = r.error().cloned().expect("limit reached");
    assert_eq!(err.kind, RunErrorKind::Limit);
    assert!(
        err.message.contains("maxNodeExecutions is 1000"),
        "{}",
        err.message
    );
    assert_eq!(r.history.len(), 1000);
}

#[tokio::test]
async fn unknown_tool_is_a_clear_error() {
    let r = run("loop_example.yaml", "nope", json!({})).await;
    let err = r.error().cloned().expect("unknown");
    assert_eq!(err.kind, RunErrorKind::UnknownTool);
    assert!(err.message.contains("sum_to_n"), "{}", err.message);
}

#[tokio::test]
async fn time_limit_names_the_limit() {
    // A fast engine meets the node limit long before the time limit: raise the node limit.
    let path = common::example("loop_example.yaml");
    let text = std::fs::read_to_string(path).expect("read example");
    let text = text.replacen(
        "\ntools:",
        "\nexecutionLimits:\n  maxNodeExecutions: 100000000\n  maxExecutionTimeMs: 1\n\ntools:",
        1,
    );
    let (_, engine) = common::load_str(&text);
    let r = engine
        .run(RunRequest::new("sum_to_n", json!({"n": 100000000})))
        .await;
    let err = r.error().cloned().expect("time limit reached");
    assert_eq!(err.kind, RunErrorKind::Limit);
    assert!(
        err.message.contains("maxExecutionTimeMs is 1 "),
        "{}",
        err.message
    );
}
