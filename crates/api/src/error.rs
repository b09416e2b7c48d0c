//! [`ApiError`]: every refusal as `{error: {code, message}}` with its status (404 for an
//! unknown run, node, tool or session; 400 for bad input; 403 for another principal's run or
//! session; 409 for an action that does not
//! apply to the run's state or a tool changed on disk; 422 for a definition that does not pass
//! the checks), and, for a broken expression, where in it the problem is, for a definition,
//! its problems.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcpflow_engine::SessionError;
use serde_json::json;

use crate::http::json_response;

/// `Retry-After` of a 429; the same as `mcpflow_auth::RUNS_RETRY_AFTER_SECONDS` (this crate
/// does not depend on access control).
const RUNS_RETRY_AFTER_SECONDS: u64 = 1;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// For an expression that does not compile: its error code and character position.
    pub expression: Option<(Option<String>, Option<usize>)>,
    /// For a definition that does not pass the checks: every problem, each at its path.
    pub problems: Option<Vec<serde_json::Value>>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            expression: None,
            problems: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// Another principal's run or session (issue #18): what it is stays untold.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// 429: the caller has as many runs in flight as it may (`maxConcurrentRuns`, issue #18);
    /// answered with `Retry-After`, as access control answers such an MCP call.
    pub fn too_many_runs(message: impl Into<String>) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, "too_many_runs", message)
    }

    pub fn unknown_run(id: &str) -> Self {
        Self::not_found(format!(
            "no run {id:?}: it never existed here, or it was purged (GET /api/runs lists them)"
        ))
    }

    /// A breakpoint condition that does not compile: the JSONata error, its code and position.
    pub fn bad_condition(node: &str, e: &mcpflow_engine::ExprError) -> Self {
        let mut err = Self::new(
            StatusCode::BAD_REQUEST,
            "bad_condition",
            format!("the breakpoint condition on node `{node}` is not valid JSONata: {e}"),
        );
        err.expression = Some((e.code.clone(), e.position));
        err
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> Self {
        let message = e.to_string();
        match e {
            SessionError::Unknown(_) | SessionError::NoStore => ApiError::not_found(message),
            SessionError::InvalidInput { .. } | SessionError::WrongTool { .. } => {
                ApiError::bad_request(message)
            }
            SessionError::Expired { .. }
            | SessionError::Ended { .. }
            | SessionError::Busy(_)
            | SessionError::ConfigChanged { .. }
            | SessionError::MigrationRequired { .. } => ApiError::conflict(message),
            SessionError::NotYours(_) => ApiError::forbidden(message),
            SessionError::TooManyRuns(_) => ApiError::too_many_runs(message),
            SessionError::Store(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "store", message)
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some((code, position)) = self.expression {
            error["expressionCode"] = json!(code);
            error["position"] = json!(position);
        }
        if let Some(problems) = self.problems {
            error["problems"] = json!(problems);
        }
        let mut response = json_response(self.status, &json!({ "error": error }));
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            // When a run ends is unknown: a second, as `mcpflow_auth` says for MCP calls.
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(RUNS_RETRY_AFTER_SECONDS),
            );
        }
        response
    }
}

/// Longest refusal text of axum's carried into the JSON error.
const REFUSAL_TEXT_BYTES: usize = 4096;

/// What axum refuses by itself (a path parameter that is not UTF-8, a method a route does not
/// have) as plain text, answered in this API's `{error: {code, message}}` shape with the same
/// status.
pub async fn as_json(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/event-stream"));
    if is_json || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let allow = response.headers().get(axum::http::header::ALLOW).cloned();
    let text = match axum::body::to_bytes(response.into_body(), REFUSAL_TEXT_BYTES).await {
        Ok(bytes) if !bytes.is_empty() => String::from_utf8_lossy(&bytes).into_owned(),
        _ => status.canonical_reason().unwrap_or("refused").to_owned(),
    };
    let code = match status {
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        s if s.is_server_error() => "internal",
        _ => "bad_request",
    };
    let mut answer = ApiError::new(status, code, text).into_response();
    if let Some(allow) = allow {
        answer
            .headers_mut()
            .insert(axum::http::header::ALLOW, allow);
    }
    answer
}
