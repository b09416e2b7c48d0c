//! The HTTP face: the middleware `server` puts in front of every route of its listener, and
//! the RFC 9728 protected-resource metadata it serves.
//!
//! A refused request gets 401 with `WWW-Authenticate: Bearer resource_metadata="…"` (and
//! `error="invalid_token"` for a credential that proves nothing), or 403 with
//! `error="insufficient_scope"`, as the MCP authorization spec asks; the body is JSON (a
//! JSON-RPC error on the MCP endpoints), so a client reads it whichever it expects.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use mcpflow_model::auth::Scope;
use serde_json::json;

use crate::credential::Credential;
use crate::endpoints::{Access, access, method_scope};
use crate::gate::{Auth, Refusal};
use crate::limits::{RUNS_RETRY_AFTER_SECONDS, RunQuota};
use crate::principal::Principal;

/// Where the metadata lives, relative to the server's origin, for the resource `/mcp`.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What the middleware refused, put on the response's extensions for the audit log (which
/// `server` writes, outside this layer): the `tools/call`s the refused body held, why, and who
/// asked when that much is known. Only a refused MCP POST holding a call carries one.
#[derive(Debug, Clone)]
pub struct Refused {
    /// `unauthenticated` (401), `forbidden` (403), `rate_limited` or `too_many_runs` (429).
    pub outcome: &'static str,
    /// The caller; `None` when its credential proved nothing.
    pub principal: Option<Principal>,
    /// The names the refused `tools/call`s asked for, one per call, as the client wrote them.
    pub tools: Vec<String>,
}

