//! Runs: listed (filter by tool, status, start time), one with its history and per-node
//! timing, the context at any history index, and a run started with debug options.

use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcpflow_engine::{Breakpoint, Caller, Control, Event, RunEnd, RunRequest};
use mcpflow_store::{RunFilter, RunStatus as StoredStatus};
use serde_json::{Map, Value as Json, json};

use crate::Api;
use crate::debug::debug_json;
use crate::error::ApiError;
use crate::http::{Query, body_object, json_response, ok};
use crate::registry::LiveRun;

/// Statuses a run can be listed by: the registry's and the store's.
const STATUSES: [&str; 9] = [
    "running",
    "paused",
    "waiting",
    "succeeded",
    "failed",
    "stopped",
    "cancelled",
    "interrupted",
    "expired",
];

pub async fn list(State(api): State<Api>, RawQuery(raw): RawQuery) -> Response {
    match list_runs(&api, &Query::parse(raw.as_deref())).await {
        Ok(v) => ok(&v),
        Err(e) => e.into_response(),
    }
}

async fn list_runs(api: &Api, q: &Query) -> Result<Json, ApiError> {
    let tool = q.text("tool");
    let status = q.text("status");
    if let Some(s) = status
        && !STATUSES.contains(&s)
    {
        return Err(ApiError::bad_request(format!(
            "query parameter `status` must be one of {}, not {s:?}",
            STATUSES.join(", ")
        )));
    }
    let since = q.int("since", 0, i64::MAX)?;
    let until = q.int("until", 0, i64::MAX)?;
    let limit = q.int("limit", 1, 1000)?.unwrap_or(100) as usize;
    let runs = matching(api, tool, status, since, until, limit).await?;
    Ok(json!({ "runs": runs }))
}

/// The runs that match, newest first, at most `limit`: the registry's (live and kept) and
/// the store's. `status` is one of [`STATUSES`].
pub(crate) async fn matching(
    api: &Api,
    tool: Option<&str>,
    status: Option<&str>,
    since: Option<i64>,
    until: Option<i64>,
    limit: usize,
) -> Result<Vec<Json>, ApiError> {
    let keep = |t: &str, s: &str, started: i64| {
        tool.is_none_or(|x| x == t)
            && status.is_none_or(|x| x == s)
            && since.is_none_or(|x| started >= x)
            && until.is_none_or(|x| started <= x)
    };
    let mut seen = std::collections::HashSet::new();
    let mut runs = Vec::new();
    let stored = api.engine().durability().is_some();
    for r in api.registry().runs() {
        let s = r.status();
        // A waiting run is the store's to tell: it may have been cancelled or expired since.
        if stored && s == "waiting" {
            continue;
        }
        if keep(&r.tool, &s, r.started_at) {
            runs.push(r.summary());
        }
        seen.insert(r.id.to_string());
    }
    let engine = api.engine();
    if let Some(d) = engine.durability() {
        // `paused`, `stopped`: only live or in-memory runs have them.
        let stored_status = status.and_then(|s| s.parse::<StoredStatus>().ok());
        let only_memory = status.is_some() && stored_status.is_none();
        if !only_memory {
            let filter = RunFilter {
                status: stored_status,
                tool: tool.map(str::to_owned),
                limit: 1000,
                offset: 0,
            };
            let stored = d.store.list_runs(&filter).await.map_err(|e| {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "store", e.to_string())
            })?;
            for s in stored {
                if seen.contains(&s.id) || !keep(&s.tool, s.status.as_str(), s.started_at) {
                    continue;
                }
                runs.push(json!({
                    "id": s.id,
                    "tool": s.tool,
                    "status": s.status.as_str(),
                    "startedAt": s.started_at,
                    "endedAt": s.ended_at,
                    "live": false,
                    "startedBy": s.started_by,
                }));
            }
        }
    }
    runs.sort_by(|a, b| {
        let t = |v: &Json| v["startedAt"].as_i64().unwrap_or(0);
        t(b).cmp(&t(a))
    });
    runs.truncate(limit);
    Ok(runs)
}

/// A run's history as JSON records (engine records, or stored rows in the same shape).
pub(crate) struct Shown {
    summary: Map<String, Json>,
    pub(crate) records: Vec<Json>,
    complete: bool,
    live: Option<Arc<LiveRun>>,
    /// A live run's debug state, read before its records: never ahead of them.
    debug: Option<Json>,
}

