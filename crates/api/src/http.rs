//! Reading requests and writing answers without axum's `json`/`query` features (they would
//! bring two crates for what a few lines do): JSON bodies, query strings, JSON answers.

use std::collections::HashMap;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value as Json;

use crate::error::ApiError;

pub fn json_response(status: StatusCode, value: &Json) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

pub fn ok(value: &Json) -> Response {
    json_response(StatusCode::OK, value)
}

/// A request body that must be a JSON object (an empty body is `{}`).
pub fn body_object(body: &[u8]) -> Result<serde_json::Map<String, Json>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_slice(body) {
        Ok(Json::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::bad_request(
            "the request body must be a JSON object",
        )),
        Err(e) => Err(ApiError::bad_request(format!(
            "the request body is not valid JSON: {e}"
        ))),
    }
}

/// A query string's parameters; a repeated one keeps its last value.
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(raw: Option<&str>) -> Query {
        Query(
            form_urlencoded::parse(raw.unwrap_or("").as_bytes())
                .into_owned()
                .collect(),
        )
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// An integer parameter within `min..=max`.
    pub fn int(&self, name: &str, min: i64, max: i64) -> Result<Option<i64>, ApiError> {
        let Some(raw) = self.text(name) else {
            return Ok(None);
        };
        match raw.parse::<i64>() {
            Ok(v) if (min..=max).contains(&v) => Ok(Some(v)),
            _ => Err(ApiError::bad_request(format!(
                "query parameter `{name}` must be an integer from {min} to {max}, not {raw:?}"
            ))),
        }
    }
}
