//! The REST face of the MCP endpoint (issue #18, after seed 003): the tools a caller may see,
//! one of them, a call with a plain JSON body answered with its result and
//! `processingTimeMs`, and health, for clients that speak HTTP and JSON but not MCP.
//!
//! A REST call is not a second way to call a tool: each request is handed to [`McpEndpoint`],
//! which `server` implements by sending one MCP request to its own MCP endpoint as the REST
//! request's caller. So a call meets what an MCP `tools/call` meets (hidden tools refused as
//! unknown, hooks, the gateway or the engine, runs in flight, the audit line, metrics,
//! `$caller`), and this module only turns the outcome into plain JSON and an HTTP status: it
//! frames no MCP message and knows no scope (the endpoint table in `mcpflow_auth` does).
//!
//! Statuses say whether the call was made: 200 when the tool answered, even with an error
//! (`isError`, as MCP reports a tool's failure); 400, 404, 429 when it was refused before it
//! ran; 502 when the MCP endpoint failed to answer.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::future::BoxFuture;
use serde_json::{Map, Value as Json, json};

use crate::error::ApiError;
use crate::http::{json_response, ok};

/// Where the REST face lives; versioned apart from the run API, since non-MCP clients are
/// built against it.
pub const PREFIX: &str = "/rest/v1";

/// This server's MCP endpoint, as the REST face asks it. Each method takes the REST request's
/// head, whose extensions carry who calls (what access control put there) and whose headers
/// carry its Host and trace context, and answers for that caller only.
pub trait McpEndpoint: Send + Sync + 'static {
    /// The tools the caller sees, as `tools/list` gives them (name, description,
    /// inputSchema, outputSchema, …).
    fn list_tools(&self, request: &Parts) -> BoxFuture<'static, Result<Vec<Json>, Refusal>>;

    /// One `tools/call` with `arguments`.
    fn call_tool(
        &self,
        request: &Parts,
        tool: &str,
        arguments: Map<String, Json>,
    ) -> BoxFuture<'static, Result<ToolAnswer, Refusal>>;

    /// Whether the server can do its job (what `/readyz` says): `Ok` with a note (empty for
    /// none), or why not.
    fn health(&self) -> BoxFuture<'static, Result<String, String>>;
}

/// How a tool answered a call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    /// The tool reported a failure (its arguments did not match, its run failed, a hook
    /// rejected the call, an upstream answered an error).
    pub is_error: bool,
    /// Its result as JSON: a graph tool's output whatever its type, another tool's structured
    /// result when it gave one, else its content blocks.
    pub result: Json,
    /// The text of an error's content, for a client that only wants to show it.
    pub error: Option<String>,
    /// The run waits for input (an `await` node): its session id and run id.
    pub waiting: Option<Waiting>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub session_id: String,
    pub run_id: Option<String>,
}

/// Why a request got no answer from a tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// No such tool, or one hidden from the caller: the two are told apart by nothing.
    UnknownTool(String),
    /// The caller has as many runs in flight as it may.
    TooManyRuns(String),
    /// The request, as MCP reads it, is not valid.
    Invalid(String),
    /// The MCP endpoint did not answer the request (an internal error, a broken upstream).
    Failed(String),
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::UnknownTool(m) => ApiError::new(StatusCode::NOT_FOUND, "unknown_tool", m),
            Refusal::TooManyRuns(m) => ApiError::too_many_runs(m),
            Refusal::Invalid(m) => ApiError::bad_request(m),
            Refusal::Failed(m) => ApiError::new(StatusCode::BAD_GATEWAY, "mcp_error", m),
        }
    }
}

type Endpoint = Arc<dyn McpEndpoint>;

/// The REST face's routes, under [`PREFIX`], over `endpoint`.
pub fn router(endpoint: Arc<dyn McpEndpoint>) -> Router {
    Router::new()
        .route(&format!("{PREFIX}/tools"), get(list))
        .route(&format!("{PREFIX}/tools/{{name}}"), get(one))
        .route(&format!("{PREFIX}/tools/{{name}}/call"), post(call))
        .route(&format!("{PREFIX}/health"), get(health))
        .layer(axum::middleware::map_response(crate::error::as_json))
        .with_state(endpoint)
}

async fn list(State(endpoint): State<Endpoint>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    match endpoint.list_tools(&parts).await {
        Ok(tools) => ok(&json!({ "tools": tools })),
        Err(r) => ApiError::from(r).into_response(),
    }
}