/// The longest a reader waits for a live run's recorder to catch up with the run's control.
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether a run kept here as waiting has moved on since: cancelled or expired, which only the
/// store records (a continue registers the run anew). Then the store's is the run to show.
async fn moved_on(api: &Api, id: &str, run: &LiveRun) -> bool {
    let waiting = run.with_end(|end| end.is_some_and(|e| matches!(e.run.end, RunEnd::Waiting(_))));
    if !waiting {
        return false;
    }
    let engine = api.engine();
    let Some(d) = engine.durability() else {
        return false;
    };
    d.store
        .get_run(id)
        .await
        .is_ok_and(|stored| stored.summary.status.as_str() != "waiting")
}

pub(crate) async fn find(api: &Api, id: &str) -> Result<Shown, ApiError> {
    let kept = match api.registry().get(id) {
        Some(run) if moved_on(api, id, &run).await => None,
        other => other,
    };
    if let Some(run) = kept {
        let mut summary = match run.summary() {
            Json::Object(m) => m,
            _ => Map::new(),
        };
        let ended = run.with_end(|end| {
            end.map(|e| {
                let mut extra = Map::new();
                match &e.run.end {
                    RunEnd::Finished(Ok(v)) => {
                        extra.insert("result".into(), v.to_json());
                    }
                    RunEnd::Finished(Err(err)) => {
                        extra.insert(
                            "error".into(),
                            serde_json::to_value(err).unwrap_or_default(),
                        );
                    }
                    RunEnd::Waiting(w) => {
                        extra.insert("waiting".into(), w.to_json());
                    }
                }
                let records: Vec<Json> = e
                    .run
                    .history
                    .records()
                    .iter()
                    .map(|r| serde_json::to_value(r).unwrap_or_default())
                    .collect();
                (extra, records)
            })
        });
        let kept = ended.as_ref().is_some_and(|(_, r)| !r.is_empty());
        if let Some((extra, records)) = ended
            && kept
        {
            summary.extend(extra);
            return Ok(Shown {
                summary,
                records,
                complete: true,
                live: Some(run),
                debug: None,
            });
        }
        if run.is_live() || api.engine().durability().is_none() {
            // The pause first, then the records caught up with it: read the other way round,
            // a step taken in between shows a pause past the last record.
            let debug = run.is_live().then(|| debug_json(&run.control));
            run.caught_up(CATCH_UP).await;
            let (records, complete) = run.with_records(|records, from_start| {
                let records = records
                    .iter()
                    .map(|r| serde_json::to_value(r).unwrap_or_default())
                    .collect();
                (records, from_start)
            });
            return Ok(Shown {
                summary,
                records,
                complete,
                live: Some(run),
                debug,
            });
        }
    }
    let engine = api.engine();
    let Some(d) = engine.durability() else {
        return Err(ApiError::unknown_run(id));
    };
    let store_err = |e: mcpflow_store::StoreError| match e {
        mcpflow_store::StoreError::NotFound { .. } => ApiError::unknown_run(id),
        e => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "store", e.to_string()),
    };
    let run = d.store.get_run(id).await.map_err(store_err)?;
    let rows = d.store.get_records(id).await.map_err(store_err)?;
    let s = &run.summary;
    let mut summary = Map::new();
    summary.insert("id".into(), json!(s.id));
    summary.insert("tool".into(), json!(s.tool));
    summary.insert("status".into(), json!(s.status.as_str()));
    summary.insert("startedAt".into(), json!(s.started_at));
    summary.insert("endedAt".into(), json!(s.ended_at));
    summary.insert("live".into(), json!(false));
    summary.insert("startedBy".into(), json!(s.started_by));
    summary.insert("args".into(), run.args.clone());
    if let Some(r) = &run.result {
        summary.insert("result".into(), r.clone());
    }
    if let Some(e) = &run.error {
        summary.insert("error".into(), e.clone());
    }
    let records = rows
        .into_iter()
        .map(|r| {
            let mut o = json!({
                "index": r.index,
                "nodeId": r.node_id,
                "type": r.node_type,
                "startTime": r.start_ms,
                "endTime": r.end_ms,
                "durationMs": (r.end_ms - r.start_ms).max(0.0),
            });
            if let Some(i) = r.input {
                o["input"] = i;
            }
            if let Some(out) = r.output {
                o["output"] = out;
            }
            if let Some(e) = r.error {
                o["error"] = json!(e);
            }
            o
        })
        .collect();
    Ok(Shown {
        summary,
        records,
        complete: true,
        live: None,
        debug: None,
    })
}

