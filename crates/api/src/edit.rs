//! The graph editor's endpoints (issue #17, the web UI's Edit): a tool as it is on disk, a
//! definition checked as it is typed, one expression compiled, the node catalog and templates,
//! and a save. Each is a call of `mcpflow-authoring` (the checks of `mcpflow_validate_tool`,
//! the save of `mcpflow_save_tool`), over the config on disk that the binary hands over with
//! [`Api::with_publish`](crate::Api::with_publish); without it they answer 404.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcpflow_authoring::{Expected, Language, Publish, SaveError};
use serde_json::{Value as Json, json};

use crate::Api;
use crate::error::ApiError;
use crate::http::{body_object, ok};

pub(crate) fn publish(api: &Api) -> Result<Arc<dyn Publish>, ApiError> {
    api.publish().ok_or_else(|| {
        ApiError::not_found(
            "this server has no config on disk to edit (it was not started from a config file)",
        )
    })
}

/// Runs `work` off the async threads: it reads the config's files and compiles.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal(format!("the check did not finish: {e}")))?
}

pub(crate) fn answer(result: Result<Json, ApiError>) -> Response {
    match result {
        Ok(v) => ok(&v),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/authoring`: whether tools can be saved here, the node catalog, the templates.
pub async fn overview(State(api): State<Api>) -> Response {
    let publish = api.publish();
    answer(
        blocking(move || {
            let save = match publish.as_deref().map(mcpflow_authoring::can_save) {
                Some(Ok(())) => json!({"allowed": true}),
                Some(Err(why)) => json!({"allowed": false, "why": why}),
                None => json!({"allowed": false, "why": "this server has no config on disk to save into"}),
            };
            Ok(json!({
                "save": save,
                "catalog": mcpflow_authoring::catalog(),
                "templates": mcpflow_authoring::templates(),
            }))
        })
        .await,
    )
}

/// `GET /api/tools/{tool}/source`: the tool as it is on disk.
pub async fn source(State(api): State<Api>, Path(tool): Path<String>) -> Response {
    let publish = match publish(&api) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    answer(
        blocking(move || {
            let found = mcpflow_authoring::source(&*publish, &tool)
                .map_err(|e| ApiError::new(StatusCode::CONFLICT, "config_invalid", e))?;
            let Some(s) = found else {
                return Err(ApiError::not_found(format!(
                    "the config on disk has no graph tool `{tool}`"
                )));
            };
            Ok(json!({
                "tool": s.name,
                "definition": s.definition,
                "text": s.text,
                "writtenAt": s.written_at,
                "readOnly": s.read_only,
                "version": s.version,
            }))
        })
        .await,
    )
}

/// The `definition` of a body: an object, or YAML text.
fn definition(body: &serde_json::Map<String, Json>) -> Result<Json, ApiError> {
    match body.get("definition") {
        Some(d @ (Json::Object(_) | Json::String(_))) => Ok(d.clone()),
        Some(_) => Err(ApiError::bad_request(
            "`definition` is the tool as an object, or as YAML text",
        )),
        None => Err(ApiError::bad_request("missing `definition`")),
    }
}

/// `POST /api/authoring/check`: `{definition}` checked as a tool of the config on disk.
pub async fn check(State(api): State<Api>, body: Bytes) -> Response {
    let publish = match publish(&api) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let engine = api.engine();
    answer(
        blocking(move || {
            let body = body_object(&body)?;
            let definition = definition(&body)?;
            let checked = mcpflow_authoring::check(&engine, &*publish, &definition)
                .map_err(|e| ApiError::new(StatusCode::CONFLICT, "config_invalid", e))?;
            Ok(json!({
                "valid": checked.problems.is_empty(),
                "definition": checked.definition,
                "problems": checked.problems,
                "warnings": checked.warnings,
            }))
        })
        .await,
    )
}

/// `POST /api/authoring/expression`: `{language, expression}` compiled as a node compiles it.
pub async fn expression(body: Bytes) -> Response {
    let checked = (|| {
        let body = body_object(&body)?;
        let language = match body.get("language").and_then(Json::as_str) {
            Some("jsonata") => Language::Jsonata,
            Some("logic") => Language::Logic,
            Some("args") => Language::Args,
            _ => {
                return Err(ApiError::bad_request(
                    "`language` is one of jsonata, logic, args",
                ));
            }
        };
        let Some(expression) = body.get("expression") else {
            return Err(ApiError::bad_request("missing `expression`"));
        };
        Ok(
            match mcpflow_authoring::check_expression(language, expression) {
                Ok(()) => json!({"valid": true}),
                Err(error) => json!({"valid": false, "error": error}),
            },
        )
    })();
    answer(checked)
}

/// `POST /api/authoring/save`: `{definition, base}` saved as `mcpflow_save_tool` saves, `base`
/// being the `version` of the tool's file as it was opened (`null` for a new tool).
pub async fn save(State(api): State<Api>, body: Bytes) -> Response {
    let publish = match publish(&api) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let parsed = body_object(&body).and_then(|body| {
        let expected = base(
            &body,
            "`base` is the `version` of the tool as it was opened (GET \
             /api/tools/{tool}/source), or null for a new tool",
        )?;
        Ok((definition(&body)?, expected))
    });
    let (definition, expected) = match parsed {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let engine = api.engine();
    match mcpflow_authoring::save_definition(&engine, &*publish, &definition, expected).await {
        Ok(saved) => ok(&json!({
            "saved": saved.name,
            "file": saved.file.display().to_string(),
            "created": saved.created,
            "version": saved.version,
            "warnings": saved.warnings,
            "tools": saved.tools,
        })),
        Err(e) => refusal(e).into_response(),
    }
}

/// A save's `base`: the file's `version` as it was opened, or `null` (it did not exist);
/// `what` says so for this save when the field is neither.
pub(crate) fn base(body: &serde_json::Map<String, Json>, what: &str) -> Result<Expected, ApiError> {
    match body.get("base") {
        Some(Json::Null) => Ok(Expected::Absent),
        Some(Json::String(v)) => Ok(Expected::Version(v.clone())),
        _ => Err(ApiError::bad_request(what)),
    }
}

pub(crate) fn refusal(e: SaveError) -> ApiError {
    let message = e.to_string();
    match e {
        SaveError::Invalid(problems) => {
            let mut err = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message);
            err.problems = Some(problems);
            err
        }
        SaveError::Conflict(_) => ApiError::new(StatusCode::CONFLICT, "changed_on_disk", message),
        SaveError::BrokenOnDisk(_) => {
            ApiError::new(StatusCode::CONFLICT, "config_invalid", message)
        }
        SaveError::Disabled(_) => ApiError::new(StatusCode::FORBIDDEN, "save_disabled", message),
        SaveError::Refused(_) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "not_saved", message)
        }
    }
}
