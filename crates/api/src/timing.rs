//! `GET /api/tools/{tool}/timing`: where a graph tool's time goes over its recent runs (issue
//! #17's "the slowest nodes of a tool over its recent runs marked"). The tool's last ended
//! runs (the registry's and the store's, as `GET /api/runs` lists them), each read as
//! `GET /api/runs/{id}` reads it, and each node's executions and time summed over them, the
//! slowest first. Measured time is the records' own (`durationMs`), nothing timed here.

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value as Json, json};

use crate::Api;
use crate::error::ApiError;
use crate::http::{Query, ok};
use crate::runs;

/// The statuses of a run that has ended: its history will not grow.
const ENDED: [&str; 6] = [
    "succeeded",
    "failed",
    "stopped",
    "cancelled",
    "interrupted",
    "expired",
];

/// How many runs are read by default, and at most (each is read whole).
const DEFAULT_RUNS: i64 = 20;
const MAX_RUNS: i64 = 100;

pub async fn tool_timing(
    State(api): State<Api>,
    Path(tool): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    match timing(&api, &tool, &Query::parse(raw.as_deref())).await {
        Ok(v) => ok(&v),
        Err(e) => e.into_response(),
    }
}

/// One node's time over the runs read.
#[derive(Default)]
struct NodeTime {
    /// In how many of the runs it ran at all.
    runs: u64,
    executions: u64,
    total_ms: f64,
    /// Its longest single execution.
    max_ms: f64,
}

async fn timing(api: &Api, tool: &str, q: &Query) -> Result<Json, ApiError> {
    let wanted = q.int("runs", 1, MAX_RUNS)?.unwrap_or(DEFAULT_RUNS) as usize;
    let engine = api.engine();
    if engine.graph(tool).is_none() {
        let known: Vec<&str> = engine.graphs().map(|g| g.name()).collect();
        return Err(ApiError::not_found(format!(
            "no graph tool `{tool}`; this server has: {}",
            known.join(", ")
        )));
    }
    let listed = runs::matching(api, Some(tool), None, None, None, 1000).await?;
    let ended = listed
        .iter()
        .filter(|r| r["status"].as_str().is_some_and(|s| ENDED.contains(&s)))
        .filter_map(|r| r["id"].as_str());
    let mut nodes: Vec<(String, NodeTime)> = Vec::new();
    let mut read = 0usize;
    for id in ended {
        if read == wanted {
            break;
        }
        // A run deleted by retention since it was listed is skipped, not an error.
        let Ok(shown) = runs::find(api, id).await else {
            continue;
        };
        read += 1;
        let mut seen: Vec<usize> = Vec::new();
        for r in &shown.records {
            let Some(node) = r["nodeId"].as_str() else {
                continue;
            };
            let ms = r["durationMs"].as_f64().unwrap_or(0.0).max(0.0);
            let at = match nodes.iter().position(|(n, _)| n == node) {
                Some(at) => at,
                None => {
                    nodes.push((node.to_owned(), NodeTime::default()));
                    nodes.len() - 1
                }
            };
            let t = &mut nodes[at].1;
            t.executions += 1;
            t.total_ms += ms;
            t.max_ms = t.max_ms.max(ms);
            if !seen.contains(&at) {
                seen.push(at);
                t.runs += 1;
            }
        }
    }
    nodes.sort_by(|a, b| b.1.total_ms.total_cmp(&a.1.total_ms).then(a.0.cmp(&b.0)));
    let per_run = |ms: f64| if read == 0 { 0.0 } else { ms / read as f64 };
    let nodes: Vec<Json> = nodes
        .into_iter()
        .map(|(node, t)| {
            json!({
                "node": node,
                "runs": t.runs,
                "executions": t.executions,
                "totalMs": t.total_ms,
                "meanMsPerRun": per_run(t.total_ms),
                "maxMs": t.max_ms,
            })
        })
        .collect();
    Ok(json!({"tool": tool, "runs": read, "nodes": nodes}))
}
