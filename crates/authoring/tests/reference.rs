//! Every example the built-in reference tools show a model is executed here, as the answer
//! gives it: JSONata, JSON Logic and `args` through the expression layer the engine evaluates
//! with, whole tools through the loader and the engine (their mcp nodes calling the real
//! fixture upstream as `demo`, their await nodes suspended in a real SQLite store and
//! continued). A reference that drifts from the engine fails here.
mod common;

use std::sync::Arc;

use common::{all_on, config_yaml, load, ok, setup};
use mcpflow_engine::{Durability, RunRequest};
use mcpflow_expr::{Context, Jsonata, Limits, Logic, MemoryHistory, Scope, Template, Value as V};
use serde_json::{Value, json};

/// The context and history of an expression example.
fn input(example: &Value) -> (Context, MemoryHistory) {
    let mut history = MemoryHistory::new();
    let mut context = Context::new();
    for r in example["history"].as_array().into_iter().flatten() {
        let id = r["nodeId"]
            .as_str()
            .expect("history records name their node");
        let output = r.get("output").cloned().map(V::from_json);
        history.push(id, output.clone());
        context.set(id, output);
    }
    if let Some(c) = example.get("context") {
        context = Context::from_json(c.clone());
    }
    (context, history)
}

fn evaluate(example: &Value) -> Value {
    let (context, history) = input(example);
    let limits = Limits::default();
    let scope = Scope::new(&context, &history, &limits);
    let title = &example["title"];
    if let Some(src) = example["jsonata"].as_str() {
        let expr = Jsonata::compile(src).unwrap_or_else(|e| panic!("{title}: {e}"));
        return expr
            .evaluate(&scope)
            .unwrap_or_else(|e| panic!("{title}: {e}"))
            .map_or(Value::Null, |v| v.to_json());
    }
    if let Some(rule) = example.get("logic") {
        let logic = Logic::compile(rule).unwrap_or_else(|e| panic!("{title}: {e}"));
        return logic
            .evaluate(&scope)
            .unwrap_or_else(|e| panic!("{title}: {e}"));
    }
    let args = example
        .get("args")
        .unwrap_or_else(|| panic!("{title}: no expression"));
    let template = Template::compile(args).unwrap_or_else(|e| panic!("{title}: {e}"));
    template
        .render(&scope)
        .unwrap_or_else(|e| panic!("{title}: {e}"))
        .unwrap_or_else(|| json!({}))
}

