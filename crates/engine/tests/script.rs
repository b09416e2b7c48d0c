//! `script` nodes: JavaScript run in the sandbox, compiled at load, failing only their node.
mod common;

use std::path::PathBuf;

use common::{load_path, load_str};
use mcpflow_engine::{Engine, RunEnd, RunErrorKind, RunRequest, RunStatus};
use serde_json::{Value as Json, json};

/// A config whose tools are given as YAML (indented for `tools:`).
fn config(tools: &str) -> String {
    format!(
        r#"
version: "1.0"
server: {{ name: "scripts", version: "1.0.0" }}
tools:
{tools}
"#
    )
}

/// A tool `name` whose graph is entry → `node` (a script node named `s`) → exit.
fn tool(name: &str, node: &str) -> String {
    format!(
        r#"
  - name: "{name}"
    nodes:
      - {{ id: entry, type: entry, next: s }}
      - id: s
        type: script
{node}
        next: exit
      - {{ id: exit, type: exit }}
"#
    )
}

fn repo_example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

async fn ok(engine: &Engine, tool: &str, args: Json) -> Json {
    let run = engine.run(RunRequest::new(tool, args)).await;
    match run.end {
        RunEnd::Waiting(w) => panic!("{tool} waits: {w:?}"),
        RunEnd::Finished(Ok(v)) => v.to_json(),
        RunEnd::Finished(Err(e)) => panic!("{tool} failed: {e}"),
    }
}

#[tokio::test]
async fn the_example_prices_an_order_with_its_script() {
    let (_, engine) = load_path(&repo_example("script.yaml"));
    let args = json!({
        "items": [{"name": "tea", "price": 4.5, "qty": 2}, {"name": "cake", "price": 3, "qty": 1}],
        "coupon": "TENOFF"
    });
    let run = engine.run(RunRequest::new("order_total", args)).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.end);
    assert_eq!(
        run.output().map(|v| v.to_json()),
        Some(json!({"total": 10.8, "summary": "2 x tea, 1 x cake = 10.8"}))
    );
    let rec = &run.history.records()[1];
    assert_eq!((&*rec.node_id, rec.node_type), ("price", "script"));
    // The shaped input is recorded; the console line is kept.
    assert_eq!(
        rec.input.as_ref().and_then(|i| i.get("coupon")),
        Some(&json!("TENOFF"))
    );
    assert_eq!(rec.logs, Some(vec!["2 items, subtotal 12".to_owned()]));
    assert_eq!(
        rec.output.as_ref().map(|o| o.to_json()["discount"].clone()),
        Some(json!(1.2))
    );
}

#[tokio::test]
async fn without_input_the_script_sees_the_context_and_downstream_reads_its_output() {
    let yaml = config(&format!(
        "{}{}",
        r#"
  - name: "double"
    nodes:
      - { id: entry, type: entry, next: first }
      - { id: first, type: transform, transform: { expr: "entry.n + 1" }, next: s }
      - id: s
        type: script
        source: |
          function (ctx) {
            console.warn("keys", Object.keys(ctx).join(","));
            return { n: ctx.entry.n * 2, plusOne: ctx.first };
          }
        next: use
      - { id: use, type: transform, transform: { expr: "$.s.n + s.plusOne" }, next: exit }
      - { id: exit, type: exit }
"#,
        tool(
            "module",
            r#"        source: |
          function helper(x) { return x.length; }
          export default async function (ctx) { return helper(ctx.entry.word); }"#
        )
    ));
    let (_, engine) = load_str(&yaml);
    let run = engine.run(RunRequest::new("double", json!({"n": 5}))).await;
    assert_eq!(run.output().map(|v| v.to_json()), Some(json!(16)));
    let rec = &run.history.records()[2];
    assert_eq!(
        rec.input, None,
        "the whole context is not copied into the record"
    );
    // The context lists the most recently executed node first, as mcpGraph's does.
    assert_eq!(rec.logs, Some(vec!["warn: keys first,entry".to_owned()]));
    assert_eq!(
        ok(&engine, "module", json!({"word": "hello"})).await,
        json!(5)
    );
}