/// The middleware: the endpoint's access from the one table, the caller from its
/// `Authorization: Bearer` (or `X-API-Key`) header, the scope checked, and the [`Principal`]
/// put in the request's extensions for the route (and, through rmcp, the MCP handler) to read.
/// A refused `tools/call` leaves a [`Refused`] on the response.
pub async fn enforce(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let mcp = is_mcp(&path);
    let Some(needs) = access(request.method().as_str(), &path) else {
        tracing::debug!(%path, "no endpoint declared for this path");
        return refusal_body(StatusCode::NOT_FOUND, mcp, "not_found", "no such endpoint");
    };
    if needs == Access::Public {
        return next.run(request).await;
    }
    if !auth.is_enforced() {
        // No `auth:`: nothing to check, so no body is parsed and nothing is allocated.
        let mut request = request;
        request
            .extensions_mut()
            .insert(auth.open_principal().clone());
        return next.run(request).await;
    }
    let credential = credential(request.headers());
    let principal = match auth.authenticate(credential).await {
        Ok(p) => p,
        Err(refusal) => {
            let outcome = outcome_of(&refusal);
            if needs == Access::ToolCall {
                let response = refuse(&auth, request.headers(), mcp, refusal);
                return refused(response, outcome, None, rest_tool(&path));
            }
            if needs != Access::Mcp || request.method() != Method::POST {
                return refuse(&auth, request.headers(), mcp, refusal);
            }
            // Read only to name the calls refused, for the audit log: a refusal's cost.
            let (parts, bytes) = match read_body(request, mcp).await {
                Ok(read) => read,
                Err(response) => return response,
            };
            let response = refuse(&auth, &parts.headers, mcp, refusal);
            return refused(
                response,
                outcome,
                None,
                called_tools(&read_messages(&bytes)),
            );
        }
    };
    let credential = credential.map(Credential::new);
    // A REST call, or the messages of an MCP POST: the tools they call are named only if they
    // are refused.
    let mut rest_call = false;
    let mut messages = Vec::new();
    let (request, checked) = match needs {
        Access::Public => unreachable_public(request),
        Access::Scope(scope) => {
            let checked = auth.check(&principal, scope);
            (request, checked)
        }
        Access::Known => {
            let checked = auth.check_known(&principal);
            (request, checked)
        }
        Access::ToolCall => {
            rest_call = true;
            let checked = auth.check(&principal, Scope::ToolsCall);
            (request, checked)
        }
        Access::Mcp if request.method() == Method::POST => {
            // The guard in front has read and bounded the body already: this is a copy in
            // memory, not a second read from the client.
            let (parts, bytes) = match read_body(request, mcp).await {
                Ok(read) => read,
                Err(response) => return response,
            };
            messages = read_messages(&bytes);
            let checked = messages
                .iter()
                .try_for_each(|m| match method_scope(&m.method) {
                    Some(scope) => auth.check(&principal, scope),
                    None => auth.check_mcp(&principal),
                });
            (Request::from_parts(parts, Body::from(bytes)), checked)
        }
        Access::Mcp => {
            let checked = auth.check_mcp(&principal);
            (request, checked)
        }
    };
    if let Err(refusal) = checked {
        let outcome = outcome_of(&refusal);
        let response = refuse(&auth, request.headers(), mcp, refusal);
        let tools = refused_tools(rest_call, &path, &messages);
        return refused(response, outcome, Some(principal), tools);
    }
    if let Err(wait) = auth.take_rate(&principal) {
        tracing::debug!(subject = principal.subject(), "rate limit reached");
        let mut response = refusal_body(
            StatusCode::TOO_MANY_REQUESTS,
            mcp,
            "rate_limited",
            "too many requests from this caller; retry after the time Retry-After says",
        );
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
        let tools = refused_tools(rest_call, &path, &messages);
        return refused(response, "rate_limited", Some(principal), tools);
    }
    // A call (over MCP or REST) while the caller has all the runs it may is refused here,
    // where the status can still be 429: behind rmcp the answer is a JSON-RPC message inside a
    // 200. The run itself takes its slot in the engine (`Caller::admit`), which a call racing
    // this check meets (the REST face turns that refusal into a 429 too).
    // Proxied tools run no graph and take no slot, but the body is not read this far, so a
    // call of one waits with the rest; the per-second limit is what bounds them.
    let calls = rest_call || messages.iter().any(|m| m.method == "tools/call");
    if calls && principal.run_quota().is_some_and(RunQuota::is_full) {
        tracing::debug!(
            subject = principal.subject(),
            "concurrent runs limit reached"
        );
        let tools = refused_tools(rest_call, &path, &messages);
        return refused(too_many_runs(mcp), "too_many_runs", Some(principal), tools);
    }
    let mut request = request;
    // The credential stops here: nothing behind this layer (rmcp's request parts, hooks, a
    // log line of the request) can read, forward or print it, but for the typed
    // [`Credential`], which only an upstream marked `forwardCallerToken` is sent.
    request.headers_mut().remove(header::AUTHORIZATION);
    request.headers_mut().remove("x-api-key");
    request.extensions_mut().insert(principal);
    if let Some(credential) = credential {
        request.extensions_mut().insert(credential);
    }
    next.run(request).await
}

/// The body, bounded already by the guard in front, read into memory.
async fn read_body(
    request: Request,
    mcp: bool,
) -> Result<(axum::http::request::Parts, axum::body::Bytes), Response> {
    let (parts, body) = request.into_parts();
    match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => Ok((parts, bytes)),
        Err(_) => Err(refusal_body(
            StatusCode::BAD_REQUEST,
            mcp,
            "bad_request",
            "unreadable body",
        )),
    }
}

/// The tools a refused request called: the REST call's, or the `tools/call`s of an MCP POST.
fn refused_tools(rest_call: bool, path: &str, messages: &[Message]) -> Vec<String> {
    if rest_call {
        rest_tool(path)
    } else {
        called_tools(messages)
    }
}

/// The tool of `POST /rest/v1/tools/{name}/call`, percent-decoded as the route reads it.
fn rest_tool(path: &str) -> Vec<String> {
    path.strip_prefix("/rest/v1/tools/")
        .and_then(|rest| rest.strip_suffix("/call"))
        .map(|name| {
            percent_encoding::percent_decode_str(name)
                .decode_utf8_lossy()
                .into_owned()
        })
        .into_iter()
        .collect()
}