pub async fn show(State(api): State<Api>, Path(id): Path<String>) -> Response {
    let shown = match find(&api, &id).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let mut timing: Vec<(String, u64, f64)> = Vec::new();
    let mut total = 0.0;
    for r in &shown.records {
        let d = r["durationMs"].as_f64().unwrap_or(0.0);
        let node = r["nodeId"].as_str().unwrap_or("");
        match timing.iter_mut().find(|t| t.0 == node) {
            Some(t) => {
                t.1 += 1;
                t.2 += d;
            }
            None => timing.push((node.to_owned(), 1, d)),
        }
        if r.get("parent").is_none() {
            total += d;
        }
    }
    let nodes: Map<String, Json> = timing
        .into_iter()
        .map(|(k, n, ms)| (k, json!({"executions": n, "totalMs": ms})))
        .collect();
    let mut out = shown.summary;
    if let Some(debug) = shown.debug {
        out.insert("debug".into(), debug);
    }
    out.insert("historyComplete".into(), json!(shown.complete));
    out.insert("history".into(), Json::Array(shown.records));
    out.insert(
        "timing".into(),
        json!({"mainFlowMs": total, "nodes": nodes}),
    );
    ok(&Json::Object(out))
}

pub async fn context(
    State(api): State<Api>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let q = Query::parse(raw.as_deref());
    let index = match q.int("index", 0, i64::from(u32::MAX)) {
        Ok(i) => i,
        Err(e) => return e.into_response(),
    };
    let shown = match find(&api, &id).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let Some(index) = index else {
        // Without an index: what the paused node reads, else the context after the last record.
        if let Some(run) = &shown.live
            && let Some(line) = run.control.state().paused.first()
        {
            return ok(&json!({
                "index": null,
                "pausedAt": {"index": line.index, "nodeId": line.node_id},
                "context": line.context,
            }));
        }
        let last = shown.records.last().and_then(|r| r["index"].as_i64());
        return ok(&json!({"index": last, "context": fold(&shown.records, last)}));
    };
    if !shown
        .records
        .iter()
        .any(|r| r["index"].as_i64() == Some(index))
    {
        return ApiError::not_found(format!(
            "run {id:?} has no history record {index}{}",
            if shown.complete {
                ""
            } else {
                " (recorded since it was first watched)"
            }
        ))
        .into_response();
    }
    ok(&json!({"index": index, "context": fold(&shown.records, Some(index))}))
}

/// Time travel over JSON records: the context right after the record numbered `upto`, as
/// [`History::context_at`](mcpflow_engine::History::context_at) computes it.
fn fold(records: &[Json], upto: Option<i64>) -> Json {
    let mut ctx = Map::new();
    for r in records {
        let node = r["nodeId"].as_str().unwrap_or("").to_owned();
        match r.get("output") {
            Some(out) => {
                ctx.insert(node, out.clone());
            }
            None => {
                ctx.shift_remove(&node);
            }
        }
        if r["index"].as_i64() == upto {
            break;
        }
    }
    Json::Object(ctx)
}

pub async fn start(
    State(api): State<Api>,
    caller: Option<Extension<Caller>>,
    body: Bytes,
) -> Response {
    match start_run(&api, &body, crate::caller(caller)).await {
        Ok(v) => json_response(StatusCode::CREATED, &v),
        Err(e) => e.into_response(),
    }
}

/// Breakpoints as the API writes them: `[{node, condition?}]`, checked against the tool.
pub(crate) fn breakpoint_of(
    node_ids: &[&str],
    node: &str,
    condition: Option<&Json>,
) -> Result<Breakpoint, ApiError> {
    if !node_ids.contains(&node) {
        return Err(ApiError::not_found(format!(
            "no node `{node}` in this tool; its nodes are: {}",
            node_ids.join(", ")
        )));
    }
    let condition = match condition {
        None | Some(Json::Null) => None,
        Some(Json::String(c)) => Some(c.as_str()),
        Some(_) => {
            return Err(ApiError::bad_request(
                "`condition` must be a JSONata string",
            ));
        }
    };
    Breakpoint::new(condition).map_err(|e| ApiError::bad_condition(node, &e))
}