/// Each misbehaving script fails its run with a clear error naming the node; the engine (and
/// its sandbox workers) serve the next run.
#[tokio::test]
async fn throws_loops_bombs_and_bad_results_fail_the_node_and_the_next_run_works() {
    let cases = [
        (
            "throws",
            "        source: \"() => { throw new TypeError('no items') }\"",
            "the script threw TypeError: no items",
        ),
        (
            "spins",
            "        source: \"() => { while (true) {} }\"\n        limits: { cpuMs: 20 }",
            "ran out of its CPU time budget of 20ms",
        ),
        (
            "bombs",
            "        source: \"() => { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }\"\n        limits: { memoryBytes: 4194304, cpuMs: 5000 }",
            "ran out of memory: the sandbox allows 4194304 bytes",
        ),
        (
            "recurses",
            "        source: \"() => { const f = (n) => f(n + 1) + 1; return f(0); }\"\n        limits: { cpuMs: 5000 }",
            "overflowed its stack",
        ),
        (
            "hangs",
            "        source: \"async () => { await new Promise(() => {}); }\"",
            "never settled",
        ),
        (
            "returns_a_function",
            "        source: \"() => ({ f: () => 1 })\"",
            "/f",
        ),
    ];
    let tools: String = cases
        .iter()
        .map(|(name, node, _)| tool(name, node))
        .chain([tool("fine", "        source: \"(ctx) => ctx.entry.x + 1\"")])
        .collect();
    let (_, engine) = load_str(&config(&tools));
    for (name, _, message) in cases {
        let run = engine.run(RunRequest::new(name, json!({}))).await;
        assert_eq!(run.status, RunStatus::Failed, "{name}");
        let err = run.error().expect(name);
        assert_eq!(err.kind, RunErrorKind::Script, "{name}: {err}");
        assert_eq!(err.node_id.as_deref(), Some("s"), "{name}");
        assert!(err.message.contains(message), "{name}: {err}");
        assert!(err.to_string().starts_with("node `s`: "), "{name}: {err}");
        assert_eq!(
            ok(&engine, "fine", json!({"x": 41})).await,
            json!(42),
            "after {name}"
        );
    }
}

#[tokio::test]
async fn on_error_sees_what_the_script_threw_and_logged_and_optional_goes_on() {
    let yaml = config(
        r#"
  - name: "routed"
    nodes:
      - { id: entry, type: entry, next: s }
      - id: s
        type: script
        source: |
          (ctx) => {
            console.log("checking", ctx.entry.code);
            throw { code: ctx.entry.code, reason: "forbidden" };
          }
        onError: handle
        next: exit
      - { id: handle, type: transform, transform: { expr: '{"kind": s.kind, "thrown": s.thrown, "logs": s.logs}' }, next: exit }
      - { id: exit, type: exit }
  - name: "skipped"
    nodes:
      - { id: entry, type: entry, next: s }
      - { id: s, type: script, source: "() => null.x", optional: true, next: after }
      - { id: after, type: transform, transform: { expr: '"went on after: " & s.message' }, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let (_, engine) = load_str(&yaml);
    assert_eq!(
        ok(&engine, "routed", json!({"code": 403})).await,
        json!({
            "kind": "script",
            "thrown": {"code": 403, "reason": "forbidden"},
            "logs": ["checking 403"]
        })
    );
    let out = ok(&engine, "skipped", json!({})).await;
    assert!(
        out.as_str()
            .is_some_and(|s| s.starts_with("went on after: the script threw TypeError")),
        "{out}"
    );
}

#[tokio::test]
async fn a_file_script_runs_and_its_syntax_error_points_into_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("scripts")).expect("mkdir");
    std::fs::write(
        dir.path().join("scripts/score.js"),
        "export default function (input) {\n  return { total: input.reduce((a, b) => a + b, 0) };\n}\n",
    )
    .expect("write");
    let yaml = config(&tool(
        "score",
        "        file: scripts/score.js\n        input: { expr: \"entry.prices\" }",
    ));
    let path = dir.path().join("graph.yaml");
    std::fs::write(&path, &yaml).expect("write");
    let (_, engine) = load_path(&path);
    assert_eq!(
        ok(&engine, "score", json!({"prices": [1, 2, 3.5]})).await,
        json!({"total": 6.5})
    );

    std::fs::write(
        dir.path().join("scripts/score.js"),
        "export default function (input) {\n  return input +* 2;\n}\n",
    )
    .expect("write");
    let errors = common::rejected_path(&path);
    let e = &errors.errors[0];
    assert!(e.file.ends_with("scripts/score.js"), "{errors}");
    assert_eq!((e.line, e.col), (2, 17), "{errors}");
    assert!(
        e.message
            .contains("syntax error in the script of node \"s\""),
        "{errors}"
    );

    std::fs::remove_file(dir.path().join("scripts/score.js")).expect("rm");
    let errors = common::rejected_path(&path);
    assert!(errors.to_string().contains("cannot be read"), "{errors}");
}