fn outcome_of(refusal: &Refusal) -> &'static str {
    match refusal {
        Refusal::Unauthenticated { .. } => "unauthenticated",
        Refusal::InsufficientScope(_) => "forbidden",
    }
}

/// `response`, marked for the audit log when it refuses calls.
fn refused(
    mut response: Response,
    outcome: &'static str,
    principal: Option<Principal>,
    tools: Vec<String>,
) -> Response {
    if !tools.is_empty() {
        response.extensions_mut().insert(Refused {
            outcome,
            principal,
            tools,
        });
    }
    response
}

/// 429 for a caller with as many runs in flight as it may have; the run API answers the same
/// when it refuses a run itself.
pub fn too_many_runs(mcp: bool) -> Response {
    let mut response = refusal_body(
        StatusCode::TOO_MANY_REQUESTS,
        mcp,
        "too_many_runs",
        "too many runs in flight for this caller (maxConcurrentRuns); retry when one has ended",
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(RUNS_RETRY_AFTER_SECONDS),
    );
    response
}

/// `Access::Public` returned before a credential is read; kept total without a panic.
fn unreachable_public(request: Request) -> (Request, Result<(), Refusal>) {
    (request, Ok(()))
}

fn is_mcp(path: &str) -> bool {
    path == "/mcp" || path.starts_with("/mcp/") || path == "/sse" || path == "/message"
}

/// One JSON-RPC message of a body, as far as access control and the audit log read it.
struct Message {
    /// `""` for a message without one (an answer to the server's request) or a body that is
    /// not JSON-RPC: it needs only an MCP scope, and rmcp answers it as the protocol says.
    method: String,
    /// `params.name`: the tool a `tools/call` asks for.
    tool: Option<String>,
}

/// The messages of a body (one message, or a batch). The arguments are skipped unread.
fn read_messages(body: &[u8]) -> Vec<Message> {
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(default)]
        name: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Wire {
        #[serde(default)]
        method: Option<String>,
        #[serde(default)]
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Messages {
        One(Wire),
        Batch(Vec<Wire>),
    }
    let message = |w: Wire| Message {
        method: w.method.unwrap_or_default(),
        tool: w.params.and_then(|p| p.name),
    };
    match serde_json::from_slice::<Messages>(body) {
        Ok(Messages::One(m)) => vec![message(m)],
        Ok(Messages::Batch(ms)) => ms.into_iter().map(message).collect(),
        Err(_) => vec![Message {
            method: String::new(),
            tool: None,
        }],
    }
}

/// The tool of each `tools/call` among `messages` (`""` for one that names none).
fn called_tools(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.method == "tools/call")
        .map(|m| m.tool.clone().unwrap_or_default())
        .collect()
}

/// The credential of a request: `Authorization: Bearer X`, else `X-API-Key: X`. Never from the
/// query string (the MCP spec forbids tokens in URLs: they end up in logs).
fn credential(headers: &HeaderMap) -> Option<&str> {
    if let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let (scheme, rest) = value.trim().split_once(' ')?;
        return scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim());
    }
    headers.get("x-api-key").and_then(|v| v.to_str().ok())
}

/// The resource's URL: `auth.resource`, else `http://HOST/mcp` from the request (whose Host the
/// guard has already checked).
fn resource(auth: &Auth, headers: &HeaderMap) -> String {
    if let Some(r) = auth.resource() {
        return r.to_owned();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}/mcp")
}

/// RFC 9728 §3.1: the metadata of `https://h/p` is at `https://h/.well-known/oauth-protected-resource/p`.
fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("http", resource));
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        format!("{scheme}://{authority}{METADATA_PATH}")
    } else {
        format!("{scheme}://{authority}{METADATA_PATH}/{path}")
    }
}