async fn start_run(api: &Api, body: &[u8], caller: Caller) -> Result<Json, ApiError> {
    let body = body_object(body)?;
    let Some(Json::String(tool)) = body.get("tool") else {
        return Err(ApiError::bad_request(
            "`tool` (a graph tool's name) is required",
        ));
    };
    let args = match body.get("args") {
        None => Json::Object(Map::new()),
        Some(a @ Json::Object(_)) => a.clone(),
        Some(_) => return Err(ApiError::bad_request("`args` must be a JSON object")),
    };
    let engine = api.engine();
    let Some(graph) = engine.graph(tool) else {
        let known: Vec<&str> = engine.graphs().map(|g| g.name()).collect();
        return Err(ApiError::not_found(format!(
            "no graph tool `{tool}`; this server has: {}",
            known.join(", ")
        )));
    };
    if let Err(errors) = graph.input_validator().check(&args) {
        return Err(ApiError::bad_request(format!(
            "invalid arguments for `{tool}`: {}",
            errors.join("; ")
        )));
    }
    let control = Control::new();
    let node_ids: Vec<&str> = graph.node_ids().collect();
    match body.get("debug") {
        None | Some(Json::Null) => {}
        Some(Json::Object(debug)) => {
            match debug.get("pause") {
                None | Some(Json::Bool(false)) => {}
                Some(Json::Bool(true)) => control.pause(),
                Some(_) => return Err(ApiError::bad_request("`debug.pause` must be a boolean")),
            }
            match debug.get("breakpoints") {
                None => {}
                Some(Json::Array(list)) => {
                    for b in list {
                        let Some(node) = b.get("node").and_then(Json::as_str) else {
                            return Err(ApiError::bad_request(
                                "each of `debug.breakpoints` is `{node, condition?}`",
                            ));
                        };
                        let bp = breakpoint_of(&node_ids, node, b.get("condition"))?;
                        control.set_breakpoint(node, bp);
                    }
                }
                Some(_) => {
                    return Err(ApiError::bad_request(
                        "`debug.breakpoints` must be an array",
                    ));
                }
            }
        }
        Some(_) => return Err(ApiError::bad_request("`debug` must be an object")),
    }
    // Taken here, not in the spawned run, so a refusal is this request's 429.
    let slot = caller
        .admit()
        .map_err(|busy| ApiError::too_many_runs(busy.to_string()))?;
    let tx = api.registry().starting();
    let mut handle = engine.spawn(
        RunRequest::new(tool.clone(), args)
            .with_control(control.clone())
            .with_events(Some(tx.clone()))
            .with_caller(caller)
            .with_slot(slot),
    );
    let mut rx = handle.events();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _ = done_tx.send(handle.wait().await);
    });
    // The run's id is the one its first event carries (a durable run's is the store's).
    let started = async {
        loop {
            match rx.recv().await {
                Ok(Event::RunStarted { run_id, .. }) => return Some(run_id),
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => return None,
            }
        }
    };
    let id = tokio::select! {
        // A run that starts and ends at once has both ready: its start comes first.
        biased;
        id = started => id,
        run = done_rx => {
            // It ended before this task read its start: the start is still in the channel
            // (or, if the run outran the channel, its history shows it ran).
            let mut seen = None;
            loop {
                match rx.try_recv() {
                    Ok(Event::RunStarted { run_id, .. }) => {
                        seen = Some(run_id);
                        break;
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => {}
                    Err(_) => break,
                }
            }
            let ran = run.ok();
            match (seen, ran) {
                (Some(id), _) => Some(id),
                (None, Some(r)) if !r.history.is_empty() => Some(r.id.clone()),
                (None, ran) => {
                    api.registry().not_started(&tx);
                    let why = ran.and_then(|r| r.error().map(ToString::to_string));
                    return Err(ApiError::bad_request(format!(
                        "the run of `{tool}` did not start: {}",
                        why.unwrap_or_else(|| "it ended before its first node".to_owned())
                    )));
                }
            }
        }
        () = tokio::time::sleep(Duration::from_secs(30)) => None,
    };
    let Some(id) = id else {
        api.registry().not_started(&tx);
        return Err(ApiError::internal("the run did not report its start"));
    };
    Ok(json!({
        "id": &*id,
        "tool": tool,
        "status": if control.is_paused() { "paused" } else { "running" },
        "debug": debug_json(&control),
        "links": {
            "self": format!("/api/runs/{id}"),
            "events": format!("/api/runs/{id}/events"),
        },
    }))
}
