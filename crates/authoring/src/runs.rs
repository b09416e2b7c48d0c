//! Runs, for debugging by the model (`mcpflow_list_runs`, `mcpflow_get_run`): recent runs of a
//! tool, one run's history, and the context an expression saw at any index of it (time
//! travel). From the store when the engine has one (runs of every client, durable or recorded
//! at their end), and from memory: the runs made through `mcpflow_run_tool`, inline
//! definitions included (those never reach a store).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use mcpflow_engine::Run;
use mcpflow_store::{RunFilter, RunStatus};
use serde_json::{Value, json};

use crate::Served;
use crate::answer::Answer;
use crate::args::{Args, Malformed};
use crate::tools::Spec;

/// Runs kept in memory.
const KEEP: usize = 32;

/// The latest runs made through the authoring tools, newest last.
#[derive(Default)]
pub(crate) struct Recent {
    runs: Mutex<VecDeque<Arc<Run>>>,
}

impl Recent {
    pub(crate) fn keep(&self, run: Arc<Run>) {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        if runs.len() == KEEP {
            runs.pop_front();
        }
        runs.push_back(run);
    }

    fn snapshot(&self) -> Vec<Arc<Run>> {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.iter().rev().cloned().collect()
    }

    fn find(&self, id: &str) -> Option<Arc<Run>> {
        self.snapshot().into_iter().find(|r| &*r.id == id)
    }
}

fn status_name(run: &Run) -> Value {
    serde_json::to_value(run.status).unwrap_or(Value::Null)
}

pub(crate) async fn list(served: &Served, recent: &Recent, spec: &Spec, args: &Args<'_>) -> Answer {
    let tool = args.str("tool");
    let status = match args.str("status") {
        None => None,
        Some(s) => match s.parse::<RunStatus>() {
            Ok(s) => Some(s),
            Err(_) => {
                let known: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
                return Malformed::new(
                    spec,
                    format!(
                        "unknown status \"{s}\"; the statuses are: {}",
                        known.join(", ")
                    ),
                )
                .into();
            }
        },
    };
    let limit = args
        .integer("limit")
        .map_or(20, |l| l.clamp(1, 100) as usize);
    let mut runs: Vec<Value> = recent
        .snapshot()
        .iter()
        .filter(|r| tool.is_none_or(|t| &*r.tool == t))
        .filter(|r| status.is_none_or(|s| status_name(r) == s.as_str()))
        .map(|r| {
            json!({
                "runId": &*r.id,
                "tool": &*r.tool,
                "status": status_name(r),
                "startedAt": r.history.records().first().map(|x| x.start_time),
                "nodesExecuted": r.history.len(),
                "source": "memory",
            })
        })
        .collect();
    let mut out = json!({});
    if let Some(d) = served.engine.durability() {
        let filter = RunFilter {
            status,
            tool: tool.map(str::to_owned),
            limit: limit as u32,
            offset: 0,
        };
        match d.store.list_runs(&filter).await {
            Ok(stored) => {
                for s in stored {
                    if runs.iter().any(|r| r["runId"] == s.id) {
                        continue;
                    }
                    runs.push(json!({
                        "runId": s.id,
                        "tool": s.tool,
                        "status": s.status.as_str(),
                        "startedAt": s.started_at,
                        "endedAt": s.ended_at,
                        "source": "store",
                    }));
                }
            }
            Err(e) => out["storeError"] = json!(e.to_string()),
        }
    } else {
        out["note"] = json!(
            "no store is attached: only runs made through mcpflow_run_tool since the server started are listed"
        );
    }
    runs.truncate(limit);
    out["runs"] = json!(runs);
    out["next"] = json!(
        "mcpflow_get_run {\"runId\": ..., \"index\": n} shows a run and the context at record n"
    );
    Answer::Ok(out)
}

pub(crate) async fn get(served: &Served, recent: &Recent, spec: &Spec, args: &Args<'_>) -> Answer {
    let id = args.str("runId").unwrap_or_default();
    let index = args.integer("index").map(|i| i as usize);
    if let Some(run) = recent.find(id) {
        let mut out = crate::run::describe(&run, true);
        out["source"] = json!("memory");
        if let Some(i) = index {
            match run.history.context_at(i) {
                Some(ctx) => {
                    out["contextAt"] = json!({"index": i, "context": ctx.to_json(), "note": "what the node after record `index` read"});
                }
                None => return out_of_range(spec, i, run.history.len()),
            }
        }
        return Answer::Ok(out);
    }
    let Some(d) = served.engine.durability() else {
        return Malformed::new(
            spec,
            format!("no run with id \"{id}\" among the runs kept in memory (no store is attached); mcpflow_list_runs lists them"),
        )
        .into();
    };
    let run = match d.store.get_run(id).await {
        Ok(r) => r,
        Err(e) => {
            return Malformed::new(spec, format!("{e}; mcpflow_list_runs lists the runs")).into();
        }
    };
    let records = match d.store.get_records(id).await {
        Ok(r) => r,
        Err(e) => return Answer::Refused(format!("cannot read the history of run \"{id}\": {e}")),
    };
    let mut out = json!({
        "run": run,
        "source": "store",
        "history": records.iter().map(|r| json!({
            "index": r.index,
            "nodeId": r.node_id,
            "type": r.node_type,
            "durationMs": r.end_ms - r.start_ms,
            "input": r.input,
            "output": r.output,
            "error": r.error,
            "parent": r.parent,
        })).collect::<Vec<_>>(),
    });
    if let Some(i) = index {
        if i >= records.len() {
            return out_of_range(spec, i, records.len());
        }
        // Time travel as the engine's History::context_at does it: each node's latest output.
        let mut ctx = serde_json::Map::new();
        for r in &records[..=i] {
            match &r.output {
                Some(v) => {
                    ctx.insert(r.node_id.clone(), v.clone());
                }
                None => {
                    ctx.shift_remove(&r.node_id);
                }
            }
        }
        out["contextAt"] =
            json!({"index": i, "context": ctx, "note": "what the node after record `index` read"});
    }
    Answer::Ok(out)
}

fn out_of_range(spec: &Spec, index: usize, len: usize) -> Answer {
    Malformed::new(
        spec,
        format!(
            "`index` {index} is out of range: the run has {len} records (indices 0 to {})",
            len.saturating_sub(1)
        ),
    )
    .into()
}
