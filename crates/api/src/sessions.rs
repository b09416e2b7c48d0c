//! Waiting sessions (runs suspended at an await node): listed, continued with the client's
//! input, or cancelled, through the engine's session API.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcpflow_engine::{Caller, RunEnd, RunRequest};
use mcpflow_store::{SessionFilter, SessionStatus, StoreError};
use serde_json::{Value as Json, json};

use crate::Api;
use crate::error::ApiError;
use crate::http::{Query, body_object, ok};
use crate::registry::status_name;

fn store_error(e: StoreError) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "store", e.to_string())
}

fn session_json(s: &mcpflow_store::Session) -> Json {
    json!({
        "id": s.id,
        "runId": s.run_id,
        "tool": s.tool,
        "nodeId": s.node_id,
        "status": s.status.to_string(),
        "inputSchema": s.input_schema,
        "createdAt": s.created_at,
        "expiresAt": s.expires_at,
        "startedBy": s.started_by,
    })
}

/// The sessions the caller may act on (its own; every one for an admin): another principal's
/// is not even listed.
pub async fn list(
    State(api): State<Api>,
    caller: Option<Extension<Caller>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let caller = crate::caller(caller);
    let q = Query::parse(raw.as_deref());
    let listed = async {
        let limit = q.int("limit", 1, 1000)?.unwrap_or(100) as u32;
        let status = match q.text("status") {
            None => None,
            Some(s) => Some(s.parse::<SessionStatus>().map_err(|_| {
                ApiError::bad_request(format!(
                    "query parameter `status` must be a session status (waiting, claimed, \
                     completed, cancelled, expired, interrupted), not {s:?}"
                ))
            })?),
        };
        let engine = api.engine();
        let Some(d) = engine.durability() else {
            return Ok(json!({"sessions": []}));
        };
        let filter = SessionFilter {
            status,
            run_id: None,
            limit,
            offset: 0,
        };
        let sessions = d.store.list_sessions(&filter).await.map_err(store_error)?;
        let tool = q.text("tool");
        let sessions: Vec<Json> = sessions
            .iter()
            .filter(|s| tool.is_none_or(|t| t == s.tool))
            .filter(|s| caller.may_act_for(s.started_by.as_deref()))
            .map(session_json)
            .collect();
        Ok::<_, ApiError>(json!({ "sessions": sessions }))
    };
    match listed.await {
        Ok(v) => ok(&v),
        Err(e) => e.into_response(),
    }
}

async fn tool_of(api: &Api, id: &str) -> Result<String, ApiError> {
    let engine = api.engine();
    let d = engine.durability().ok_or_else(|| {
        ApiError::not_found(format!(
            "no session {id:?}: this server keeps no sessions (no store)"
        ))
    })?;
    match d.store.get_session(id).await {
        Ok(s) => Ok(s.tool),
        Err(StoreError::NotFound { .. }) => Err(ApiError::not_found(format!(
            "no session {id:?}: it never existed, or it was purged"
        ))),
        Err(e) => Err(store_error(e)),
    }
}

pub async fn continue_session(
    State(api): State<Api>,
    Path(id): Path<String>,
    caller: Option<Extension<Caller>>,
    body: Bytes,
) -> Response {
    let caller = crate::caller(caller);
    let continued = async {
        let body = body_object(&body)?;
        let input = body
            .get("input")
            .cloned()
            .unwrap_or(Json::Object(Default::default()));
        let tool = tool_of(&api, &id).await?;
        let run = api
            .engine()
            .continue_session(RunRequest::new(tool, input).with_caller(caller), &id)
            .await?;
        let mut out =
            json!({"runId": &*run.id, "tool": &*run.tool, "status": status_name(run.status)});
        match &run.end {
            RunEnd::Finished(Ok(v)) => out["result"] = v.to_json(),
            RunEnd::Finished(Err(e)) => out["error"] = serde_json::to_value(e).unwrap_or_default(),
            RunEnd::Waiting(w) => out["waiting"] = w.to_json(),
        }
        Ok::<_, ApiError>(out)
    };
    match continued.await {
        Ok(v) => ok(&v),
        Err(e) => e.into_response(),
    }
}

pub async fn cancel_session(
    State(api): State<Api>,
    Path(id): Path<String>,
    caller: Option<Extension<Caller>>,
) -> Response {
    let caller = crate::caller(caller);
    let cancelled = async {
        let tool = tool_of(&api, &id).await?;
        let session = api.engine().cancel_session(&tool, &id, &caller).await?;
        Ok::<_, ApiError>(session_json(&session))
    };
    match cancelled.await {
        Ok(v) => ok(&v),
        Err(e) => e.into_response(),
    }
}