#[test]
fn inline_syntax_errors_point_into_the_yaml_block_and_every_problem_is_reported() {
    let tools = [
        tool(
            "broken",
            "        source: |\n          (input) => {\n            return input.x +* 1;\n          }",
        ),
        tool(
            "bad_input",
            "        source: \"(x) => x\"\n        input: { expr: \"$sum(\" }",
        ),
        tool("not_fn", "        source: \"42\""),
        tool("both", "        source: \"(x) => x\"\n        file: x.js"),
    ];
    let yaml = config(&tools.concat());
    let errors = common::rejected_str(&yaml, "bad.yaml");
    let text = errors.to_string();
    let line_of = |needle: &str| {
        yaml.lines()
            .position(|l| l.contains(needle))
            .map(|i| i as u32 + 1)
            .expect("needle")
    };
    let syntax = errors
        .errors
        .iter()
        .find(|e| e.message.contains("syntax error"))
        .unwrap_or_else(|| panic!("{text}"));
    // `+*`: the `*` is at column 29 of its YAML line.
    assert_eq!(
        (syntax.line, syntax.col),
        (line_of("input.x +* 1"), 29),
        "{text}"
    );
    assert!(
        text.contains("invalid JSONata expression in node \"s\""),
        "{text}"
    );
    assert!(text.contains("must evaluate to a function"), "{text}");
    assert!(
        text.contains("needs exactly one of `source` and `file`"),
        "{text}"
    );
}

#[test]
fn limits_out_of_range_are_config_errors() {
    let yaml = config(&tool(
        "t",
        "        source: \"(x) => x\"\n        limits: { memoryBytes: 1000, cpuMs: 0 }",
    ));
    let errors = common::rejected_str(&yaml, "limits.yaml");
    let text = errors.to_string();
    assert!(text.contains("memoryBytes"), "{text}");
    assert!(text.contains("cpuMs"), "{text}");
}

/// A script is pure for durable runs: its record is stored with the suspension and a continue
/// (on a fresh engine) reads its output from the store instead of running it again.
#[tokio::test]
async fn a_continued_run_keeps_the_script_output_it_had_and_does_not_rerun_it() {
    let yaml = config(
        r#"
  - name: "draw"
    nodes:
      - { id: entry, type: entry, next: s }
      - { id: s, type: script, source: "() => ({ r: Math.random() })", next: wait }
      - { id: wait, type: await, message: "go on?", next: done }
      - { id: done, type: transform, transform: { expr: '{"r": s.r, "a": wait.a}' }, next: exit }
      - { id: exit, type: exit }
"#,
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/state.db", dir.path().display());
    let store = mcpflow_store::open(&url).await.expect("store opens");
    let durable = || {
        let (_, engine) = load_str(&yaml);
        let d = mcpflow_engine::Durability::new(
            store.clone(),
            "a".into(),
            "v1".into(),
            mcpflow_model::SessionsConfig {
                ttl_seconds: Some(60),
                max_count: None,
            },
        );
        assert!(engine.attach_durability(d).is_ok());
        engine
    };
    let engine = durable();
    let run = engine.run(RunRequest::new("draw", json!({}))).await;
    assert_eq!(run.status, RunStatus::Waiting, "{:?}", run.end);
    let drawn = run.history.records()[1]
        .output
        .as_ref()
        .map(|o| o.to_json()["r"].clone())
        .expect("the script's output");
    let session = run.waiting().expect("waiting").to_json()["sessionId"]
        .as_str()
        .expect("session id")
        .to_owned();
    drop(engine);
    let engine = durable();
    let control = mcpflow_engine::Control::new();
    let done = engine
        .continue_session(
            RunRequest::new("draw", json!({"a": 1})).with_control(control.clone()),
            &session,
        )
        .await
        .expect("continues");
    assert_eq!(
        done.output().map(|v| v.to_json()),
        Some(json!({"r": drawn, "a": 1}))
    );
}
