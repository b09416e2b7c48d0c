//! The built-in tools against the real loader, engine and fixture upstream: what each answers,
//! which flags list them, and how each answers a malformed call.
mod common;

use common::{all_on, ok, refused, setup};
use mcpflow_authoring::{AuthoringConfig, PREFIX, check_names};
use serde_json::{Value, json};

const DOUBLE: &str = "name: double\ndescription: Doubles a number\ninputSchema:\n  type: object\n  properties:\n    n: {type: number}\n  required: [n]\nnodes:\n  - id: entry\n    type: entry\n    next: calc\n  - id: calc\n    type: transform\n    transform:\n      expr: '{\"result\": entry.n * 2}'\n    next: exit\n  - id: exit\n    type: exit\n";

fn names(tools: &[rmcp::model::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn the_flags_decide_what_is_listed() {
    let defaults = setup(&[], AuthoringConfig::default());
    let listed = names(&defaults.authoring.tools());
    assert!(listed.iter().all(|n| n.starts_with(PREFIX)), "{listed:?}");
    assert!(listed.contains(&"mcpflow_search".to_owned()));
    assert!(
        !listed.contains(&"mcpflow_call_upstream".to_owned()),
        "callUpstreams is off by default"
    );
    // runInline is on by default: the run tool takes definitions.
    let run = defaults
        .authoring
        .tools()
        .into_iter()
        .find(|t| t.name == "mcpflow_run_tool")
        .expect("run tool");
    assert!(run.input_schema["properties"].get("definition").is_some());
    let text = refused(
        &defaults.authoring,
        "mcpflow_call_upstream",
        json!({"server": "demo", "tool": "echo"}),
    )
    .await;
    assert!(
        text.contains("turned off") && text.contains("callUpstreams: true"),
        "{text}"
    );

    let off = setup(
        &[],
        AuthoringConfig {
            run_inline: Some(false),
            search: Some(false),
            ..Default::default()
        },
    );
    let listed = names(&off.authoring.tools());
    assert!(!listed.contains(&"mcpflow_search".to_owned()));
    let run = off
        .authoring
        .tools()
        .into_iter()
        .find(|t| t.name == "mcpflow_run_tool")
        .expect("run tool");
    assert!(run.input_schema["properties"].get("definition").is_none());
    let text = refused(
        &off.authoring,
        "mcpflow_run_tool",
        json!({"definition": DOUBLE, "arguments": {"n": 1}}),
    )
    .await;
    assert!(text.contains("runInline"), "{text}");

    let on = setup(&[], all_on());
    assert!(names(&on.authoring.tools()).contains(&"mcpflow_call_upstream".to_owned()));
    assert!(on.authoring.handles("mcpflow_syntax") && !on.authoring.handles("syntax"));
    let text = refused(&on.authoring, "mcpflow_sintax", json!({})).await;
    assert!(text.contains("did you mean `mcpflow_syntax`"), "{text}");
}

#[test]
fn names_in_the_prefix_are_a_clash() {
    assert!(check_names(["double", "fs__read_file"]).is_ok());
    let e = check_names(["double", "mcpflow_double"]).expect_err("a clash");
    assert_eq!(e.names, ["mcpflow_double"]);
    assert!(
        e.to_string().contains("reserved") && e.to_string().contains("rename"),
        "{e}"
    );
}

#[tokio::test]
async fn validation_reports_every_problem_with_its_path_and_fix() {
    let s = setup(&[DOUBLE], all_on());
    let broken = json!({
        "name": "broken",
        "inputSchema": {"type": "object"},
        "nodes": [
            {"id": "entry", "type": "entry", "next": "calc"},
            {"id": "calc", "type": "transfrom", "transform": {"expr": "1"}, "next": "shape"},
            {"id": "shape", "type": "transform", "transform": {"expr": "{\"a\": entry.n +}"}, "next": "exit"},
            {"id": "exit", "type": "exit"}
        ]
    });
    let v = ok(
        &s.authoring,
        "mcpflow_validate_tool",
        json!({"definition": broken}),
    )
    .await;
    assert_eq!(v["valid"], false, "{v}");
    let problems = v["problems"].as_array().expect("problems");
    let at = |path: &str| {
        problems
            .iter()
            .find(|p| p["path"].as_str().is_some_and(|p| p.starts_with(path)))
            .unwrap_or_else(|| panic!("no problem at {path}: {problems:#?}"))
    };
    assert!(
        problems.iter().all(|p| p.get("line").is_none()),
        "an object has no lines"
    );
    let typo = at("/nodes/1");
    assert!(
        typo.to_string().contains("transform"),
        "the misspelt type is named with its fix: {typo}"
    );
    let expr = at("/nodes/2/transform/expr");
    assert!(
        expr["message"]
            .as_str()
            .is_some_and(|m| m.contains("JSONata")),
        "{expr}"
    );
    assert!(
        problems.iter().all(|p| p["fix"].is_string()),
        "every problem says how to fix it"
    );
    // What a program applies without reading prose: the type meant, and where the expression
    // broke (just past `}`, the token found where an operand was expected).
    assert_eq!(typo["suggestion"], "transform", "{typo}");
    assert_eq!(expr["code"], "S0211", "{expr}");
    assert_eq!(expr["position"], 16, "{expr}");
    assert!(
        expr["at"].as_str().is_some_and(|a| a.ends_with('^')),
        "{expr}"
    );

    // Text keeps its positions: the line of the bad expression.
    let yaml = "name: broken\ninputSchema: {type: object}\nnodes:\n  - {id: entry, type: entry, next: calc}\n  - id: calc\n    type: transform\n    transform: {expr: 'entry.n +'}\n    next: exit\n  - {id: exit, type: exit}\n";
    let v = ok(
        &s.authoring,
        "mcpflow_validate_tool",
        json!({"definition": yaml}),
    )
    .await;
    let p = &v["problems"][0];
    assert_eq!(p["path"], "/nodes/1/transform/expr", "{v}");
    assert_eq!(p["line"], 7, "{p}");
    assert!(p["code"].is_string() && p["position"].is_number(), "{p}");

    // A sound definition, named like a saved tool: valid, and it says it would replace it.
    let v = ok(
        &s.authoring,
        "mcpflow_validate_tool",
        json!({"definition": DOUBLE}),
    )
    .await;
    assert_eq!(v["valid"], true, "{v}");
    assert!(v["replaces"].is_string());

    // References, servers, cycles and the reserved prefix are checked against the config.
    let bad_refs = json!({
        "name": "mcpflow_mine",
        "nodes": [
            {"id": "entry", "type": "entry", "next": "call"},
            {"id": "call", "type": "mcp", "server": "dmeo", "tool": "echo", "next": "exti"},
            {"id": "exit", "type": "exit"}
        ]
    });
    let v = ok(
        &s.authoring,
        "mcpflow_validate_tool",
        json!({"definition": bad_refs}),
    )
    .await;
    let text = v["problems"].to_string();
    assert!(
        text.contains("demo") && text.contains("exit") && text.contains("reserved"),
        "{v}"
    );
    let cycle = "name: loop_a\nnodes:\n  - {id: entry, type: entry, next: again}\n  - {id: again, type: call, tool: loop_a, next: exit}\n  - {id: exit, type: exit}\n";
    let v = ok(
        &s.authoring,
        "mcpflow_validate_tool",
        json!({"definition": cycle}),
    )
    .await;
    assert!(v["problems"].to_string().contains("cycle"), "{v}");
}

#[tokio::test]
async fn inline_runs_show_result_history_and_failures() {
    let s = setup(&[DOUBLE], all_on());
    let r = ok(
        &s.authoring,
        "mcpflow_run_tool",
        json!({"definition": DOUBLE.replace("name: double", "name: twice"), "arguments": {"n": 4}}),
    )
    .await;
    assert_eq!(r["status"], "succeeded");
    assert_eq!(r["result"], json!({"result": 8}));
    let history = r["history"].as_array().expect("history");
    let ids: Vec<&str> = history
        .iter()
        .filter_map(|h| h["nodeId"].as_str())
        .collect();
    assert_eq!(ids, ["entry", "calc", "exit"]);
    assert!(history.iter().all(|h| h["durationMs"].as_f64().is_some()));

    // The saved tool runs on the running engine.
    let r = ok(
        &s.authoring,
        "mcpflow_run_tool",
        json!({"tool": "double", "arguments": {"n": 5}, "history": false}),
    )
    .await;
    assert_eq!(r["result"], json!({"result": 10}));
    assert!(r.get("history").is_none());

    // A failure: the failing node, its error and the context it read.
    let failing = "name: failing\ninputSchema: {type: object}\nnodes:\n  - {id: entry, type: entry, next: parse}\n  - id: parse\n    type: transform\n    transform: {expr: '$number(entry.text) + 1'}\n    next: exit\n  - {id: exit, type: exit}\n";
    let result = s
        .authoring
        .call(
            "mcpflow_run_tool",
            common::map(json!({"definition": failing, "arguments": {"text": "abc"}})),
        )
        .await;
    assert_eq!(result.is_error, Some(true));
    let r = result.structured_content.expect("structured");
    assert_eq!(r["status"], "failed");
    assert_eq!(r["failedNode"]["id"], "parse");
    assert_eq!(
        r["failedNode"]["context"],
        json!({"entry": {"text": "abc"}})
    );
    assert!(r["error"]["message"].is_string());

    // An invalid definition runs nothing and says why.
    let result = s
        .authoring
        .call(
            "mcpflow_run_tool",
            common::map(json!({"definition": {"name": "x", "nodes": []}})),
        )
        .await;
    let r = result.structured_content.expect("structured");
    assert_eq!(r["status"], "invalid", "{r}");

    // Arguments are checked against inputSchema first.
    let result = s
        .authoring
        .call(
            "mcpflow_run_tool",
            common::map(json!({"tool": "double", "arguments": {"n": "five"}})),
        )
        .await;
    let r = result.structured_content.expect("structured");
    assert_eq!(r["status"], "invalidArguments", "{r}");
}

#[tokio::test]
async fn discovery_of_upstreams_and_graph_tools() {
    let s = setup(&[DOUBLE], all_on());
    let a = &s.authoring;
    let u = ok(a, "mcpflow_list_upstreams", json!({})).await;
    assert_eq!(u["servers"][0]["name"], "demo");
    assert_eq!(u["servers"][0]["status"], "connected", "{u}");

    let t = ok(a, "mcpflow_list_upstream_tools", json!({"server": "demo"})).await;
    let names: Vec<&str> = t["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"add"),
        "{names:?}"
    );

    let add = ok(
        a,
        "mcpflow_get_upstream_tool",
        json!({"server": "demo", "tool": "add"}),
    )
    .await;
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    assert!(add["outputSchema"].is_object());
    assert_eq!(add["node"]["args"]["a"], json!({"expr": "entry.a"}));

    let text = refused(
        a,
        "mcpflow_get_upstream_tool",
        json!({"server": "demo", "tool": "ad"}),
    )
    .await;
    assert!(text.contains("did you mean \"add\""), "{text}");
    let text = refused(a, "mcpflow_list_upstream_tools", json!({"server": "dmeo"})).await;
    assert!(text.contains("did you mean \"demo\""), "{text}");

    let g = ok(a, "mcpflow_list_graph_tools", json!({})).await;
    assert_eq!(g["tools"][0]["name"], "double");
    let d = ok(a, "mcpflow_get_graph_tool", json!({"name": "double"})).await;
    assert_eq!(
        d["definition"]["nodes"][1]["transform"]["expr"],
        "{\"result\": entry.n * 2}"
    );
    let text = refused(a, "mcpflow_get_graph_tool", json!({"name": "doubel"})).await;
    assert!(text.contains("did you mean \"double\""), "{text}");
    s.engine.pool().shutdown().await;
}

#[tokio::test]
async fn search_scores_best_first() {
    let s = setup(&[DOUBLE], all_on());
    let a = &s.authoring;
    let r = ok(a, "mcpflow_search", json!({"query": "echo"})).await;
    let first = &r["results"][0];
    assert_eq!(
        (
            first["kind"].as_str(),
            first["name"].as_str(),
            first["score"].as_u64()
        ),
        (Some("upstreamTool"), Some("echo"), Some(100)),
        "{r}"
    );
    let scores: Vec<u64> = r["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|x| x["score"].as_u64())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );
    // echo_text starts with the query.
    assert!(
        r["results"]
            .as_array()
            .expect("results")
            .iter()
            .any(|x| x["name"] == "echo_text" && x["score"] == 90),
        "{r}"
    );

    let r = ok(
        a,
        "mcpflow_search",
        json!({"query": "doub", "kinds": "graphTool"}),
    )
    .await;
    assert_eq!(
        (
            r["results"][0]["name"].as_str(),
            r["results"][0]["score"].as_u64()
        ),
        (Some("double"), Some(90))
    );
    assert!(
        r["results"]
            .as_array()
            .expect("results")
            .iter()
            .all(|x| x["kind"] == "graphTool")
    );

    let r = ok(
        a,
        "mcpflow_search",
        json!({"query": "loop", "kinds": ["nodeType"]}),
    )
    .await;
    assert_eq!(r["results"][0]["name"], "foreach", "{r}");

    let text = refused(a, "mcpflow_search", json!({"query": "--"})).await;
    assert!(text.contains("query"), "{text}");
    s.engine.pool().shutdown().await;
}

#[tokio::test]
async fn an_upstream_call_shows_what_the_node_would_read() {
    let s = setup(&[], all_on());
    let a = &s.authoring;
    let r = ok(
        a,
        "mcpflow_call_upstream",
        json!({"server": "demo", "tool": "add", "args": {"a": {"expr": "entry.x"}, "b": 2}, "context": {"entry": {"x": 40}}}),
    )
    .await;
    assert_eq!(r["arguments"], json!({"a": 40, "b": 2}));
    assert_eq!(r["output"]["sum"].as_f64(), Some(42.0));
    assert!(r["callMs"].as_f64().is_some());

    // Text that is JSON is parsed, as the node does.
    let r = ok(
        a,
        "mcpflow_call_upstream",
        json!({"server": "demo", "tool": "json_text", "args": {"value": [1, 2]}}),
    )
    .await;
    assert_eq!(r["output"], json!([1, 2]));

    // A tool error: isError, with the message the node would fail with.
    let result = a
        .call(
            "mcpflow_call_upstream",
            common::map(json!({"server": "demo", "tool": "fail", "args": {"message": "nope"}})),
        )
        .await;
    assert_eq!(result.is_error, Some(true));
    let r = result.structured_content.expect("structured");
    assert_eq!(r["kind"], "toolError");
    assert!(
        r["error"].as_str().is_some_and(|e| e.contains("nope")),
        "{r}"
    );

    // A broken template never reaches the upstream.
    let result = a
        .call(
            "mcpflow_call_upstream",
            common::map(
                json!({"server": "demo", "tool": "echo", "args": {"x": {"expr": "entry.("}}}),
            ),
        )
        .await;
    assert_eq!(result.is_error, Some(true));
    let r = result.structured_content.expect("structured");
    assert_eq!(r["error"]["stage"], "compile", "{r}");
    s.engine.pool().shutdown().await;
}

#[tokio::test]
async fn expressions_are_tested_as_nodes_evaluate_them() {
    let s = setup(&[], all_on());
    let a = &s.authoring;
    let r = ok(
        a,
        "mcpflow_test_expression",
        json!({"jsonata": "$sum(entry.v)", "context": {"entry": {"v": [1, 2]}}}),
    )
    .await;
    assert_eq!(r["result"], 3);
    let r = ok(
        a,
        "mcpflow_test_expression",
        json!({"jsonata": "entry.nothing", "context": {"entry": {}}}),
    )
    .await;
    assert_eq!(r["undefined"], true);
    let r = ok(
        a,
        "mcpflow_test_expression",
        json!({"logic": {">": [{"var": "entry.n"}, 2]}, "context": {"entry": {"n": "3"}}}),
    )
    .await;
    assert_eq!(
        (r["result"].clone(), r["holds"].clone()),
        (json!(true), json!(true))
    );
    let r = ok(
        a,
        "mcpflow_test_expression",
        json!({"jsonata": "$previousNode().i", "history": [{"nodeId": "a", "output": {"i": 7}}]}),
    )
    .await;
    assert_eq!(r["result"], 7);

    let result = a
        .call(
            "mcpflow_test_expression",
            common::map(json!({"jsonata": "{\"a\": 1"})),
        )
        .await;
    assert_eq!(result.is_error, Some(true));
    let r = result.structured_content.expect("structured");
    assert!(
        r["error"]["code"]
            .as_str()
            .is_some_and(|c| c.starts_with('S')),
        "{r}"
    );
    assert!(
        r["fix"].as_str().is_some_and(|f| f.contains("syntax")),
        "{r}"
    );
}

/// Every tool answers a malformed call with a tool-level error that says what is wrong and
/// shows a correct call; nothing panics.
#[tokio::test]
async fn malformed_calls_are_answered_with_what_and_how() {
    let s = setup(&[DOUBLE], all_on());
    let a = &s.authoring;
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "mcpflow_syntax",
            json!({"topic": 3}),
            "`topic` must be one of",
        ),
        (
            "mcpflow_syntax",
            json!({"topik": "graph"}),
            "did you mean `topic`",
        ),
        (
            "mcpflow_node_types",
            json!({"filter": ["x"]}),
            "`filter` must be a string",
        ),
        ("mcpflow_node_details", json!({}), "missing `types`"),
        ("mcpflow_node_details", json!({"types": []}), "empty"),
        (
            "mcpflow_node_details",
            json!({"types": [1]}),
            "a string or a list of strings",
        ),
        ("mcpflow_test_expression", json!({}), "give the expression"),
        (
            "mcpflow_test_expression",
            json!({"jsonata": "1", "logic": {}}),
            "exactly one",
        ),
        (
            "mcpflow_test_expression",
            json!({"jsonata": "1", "history": [{"output": 1}]}),
            "history[0]",
        ),
        (
            "mcpflow_test_expression",
            json!({"jsonata": 1}),
            "`jsonata` must be a string",
        ),
        ("mcpflow_validate_tool", json!({}), "missing `definition`"),
        (
            "mcpflow_validate_tool",
            json!({"definition": 7}),
            "must be an object, or YAML/JSON text",
        ),
        ("mcpflow_run_tool", json!({}), "give `tool`"),
        (
            "mcpflow_run_tool",
            json!({"tool": "double", "definition": DOUBLE}),
            "not both",
        ),
        (
            "mcpflow_run_tool",
            json!({"tool": "doubel"}),
            "did you mean \"double\"",
        ),
        (
            "mcpflow_run_tool",
            json!({"tool": "double", "arguments": [1]}),
            "`arguments` must be an object",
        ),
        (
            "mcpflow_list_upstreams",
            json!({"server": "demo"}),
            "takes no arguments",
        ),
        (
            "mcpflow_list_upstream_tools",
            json!({"server": 1}),
            "`server` must be a string",
        ),
        (
            "mcpflow_get_upstream_tool",
            json!({"server": "demo"}),
            "missing `tool`",
        ),
        (
            "mcpflow_get_upstream_tool",
            json!({"server": "nowhere", "tool": "x"}),
            "no upstream server named",
        ),
        (
            "mcpflow_list_graph_tools",
            json!({"x": 1}),
            "unknown parameter `x`",
        ),
        ("mcpflow_get_graph_tool", json!({}), "missing `name`"),
        ("mcpflow_search", json!({}), "missing `query`"),
        (
            "mcpflow_search",
            json!({"query": "x", "limit": -1}),
            "non-negative integer",
        ),
        (
            "mcpflow_call_upstream",
            json!({"server": "demo"}),
            "missing `tool`",
        ),
        (
            "mcpflow_call_upstream",
            json!({"server": "demo", "tool": "echo", "context": []}),
            "`context` must be an object",
        ),
        (
            "mcpflow_list_runs",
            json!({"limit": "x"}),
            "non-negative integer",
        ),
        ("mcpflow_get_run", json!({}), "missing `runId`"),
        (
            "mcpflow_get_run",
            json!({"runId": "r", "index": 1.5}),
            "`index` must be",
        ),
        (
            "mcpflow_call_upstream",
            json!({"server": "dmeo", "tool": "echo"}),
            "did you mean \"demo\"",
        ),
    ];
    for (tool, args, expected) in cases {
        let text = refused(a, tool, args.clone()).await;
        assert!(
            text.contains(expected),
            "{tool} {args}: expected {expected:?} in {text:?}"
        );
    }
    // A definition that is not valid YAML is a problem of the definition, not a crash.
    let v = ok(
        a,
        "mcpflow_validate_tool",
        json!({"definition": "name: [unclosed"}),
    )
    .await;
    assert_eq!(v["valid"], false, "{v}");
    let v = ok(
        a,
        "mcpflow_validate_tool",
        json!({"definition": "- a list"}),
    )
    .await;
    assert_eq!(v["valid"], false, "{v}");
    s.engine.pool().shutdown().await;
}

fn send<T: Send>(_: &T) {}
fn shared<T: Send + Sync>(_: &T) {}

/// The server keeps the tools behind an `Arc` and awaits a call on rmcp's per-request task.
#[tokio::test]
async fn the_tools_and_their_calls_cross_threads() {
    let s = setup(&[DOUBLE], all_on());
    shared(&s.authoring);
    let call = s.authoring.call(
        "mcpflow_run_tool",
        common::map(json!({"tool": "double", "arguments": {"n": 1}})),
    );
    send(&call);
    assert_eq!(call.await.is_error, Some(false));
}

#[tokio::test]
async fn the_instructions_name_only_the_listed_tools() {
    let defaults = setup(&[], AuthoringConfig::default());
    let text = defaults.authoring.instructions();
    assert!(
        text.contains("mcpflow_syntax") && text.contains("mcpflow_search"),
        "{text}"
    );
    assert!(!text.contains("mcpflow_call_upstream"), "{text}");
    let listed = names(&defaults.authoring.tools());
    for name in text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(PREFIX))
    {
        assert!(
            listed.iter().any(|l| l == name),
            "{name} is named but not listed"
        );
    }
    let on = setup(&[], all_on());
    assert!(
        on.authoring
            .instructions()
            .contains("mcpflow_call_upstream")
    );
}