/// Runs a whole-tool example in a config of its own and returns its result.
async fn run_tool(example: &Value) -> Value {
    let title = &example["title"];
    let definition = example["definition"].as_str().expect("a YAML definition");
    let mut tools = vec![definition];
    if let Some(uses) = example["alsoSaved"].as_str() {
        tools.push(uses);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (loaded, engine) = load(&config_yaml(&tools, ""), dir.path());
    let name = loaded.config.tools[0].name.clone();
    let args = example["arguments"].clone();
    if let Some(input) = example.get("continueWith") {
        let url = format!("sqlite://{}/state.db", dir.path().display());
        let store = mcpflow_store::open(&url).await.expect("the store opens");
        let durability = Durability::new(store, "test".into(), "v1".into(), Default::default());
        assert!(engine.attach_durability(durability).is_ok());
        let run = engine.run(RunRequest::new(name.as_str(), args)).await;
        let waiting = run
            .waiting()
            .unwrap_or_else(|| panic!("{title}: the run should wait, it ended {:?}", run.end));
        let session = waiting.to_json()["sessionId"]
            .as_str()
            .expect("a waiting run has a session id")
            .to_owned();
        let run = engine
            .continue_session(RunRequest::new(name.as_str(), input.clone()), &session)
            .await
            .unwrap_or_else(|e| panic!("{title}: continue failed: {e}"));
        engine.pool().shutdown().await;
        return run
            .into_result()
            .unwrap_or_else(|e| panic!("{title}: {e}"))
            .to_json();
    }
    let run = engine.run(RunRequest::new(name.as_str(), args)).await;
    engine.pool().shutdown().await;
    run.into_result()
        .unwrap_or_else(|e| panic!("{title}: {e}"))
        .to_json()
}

async fn check(example: &Value) {
    let expected = &example["result"];
    let got = if example.get("definition").is_some() {
        run_tool(example).await
    } else {
        evaluate(example)
    };
    assert_eq!(
        &got, expected,
        "example {:?} gives another result",
        example["title"]
    );
}

#[tokio::test]
async fn every_syntax_example_runs_as_shown() {
    let s = setup(&[], all_on());
    let answer = ok(&s.authoring, "mcpflow_syntax", json!({})).await;
    let topics = answer["topics"].as_array().expect("topics");
    let names: Vec<&str> = topics.iter().filter_map(|t| t["topic"].as_str()).collect();
    assert_eq!(
        names,
        [
            "graph",
            "nodes",
            "jsonata",
            "history",
            "jsonlogic",
            "args",
            "errors"
        ]
    );
    let mut checked = 0;
    for topic in topics {
        let examples = topic["examples"]
            .as_array()
            .expect("every topic has examples");
        assert!(
            !examples.is_empty(),
            "topic {} has no example",
            topic["topic"]
        );
        for example in examples {
            check(example).await;
            checked += 1;
        }
    }
    assert!(checked >= 25, "only {checked} examples");
}

#[tokio::test]
async fn every_node_catalog_example_runs_as_shown() {
    let s = setup(&[], all_on());
    let types = ok(&s.authoring, "mcpflow_node_types", json!({})).await;
    let names: Vec<Value> = types["types"]
        .as_array()
        .expect("types")
        .iter()
        .map(|t| t["type"].clone())
        .collect();
    assert_eq!(names.len(), 10);
    let details = ok(
        &s.authoring,
        "mcpflow_node_details",
        json!({"types": names}),
    )
    .await;
    let nodes = details["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 10);
    for node in nodes {
        let examples = node["examples"].as_array().expect("examples");
        assert!(!examples.is_empty(), "{} has no example", node["type"]);
        for example in examples {
            check(example).await;
        }
    }
}

#[tokio::test]
async fn a_topic_alone_and_an_unknown_topic() {
    let s = setup(&[], all_on());
    let one = ok(&s.authoring, "mcpflow_syntax", json!({"topic": "history"})).await;
    assert_eq!(one["topics"].as_array().map(Vec::len), Some(1));
    let text = common::refused(&s.authoring, "mcpflow_syntax", json!({"topic": "xpath"})).await;
    assert!(text.contains("`topic` must be one of"), "{text}");
    assert!(text.contains("Example of a correct call"), "{text}");
}

#[tokio::test]
async fn node_details_come_from_the_models_schema() {
    let s = setup(&[], all_on());
    let d = ok(
        &s.authoring,
        "mcpflow_node_details",
        json!({"types": "foreach"}),
    )
    .await;
    let node = &d["nodes"][0];
    let fields = node["fields"].as_array().expect("fields");
    let field = |name: &str| {
        fields
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no field {name} in {fields:?}"))
    };
    assert_eq!(field("items")["required"], true);
    assert_eq!(field("concurrency")["required"], false);
    assert_eq!(field("concurrency")["type"], "integer");
    assert!(
        field("body")["description"]
            .as_str()
            .is_some_and(|d| d.contains("routes back"))
    );
    // The schema is the generated one: every field is in it, and the config's definitions too.
    let schema = &node["schema"];
    assert!(schema["properties"]["items"].is_object(), "{schema}");
    assert_eq!(
        mcpflow_model::schema()["$defs"]["Retry"],
        schema["$defs"]["Retry"],
        "the node's schema carries the definitions it refers to"
    );
    // The options every node takes are listed once, not as the node's own fields.
    assert!(fields.iter().all(|f| f["name"] != "onError"));
}

#[tokio::test]
async fn near_miss_node_types_are_corrected_with_a_warning() {
    let s = setup(&[], all_on());
    for (asked, meant) in [
        ("MCP_NODE", "mcp"),
        ("Transform", "transform"),
        ("jsonata", "transform"),
        ("if", "switch"),
        ("For-Each", "foreach"),
        ("swtich", "switch"),
    ] {
        let d = ok(
            &s.authoring,
            "mcpflow_node_details",
            json!({"types": [asked], "examples": false}),
        )
        .await;
        assert_eq!(d["nodes"][0]["type"], meant, "{asked}");
        let warning = d["warnings"][0].as_str().unwrap_or_default();
        assert!(
            warning.contains(asked) && warning.contains(&format!("type: {meant}")),
            "{asked}: {warning}"
        );
    }
    // An exact name carries no warning.
    let d = ok(
        &s.authoring,
        "mcpflow_node_details",
        json!({"types": "mcp", "examples": false, "schema": false}),
    )
    .await;
    assert!(d.get("warnings").is_none());
    assert!(d["nodes"][0].get("schema").is_none());
    // Nothing close: an error that lists the types.
    let text = common::refused(
        &s.authoring,
        "mcpflow_node_details",
        json!({"types": ["quantum"]}),
    )
    .await;
    assert!(
        text.contains("not a node type") && text.contains("foreach"),
        "{text}"
    );
    // A filter by a near-miss name finds the type too.
    let t = ok(&s.authoring, "mcpflow_node_types", json!({"filter": "IF"})).await;
    assert_eq!(t["types"][0]["type"], "switch");
}

#[tokio::test]
async fn answers_carry_their_time() {
    let s = setup(&[], all_on());
    let r = s
        .authoring
        .call("mcpflow_node_types", common::map(json!({})))
        .await;
    let meta = r.meta.expect("_meta");
    assert!(
        meta.0[mcpflow_authoring::TOOK_MS]
            .as_f64()
            .is_some_and(|ms| ms >= 0.0)
    );
    let _ = Arc::new(());
}