fn refuse(auth: &Auth, headers: &HeaderMap, mcp: bool, refusal: Refusal) -> Response {
    let metadata = metadata_url(&resource(auth, headers));
    let (status, challenge, code, message) = match refusal {
        Refusal::Unauthenticated {
            invalid: false,
            why,
        } => (
            StatusCode::UNAUTHORIZED,
            format!("Bearer resource_metadata=\"{metadata}\""),
            "unauthorized",
            why,
        ),
        Refusal::Unauthenticated { invalid: true, why } => (
            StatusCode::UNAUTHORIZED,
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{metadata}\"",
                quoted(&why)
            ),
            "invalid_token",
            why,
        ),
        Refusal::InsufficientScope(scope) => (
            StatusCode::FORBIDDEN,
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{metadata}\""
            ),
            "insufficient_scope",
            format!("this needs the scope `{scope}`"),
        ),
    };
    let mut response = refusal_body(status, mcp, code, &message);
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// A quoted-string's content: no quote or backslash, printable ASCII only.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .filter(|c| *c != '"' && *c != '\\')
        .collect()
}

fn refusal_body(status: StatusCode, mcp: bool, code: &str, message: &str) -> Response {
    let body = if mcp {
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": message}})
    } else {
        json!({"error": {"code": code, "message": message}})
    };
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `/.well-known/oauth-protected-resource[/mcp]`: where a client learns which authorization
/// server issues tokens for this resource, and which scopes exist.
pub fn metadata_router(auth: Arc<Auth>) -> Router {
    let serve = move |request: Request| {
        let auth = auth.clone();
        async move { metadata(&auth, request.headers()) }
    };
    Router::new()
        .route(METADATA_PATH, get(serve.clone()))
        .route(&format!("{METADATA_PATH}/{{*rest}}"), get(serve))
}

fn metadata(auth: &Auth, headers: &HeaderMap) -> Response {
    let mut document = json!({
        "resource": resource(auth, headers),
        "scopes_supported": Scope::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "bearer_methods_supported": ["header"],
    });
    if let Some(issuer) = auth.issuer() {
        document["authorization_servers"] = json!([issuer]);
    }
    if !auth.server_name().is_empty() {
        document["resource_name"] = json!(auth.server_name());
    }
    let mut response = (StatusCode::OK, document.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The principal the middleware put on a request (`None` when no middleware ran).
pub fn principal_of(extensions: &axum::http::Extensions) -> Option<&Principal> {
    extensions.get::<Principal>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_rfc_9728() {
        assert_eq!(
            metadata_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("https://mcp.example.com"),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn credentials_come_from_bearer_or_api_key_headers_only() {
        let mut h = HeaderMap::new();
        assert_eq!(credential(&h), None);
        h.insert("x-api-key", HeaderValue::from_static("k1"));
        assert_eq!(credential(&h), Some("k1"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  t2 "),
        );
        assert_eq!(credential(&h), Some("t2"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic dTpw"),
        );
        assert_eq!(credential(&h), None);
    }

    #[test]
    fn methods_of_one_message_or_a_batch() {
        let methods = |body: &[u8]| -> Vec<String> {
            read_messages(body).into_iter().map(|m| m.method).collect()
        };
        assert_eq!(
            methods(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#),
            ["tools/call"]
        );
        assert_eq!(
            methods(br#"[{"method":"tools/list"},{"id":1,"result":{}}]"#),
            ["tools/list", ""]
        );
        assert_eq!(methods(b"not json"), [""]);
    }

    #[test]
    fn a_rest_call_names_its_tool_as_the_route_reads_it() {
        assert_eq!(rest_tool("/rest/v1/tools/echo/call"), ["echo"]);
        assert_eq!(rest_tool("/rest/v1/tools/a%20b%zz/call"), ["a b%zz"]);
        assert!(rest_tool("/rest/v1/tools").is_empty());
    }

    #[test]
    fn the_tools_of_a_batchs_calls_are_named_and_nothing_else() {
        let body = br#"[{"method":"tools/call","params":{"name":"a","arguments":{"name":"x"}}},
            {"method":"tools/list","params":{"name":"b"}},{"method":"tools/call","params":{}}]"#;
        assert_eq!(called_tools(&read_messages(body)), ["a", ""]);
        assert!(called_tools(&read_messages(b"{")).is_empty());
    }
}