async fn one(
    State(endpoint): State<Endpoint>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    let (parts, _) = request.into_parts();
    let tools = match endpoint.list_tools(&parts).await {
        Ok(tools) => tools,
        Err(r) => return ApiError::from(r).into_response(),
    };
    match tools.into_iter().find(|t| t["name"] == name.as_str()) {
        Some(tool) => ok(&tool),
        None => unknown(&name).into_response(),
    }
}

/// The same words for a tool that does not exist and for one the caller may not see.
fn unknown(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_tool",
        format!("unknown tool `{name}` (GET {PREFIX}/tools lists the tools you may call)"),
    )
}

async fn call(
    State(endpoint): State<Endpoint>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    // The listener's guard has read and bounded the body: this takes it from memory.
    let arguments = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => arguments(&bytes),
        Err(e) => Err(ApiError::bad_request(format!(
            "the request body could not be read: {e}"
        ))),
    };
    let arguments = match arguments {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    let started = Instant::now();
    let answer = endpoint.call_tool(&parts, &name, arguments).await;
    let took = started.elapsed();
    match answer {
        Ok(answer) => ok(&answer_json(&name, answer, took)),
        Err(r) => ApiError::from(r).into_response(),
    }
}

/// The body of a call: the tool's arguments, a JSON object (an empty body is `{}`).
fn arguments(body: &[u8]) -> Result<Map<String, Json>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(body) {
        Ok(Json::Object(map)) => Ok(map),
        Ok(other) => Err(ApiError::bad_request(format!(
            "the request body must be a JSON object, the tool's arguments (e.g. {{\"text\": \
             \"hi\"}}), not {}",
            kind(&other)
        ))),
        Err(e) => Err(ApiError::bad_request(format!(
            "the request body is not valid JSON ({e}); send the tool's arguments as a JSON object"
        ))),
    }
}

fn kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// `{tool, isError, result, processingTimeMs}`, with `error` for a tool error and, for a run
/// that waits, `runId` and `session` (where to continue or cancel it over the run API).
fn answer_json(tool: &str, answer: ToolAnswer, took: std::time::Duration) -> Json {
    // Milliseconds to the microsecond: a call served from memory takes well under one.
    let ms = (took.as_secs_f64() * 1e6).round() / 1e3;
    let mut out = json!({
        "tool": tool,
        "isError": answer.is_error,
        "result": answer.result,
        "processingTimeMs": ms,
    });
    if let Some(error) = answer.error {
        out["error"] = json!(error);
    }
    if let Some(w) = answer.waiting {
        if let Some(run) = w.run_id {
            out["runId"] = json!(run);
        }
        let id = &w.session_id;
        out["session"] = json!({
            "id": id,
            "continue": format!("/api/sessions/{id}/continue"),
            "cancel": format!("/api/sessions/{id}/cancel"),
        });
    }
    out
}

async fn health(State(endpoint): State<Endpoint>) -> Response {
    match endpoint.health().await {
        Ok(note) if note.is_empty() => ok(&json!({"healthy": true})),
        Ok(note) => ok(&json!({"healthy": true, "note": note})),
        Err(why) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"healthy": false, "error": why}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_body_is_an_object_of_arguments() {
        assert_eq!(arguments(b"  ").expect("empty"), Map::new());
        assert_eq!(arguments(br#"{"a": 1}"#).expect("object")["a"], json!(1));
        for (body, says) in [
            (&b"[1]"[..], "not an array"),
            (b"42", "not a number"),
            (b"{", "not valid JSON"),
        ] {
            let e = arguments(body).expect_err("refused");
            assert_eq!(e.status, StatusCode::BAD_REQUEST);
            assert!(e.message.contains(says), "{}", e.message);
        }
    }

    #[test]
    fn a_waiting_run_points_to_its_session() {
        let answer = ToolAnswer {
            is_error: false,
            result: json!({"status": "waiting", "sessionId": "s1"}),
            error: None,
            waiting: Some(Waiting {
                session_id: "s1".into(),
                run_id: Some("r1".into()),
            }),
        };
        let out = answer_json("approve", answer, std::time::Duration::from_micros(1500));
        assert_eq!(out["processingTimeMs"], json!(1.5));
        assert_eq!(out["runId"], "r1");
        assert_eq!(out["session"]["continue"], "/api/sessions/s1/continue");
        assert!(out.get("error").is_none());
    }
}