#[tokio::test]
async fn runs_are_kept_for_debugging_with_time_travel() {
    let s = setup(&[DOUBLE], all_on());
    let a = &s.authoring;
    let r = ok(
        a,
        "mcpflow_run_tool",
        json!({"tool": "double", "arguments": {"n": 2}}),
    )
    .await;
    let saved_id = r["runId"].as_str().expect("run id").to_owned();
    let inline = DOUBLE.replace("name: double", "name: twice");
    let r = ok(
        a,
        "mcpflow_run_tool",
        json!({"definition": inline, "arguments": {"n": 3}}),
    )
    .await;
    let inline_id = r["runId"].as_str().expect("run id").to_owned();

    let l = ok(a, "mcpflow_list_runs", json!({})).await;
    let ids: Vec<&str> = l["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["runId"].as_str())
        .collect();
    assert_eq!(
        ids,
        [inline_id.as_str(), saved_id.as_str()],
        "newest first: {l}"
    );
    assert!(l["note"].as_str().is_some_and(|n| n.contains("no store")));
    let l = ok(
        a,
        "mcpflow_list_runs",
        json!({"tool": "double", "status": "succeeded"}),
    )
    .await;
    assert_eq!(l["runs"].as_array().map(Vec::len), Some(1));

    let g = ok(
        a,
        "mcpflow_get_run",
        json!({"runId": inline_id, "index": 0}),
    )
    .await;
    assert_eq!(g["result"], json!({"result": 6}));
    assert_eq!(g["contextAt"]["context"], json!({"entry": {"n": 3}}));
    let g = ok(
        a,
        "mcpflow_get_run",
        json!({"runId": inline_id, "index": 1}),
    )
    .await;
    assert_eq!(
        g["contextAt"]["context"],
        json!({"entry": {"n": 3}, "calc": {"result": 6}})
    );

    let text = refused(
        a,
        "mcpflow_get_run",
        json!({"runId": inline_id, "index": 9}),
    )
    .await;
    assert!(
        text.contains("out of range") && text.contains("0 to 2"),
        "{text}"
    );
    let text = refused(a, "mcpflow_get_run", json!({"runId": "nope"})).await;
    assert!(text.contains("no run with id \"nope\""), "{text}");
    let text = refused(a, "mcpflow_list_runs", json!({"status": "done"})).await;
    assert!(text.contains("succeeded"), "{text}");
}

#[tokio::test]
async fn with_a_store_the_runs_of_every_client_are_listed() {
    let s = setup(&[DOUBLE], all_on());
    let dir = tempfile::tempdir().expect("temp dir");
    let store = mcpflow_store::open(&format!("sqlite://{}/state.db", dir.path().display()))
        .await
        .expect("the store opens");
    let durability = mcpflow_engine::Durability::new(
        store.clone(),
        "test".into(),
        "v1".into(),
        Default::default(),
    );
    assert!(s.engine.attach_durability(durability).is_ok());
    // A client's run, not made through the authoring tools: recorded in the store at its end.
    let run = s
        .engine
        .run(mcpflow_engine::RunRequest::new("double", json!({"n": 7})))
        .await;
    let id = run.id.to_string();
    let mut stored = false;
    for _ in 0..200 {
        if store.get_run(&id).await.is_ok_and(|r| r.result.is_some()) {
            stored = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(stored, "the plain run was recorded");
    let l = ok(&s.authoring, "mcpflow_list_runs", json!({"tool": "double"})).await;
    let found = l["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["runId"] == id.as_str())
        .cloned();
    assert_eq!(
        found.map(|r| r["source"].clone()),
        Some(json!("store")),
        "{l}"
    );
    let g = ok(
        &s.authoring,
        "mcpflow_get_run",
        json!({"runId": id, "index": 1}),
    )
    .await;
    assert_eq!(g["source"], "store");
    assert_eq!(
        g["contextAt"]["context"],
        json!({"entry": {"n": 7}, "calc": {"result": 14}}),
        "{g}"
    );
}
