//! Debug control of a live run over HTTP: pause, resume, step, stop, and breakpoints (with
//! an optional JSONata condition) set and cleared while it runs. Any live run can be
//! controlled, whoever started it; an action that does not apply to the run's state is 409.
//! A run this replica does not hold is controlled on the replica that does (`fleet.rs`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcpflow_engine::Control;
use serde_json::{Value as Json, json};

use crate::Api;
use crate::error::ApiError;
use crate::fleet::Action;
use crate::http::{body_object, json_response, ok};
use crate::registry::LiveRun;
use crate::runs::breakpoint_of;

/// A run's debug state as the API shows it.
pub(crate) fn debug_json(control: &Control) -> Json {
    let state = control.state();
    let breakpoints: Vec<Json> = state
        .breakpoints
        .iter()
        .map(|(node, b)| match &b.condition {
            Some(c) => json!({"node": node, "condition": c}),
            None => json!({"node": node}),
        })
        .collect();
    json!({
        "breakpoints": breakpoints,
        "paused": state.paused,
        "stopped": state.stopped,
    })
}

/// The live run `id`, or 404 (unknown) / 409 (it has ended).
fn live(api: &Api, id: &str, action: &str) -> Result<Arc<LiveRun>, ApiError> {
    let Some(run) = api.registry().get(id) else {
        return Err(ApiError::unknown_run(id));
    };
    if !run.is_live() {
        return Err(ApiError::conflict(format!(
            "run {id:?} has ended ({}): only a live run can be asked to {action}",
            run.status()
        )));
    }
    Ok(run)
}

/// A live run, 404 for an id the store knows but that is not live here.
async fn live_or_known(api: &Api, id: &str, action: &str) -> Result<Arc<LiveRun>, ApiError> {
    match live(api, id, action) {
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            if let Some(d) = api.engine().durability()
                && let Ok(run) = d.store.get_run(id).await
            {
                return Err(ApiError::conflict(format!(
                    "run {id:?} is not running in this process ({}): only a live run can be \
                     asked to {action}",
                    run.summary.status
                )));
            }
            Err(e)
        }
        other => other,
    }
}

/// The answer of the replica holding run `id`, when this one does not hold it and another
/// one does.
async fn elsewhere(
    api: &Api,
    id: &str,
    action: Action,
    node: Option<&str>,
    body: &[u8],
) -> Option<Response> {
    if api.registry().get(id).is_some() {
        return None;
    }
    crate::fleet::control(api, id, action, node, body).await
}

fn answer(run: &LiveRun) -> Response {
    ok(&json!({"id": &*run.id, "status": run.status(), "debug": debug_json(&run.control)}))
}

pub async fn pause(State(api): State<Api>, Path(id): Path<String>) -> Response {
    if let Some(remote) = elsewhere(&api, &id, Action::Pause, None, &[]).await {
        return remote;
    }
    match live_or_known(&api, &id, "pause").await {
        Ok(run) => {
            run.control.pause();
            answer(&run)
        }
        Err(e) => e.into_response(),
    }
}

async fn when_paused(api: &Api, id: &str, action: &str) -> Result<Arc<LiveRun>, ApiError> {
    let run = live_or_known(api, id, action).await?;
    if !run.control.is_paused() {
        return Err(ApiError::conflict(format!(
            "run {id:?} is not paused: it can only {action} from a pause (POST \
             /api/runs/{id}/pause, or set a breakpoint)"
        )));
    }
    Ok(run)
}

pub async fn resume(State(api): State<Api>, Path(id): Path<String>) -> Response {
    if let Some(remote) = elsewhere(&api, &id, Action::Resume, None, &[]).await {
        return remote;
    }
    match when_paused(&api, &id, "resume").await {
        Ok(run) => {
            run.control.resume();
            answer(&run)
        }
        Err(e) => e.into_response(),
    }
}

pub async fn step(State(api): State<Api>, Path(id): Path<String>) -> Response {
    if let Some(remote) = elsewhere(&api, &id, Action::Step, None, &[]).await {
        return remote;
    }
    match when_paused(&api, &id, "step").await {
        Ok(run) => {
            run.control.step();
            answer(&run)
        }
        Err(e) => e.into_response(),
    }
}

pub async fn stop(State(api): State<Api>, Path(id): Path<String>) -> Response {
    if let Some(remote) = elsewhere(&api, &id, Action::Stop, None, &[]).await {
        return remote;
    }
    match live_or_known(&api, &id, "stop").await {
        Ok(run) => {
            run.control.stop();
            answer(&run)
        }
        Err(e) => e.into_response(),
    }
}

pub async fn breakpoints(State(api): State<Api>, Path(id): Path<String>) -> Response {
    match api.registry().get(&id) {
        Some(run) => ok(&debug_json(&run.control)["breakpoints"]),
        None => ApiError::unknown_run(&id).into_response(),
    }
}

pub async fn set_breakpoint(
    State(api): State<Api>,
    Path((id, node)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    if let Some(remote) =
        elsewhere(&api, &id, Action::SetBreakpoint, Some(node.as_str()), &body).await
    {
        return remote;
    }
    let set = async {
        let run = live_or_known(&api, &id, "take a breakpoint").await?;
        let body = body_object(&body)?;
        let engine = api.engine();
        let graph = engine.graph(&run.tool).ok_or_else(|| {
            ApiError::conflict(format!(
                "tool `{}` of run {id:?} is no longer served (the config was reloaded)",
                run.tool
            ))
        })?;
        let node_ids: Vec<&str> = graph.node_ids().collect();
        let bp = breakpoint_of(&node_ids, &node, body.get("condition"))?;
        run.control.set_breakpoint(&node, bp);
        Ok::<_, ApiError>(run)
    };
    match set.await {
        Ok(run) => answer(&run),
        Err(e) => e.into_response(),
    }
}

pub async fn clear_breakpoint(
    State(api): State<Api>,
    Path((id, node)): Path<(String, String)>,
) -> Response {
    if let Some(remote) =
        elsewhere(&api, &id, Action::ClearBreakpoint, Some(node.as_str()), &[]).await
    {
        return remote;
    }
    let run = match live_or_known(&api, &id, "clear a breakpoint").await {
        Ok(run) => run,
        Err(e) => return e.into_response(),
    };
    if run.control.remove_breakpoint(&node) {
        json_response(
            StatusCode::OK,
            &json!({"id": &*run.id, "debug": debug_json(&run.control)}),
        )
    } else {
        ApiError::not_found(format!("run {id:?} has no breakpoint on node `{node}`"))
            .into_response()
    }
}
