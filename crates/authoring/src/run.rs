//! `mcpflow_run_tool`: one run of a saved tool, or of a definition that is not saved (checked
//! first, then compiled with the running config into an engine of its own that shares the
//! running engine's upstream pool), through [`Engine::run`]. The answer shows what happened:
//! the result, the history with each node's duration, and for a failed run the failing node,
//! its error and the context it saw.

use std::sync::Arc;

use mcpflow_engine::{Caller, Engine, Run, RunEnd, RunRequest};
use mcpflow_model::AuthoringConfig;
use serde_json::{Map, Value, json};

use crate::Served;
use crate::answer::Answer;
use crate::args::{Args, Malformed, closest};
use crate::runs::Recent;
use crate::tools::Spec;

pub(crate) async fn answer(
    served: &Served,
    runs: Runs<'_>,
    spec: &Spec,
    args: &Args<'_>,
) -> Answer {
    let Runs {
        settings,
        recent,
        caller,
    } = runs;
    let arguments = Value::Object(args.object("arguments").cloned().unwrap_or_default());
    let with_history = args.bool("history").unwrap_or(true);
    match (args.str("tool"), args.value("definition")) {
        (Some(_), Some(_)) => Malformed::new(
            spec,
            "give either `tool` (a saved tool) or `definition` (an unsaved one), not both",
        )
        .into(),
        (None, None) => Malformed::new(
            spec,
            "give `tool` (the name of a saved tool) or `definition` (a tool definition to run unsaved)",
        )
        .into(),
        (Some(tool), None) => {
            if served.engine.graph(tool).is_none() {
                let names: Vec<&str> = served.engine.graphs().map(|g| g.name()).collect();
                let hint = match closest(tool, names.iter().copied()) {
                    Some(c) => format!("did you mean \"{c}\"?"),
                    None if names.is_empty() => "this server has no graph tools yet".to_owned(),
                    None => format!("the graph tools are: {}", names.join(", ")),
                };
                return Malformed::new(spec, format!("no graph tool named \"{tool}\"; {hint}"))
                    .into();
            }
            let how = How {
                with_history,
                warnings: Vec::new(),
                caller,
            };
            run(&served.engine, recent, tool, arguments, how).await
        }
        (None, Some(definition)) => {
            if !settings.run_inline() {
                return Answer::Refused(format!(
                    "{}: running unsaved definitions is turned off on this server \
                     (authoring.runInline: false); run a saved tool with `tool` instead",
                    spec.name
                ));
            }
            match crate::definition::compile(served, definition) {
                Err(problems) => Answer::Failed(json!({
                    "status": "invalid",
                    "message": "the definition did not pass validation; nothing ran",
                    "problemCount": problems.len(),
                    "problems": problems,
                })),
                Ok(c) => {
                    let how = How {
                        with_history,
                        warnings: c.warnings,
                        caller,
                    };
                    run(&c.engine, recent, &c.name, arguments, how).await
                }
            }
        }
    }
}

/// Where `mcpflow_run_tool`'s runs are kept, the flags that allow them, and whom they are for.
pub(crate) struct Runs<'a> {
    pub settings: &'a AuthoringConfig,
    pub recent: &'a Recent,
    pub caller: Caller,
}

/// How one run is made and told.
struct How {
    with_history: bool,
    warnings: Vec<Value>,
    caller: Caller,
}

async fn run(engine: &Engine, recent: &Recent, tool: &str, arguments: Value, how: How) -> Answer {
    let How {
        with_history,
        warnings,
        caller,
    } = how;
    // The server checks arguments before a run; so does this, with the same schema.
    if let Some(graph) = engine.graph(tool)
        && let Err(errors) = graph.input_validator().check(&arguments)
    {
        return Answer::Failed(json!({
            "status": "invalidArguments",
            "message": format!("the arguments do not match the tool's inputSchema: {}", errors.join("; ")),
            "inputSchema": graph.tool.input_schema,
            "fix": "pass `arguments` matching inputSchema, or change inputSchema",
        }));
    }
    let run = engine
        .run(RunRequest::new(tool, arguments).with_caller(caller))
        .await;
    let mut out = describe(&run, with_history);
    let failed = run.error().is_some();
    recent.keep(Arc::new(run));
    if !warnings.is_empty() {
        out["warnings"] = json!(warnings);
    }
    if failed {
        Answer::Failed(out)
    } else {
        Answer::Ok(out)
    }
}

/// A run as the model reads it.
pub(crate) fn describe(run: &Run, with_history: bool) -> Value {
    let mut out = Map::new();
    out.insert("tool".into(), json!(&*run.tool));
    out.insert("runId".into(), json!(&*run.id));
    match &run.end {
        RunEnd::Finished(Ok(v)) => {
            out.insert("status".into(), json!("succeeded"));
            out.insert("result".into(), v.to_json());
        }
        RunEnd::Finished(Err(e)) => {
            out.insert("status".into(), json!("failed"));
            out.insert("error".into(), json!(e));
            if let Some(node) = &e.node_id {
                out.insert("failedNode".into(), failed_node(run, node));
            }
        }
        RunEnd::Waiting(w) => {
            out.insert("status".into(), json!("waiting"));
            out.insert("waiting".into(), w.to_json());
        }
    }
    let records = run.history.records();
    let total: f64 = records
        .iter()
        .filter(|r| r.parent.is_none())
        .map(|r| r.duration_ms)
        .sum();
    out.insert("nodesExecuted".into(), json!(records.len()));
    out.insert("nodesMs".into(), json!((total * 1000.0).round() / 1000.0));
    if with_history {
        let history: Vec<Value> = records
            .iter()
            .map(|r| {
                let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
                if let Some(m) = v.as_object_mut() {
                    m.remove("startTime");
                    m.remove("endTime");
                }
                v
            })
            .collect();
        out.insert("history".into(), json!(history));
    }
    Value::Object(out)
}

/// The failing node: its record's error and input, and the context it read (time travel to
/// the record before it).
fn failed_node(run: &Run, node: &str) -> Value {
    let records = run.history.records();
    let Some(pos) = records.iter().rposition(|r| &*r.node_id == node) else {
        return json!({"id": node});
    };
    let record = &records[pos];
    let context = match pos.checked_sub(1) {
        Some(before) => run
            .history
            .context_at(before)
            .map_or(Value::Null, |c| c.to_json()),
        None => json!({}),
    };
    let mut out = json!({
        "id": node,
        "type": record.node_type,
        "index": record.index,
        "error": record.error,
        "context": context,
    });
    if let Some(input) = &record.input {
        out["input"] = input.clone();
    }
    out
}
