//! `POST /api/admin/reload` (issue #19, scope `admin`): the config on disk loaded, checked and
//! served now, through the same reload path as SIGHUP, the file watch and the authoring tools'
//! saves (the binary hands it over with [`Api::with_reload`](crate::Api::with_reload)). A
//! config that does not load changes nothing and is answered 422 with why.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use serde_json::json;

use crate::Api;
use crate::error::ApiError;
use crate::http::json_response;

/// What a reload did: `Ok(Some(tools))` served a changed config with these graph tools,
/// `Ok(None)` found the config on disk already served, `Err(why)` refused it.
pub type ReloadOutcome = Result<Option<Vec<String>>, String>;

/// The reload path, called once per request.
pub type Reload = dyn Fn() -> BoxFuture<'static, ReloadOutcome> + Send + Sync;

pub(crate) async fn reload(State(api): State<Api>) -> Response {
    let Some(reload) = api.reload() else {
        return ApiError::not_found("this server has no config on disk to reload").into_response();
    };
    match reload().await {
        Ok(Some(tools)) => {
            json_response(StatusCode::OK, &json!({"reloaded": true, "tools": tools}))
        }
        Ok(None) => json_response(
            StatusCode::OK,
            &json!({"reloaded": false, "reason": "the config on disk is the one served"}),
        ),
        Err(why) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "config_invalid", why).into_response()
        }
    }
}
