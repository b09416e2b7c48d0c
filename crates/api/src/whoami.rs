//! `GET /api/whoami`: who the caller is and what its scopes allow, as access control
//! established it. The web UI asks it first: a 401 tells it to ask for a key, the scopes which
//! of its views and actions to offer (editing needs `authoring`, the debugger `debug`, …).
//! Nothing here decides anything: every endpoint still checks its own scope.

use axum::Extension;
use axum::response::Response;
use mcpflow_engine::Caller;
use serde_json::{Value as Json, json};

use crate::http::ok;

/// The caller as `$caller` reads it (subject, how it was established, key name, scopes, the
/// claims the config copies; never the key or the token) and whether access control is on.
pub async fn whoami(caller: Option<Extension<Caller>>) -> Response {
    let caller = crate::caller(caller);
    let of = caller.json();
    let field = |name: &str| of.get(name).cloned().unwrap_or(Json::Null);
    let scopes = match of.get("scopes") {
        Some(Json::Array(s)) => Json::Array(s.clone()),
        _ => json!([]),
    };
    let claims = match of.get("claims") {
        Some(Json::Object(c)) => Json::Object(c.clone()),
        _ => json!({}),
    };
    ok(&json!({
        "subject": field("subject"),
        "via": field("via"),
        "key": field("key"),
        "scopes": scopes,
        "claims": claims,
        // Without `auth:` everyone is the open caller, with every scope.
        "accessControl": caller.subject().is_some(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(response: Response) -> Json {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        serde_json::from_slice(&bytes).expect("JSON")
    }

    #[tokio::test]
    async fn the_open_caller_has_every_scope_and_no_access_control() {
        let me = body(whoami(None).await).await;
        assert_eq!(me["via"], "open");
        assert_eq!(me["scopes"], json!(["admin"]));
        assert_eq!(me["accessControl"], false);
    }

    #[tokio::test]
    async fn a_known_caller_is_told_its_own_scopes() {
        let caller = Caller::new(
            "ci",
            false,
            json!({"subject": "ci", "via": "apiKey", "key": "ci", "scopes": ["runs:read"], "claims": {}}),
        );
        let me = body(whoami(Some(Extension(caller))).await).await;
        assert_eq!(me["subject"], "ci");
        assert_eq!(me["key"], "ci");
        assert_eq!(me["scopes"], json!(["runs:read"]));
        assert_eq!(me["accessControl"], true);
    }
}
