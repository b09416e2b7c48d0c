//! Requests an upstream sends us while it serves a forwarded call (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`), relayed to the downstream client that made the call,
//! and its answer handed back.
//!
//! MCP gives such a request no field naming the call it belongs to, so each connection keeps
//! the calls in flight on it and picks the asked client so:
//! - on a streamable-HTTP link the request arrives on the response stream of one of our
//!   requests, and rmcp tells us which ([`InboundStreamOrigin`]): exactly that call's client;
//! - otherwise (stdio, the standalone GET stream) the one client with calls in flight there.
//!   With none, or with calls of two clients (or of a graph's `mcp` node, which has no client)
//!   in flight at once, the request is refused: guessing could show one client's prompt to
//!   another.
//!
//! The client must have declared the capability (a request it did not declare is refused as
//! the client itself would, method not found); the relayed request is cancelled at the client
//! when the upstream cancels it or the forwarded call ends, and gives up at the call's deadline.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::RoleClient;
use rmcp::model::{
    ClientCapabilities, ClientResult, ContextInclusion, ElicitRequestParams, ErrorCode, RequestId,
    ServerRequest,
};
use rmcp::service::{InboundStreamOrigin, RequestContext};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The downstream client of a forwarded call, as far as its upstream may ask it things.
pub trait Caller: Send + Sync + 'static {
    /// Equal for all calls of one client (one session) and different between clients.
    fn client(&self) -> usize;
    /// What the client declared in `initialize` (or in this request's `_meta`).
    fn capabilities(&self) -> Option<ClientCapabilities>;
    /// Sends `request` to the client, tied to the call (its HTTP response stream); the answer
    /// or the client's refusal. Dropping the future cancels the request at the client.
    fn ask(&self, request: ServerRequest) -> BoxFuture<'static, Result<ClientResult, ErrorData>>;
}

/// The calls in flight on one connection, and the roots mcpflow itself answers with.
#[derive(Default)]
pub(crate) struct Relay {
    calls: Mutex<Vec<Call>>,
    next: AtomicU64,
    /// The configured roots as URIs (`roots` of the server's entry), for a `roots/list` no
    /// client can answer.
    roots: Arc<[String]>,
}

struct Call {
    key: u64,
    /// Our request id upstream, once sent.
    request: Option<RequestId>,
    /// `None`: a graph's `mcp` node, which nobody can be asked for.
    caller: Option<Arc<dyn Caller>>,
    ended: CancellationToken,
    deadline: Instant,
}

/// One call in flight; it leaves the relay (and relayed requests of it are cancelled) when
/// dropped.
pub(crate) struct InFlight {
    relay: Arc<Relay>,
    key: u64,
    ended: CancellationToken,
}

impl InFlight {
    /// Records our request id upstream, which streamable HTTP ties the upstream's requests to.
    pub fn sent_as(&self, id: &RequestId) {
        if let Some(call) = self.relay.lock().iter_mut().find(|c| c.key == self.key) {
            call.request = Some(id.clone());
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.ended.cancel();
        self.relay.lock().retain(|c| c.key != self.key);
    }
}

/// Who an upstream's request goes to.
struct Target {
    caller: Arc<dyn Caller>,
    ended: CancellationToken,
    deadline: Instant,
}

impl Relay {
    pub fn with_roots(roots: Arc<[String]>) -> Relay {
        Relay {
            roots,
            ..Relay::default()
        }
    }

    /// The roots mcpflow answers with itself.
    pub fn own_roots(&self) -> &[String] {
        &self.roots
    }

    /// Whether a request that arrived with `context` belongs to a client's call and that client
    /// declared `roots`: then the client answers `roots/list`, else mcpflow does.
    pub fn client_has_roots(&self, context: &RequestContext<RoleClient>) -> bool {
        let origin = context.extensions.get::<InboundStreamOrigin>();
        self.target(origin)
            .is_ok_and(|t| t.caller.capabilities().is_some_and(|c| c.roots.is_some()))
    }

    /// Counts a call in flight until the guard drops; `timeout` is the call's own.
    pub fn enter(self: &Arc<Self>, caller: Option<Arc<dyn Caller>>, timeout: Duration) -> InFlight {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let ended = CancellationToken::new();
        self.lock().push(Call {
            key,
            request: None,
            caller,
            ended: ended.clone(),
            deadline: Instant::now() + timeout,
        });
        InFlight {
            relay: self.clone(),
            key,
            ended,
        }
    }

    /// Relays `request` from upstream `server` to the client it belongs to and returns the
    /// answer, or the error the upstream gets instead.
    pub async fn relay(
        &self,
        server: &str,
        request: ServerRequest,
        context: &RequestContext<RoleClient>,
    ) -> Result<ClientResult, ErrorData> {
        let method = method_of(&request);
        let origin = context.extensions.get::<InboundStreamOrigin>();
        let target = self.target(origin).map_err(|why| {
            tracing::warn!(server, method, "upstream request not relayed: {why}");
            ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                format!("mcpflow cannot relay `{method}` to a client: {why}"),
                None,
            )
        })?;
        if let Some(missing) = undeclared(&request, target.caller.capabilities()) {
            tracing::info!(
                server,
                method,
                "upstream request not relayed: the client did not declare `{missing}`"
            );
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "the client that made this call did not declare the `{missing}` capability"
                ),
                None,
            ));
        }
        tracing::debug!(server, method, "relaying an upstream request to its caller");
        let ask = target.caller.ask(request);
        tokio::select! {
            answer = ask => answer,
            () = context.ct.cancelled() => Err(ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!("`{method}` cancelled"),
                None,
            )),
            () = target.ended.cancelled() => Err(ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the call `{method}` belongs to ended before the client answered"),
                None,
            )),
            () = tokio::time::sleep_until(target.deadline) => Err(ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the client did not answer `{method}` within the call's timeout"),
                None,
            )),
        }
    }

    fn target(&self, origin: Option<&InboundStreamOrigin>) -> Result<Target, String> {
        let calls = self.lock();
        let call = match origin {
            Some(InboundStreamOrigin::OutboundRequest(id)) => calls
                .iter()
                .find(|c| c.request.as_ref() == Some(id))
                .ok_or("the request it arrived with is no forwarded call in flight")?,
            _ => {
                let mut calls_of = calls.iter();
                let first = calls_of
                    .next()
                    .ok_or("no call of a client is in flight on this upstream")?;
                let client = first.caller.as_ref().map(|c| c.client());
                let others = calls_of.any(|c| c.caller.as_ref().map(|c| c.client()) != client);
                // A lone graph call is named below; a graph call beside others is ambiguous.
                if others || (client.is_none() && calls.len() > 1) {
                    return Err(
                        "calls of more than one client (or of a graph) are in flight on \
                                this upstream, and the request does not say which it belongs to"
                            .into(),
                    );
                }
                first
            }
        };
        let caller = call
            .caller
            .clone()
            .ok_or("it belongs to a graph's `mcp` node, which has no client to ask")?;
        Ok(Target {
            caller,
            ended: call.ended.clone(),
            deadline: call.deadline,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Call>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn method_of(request: &ServerRequest) -> &'static str {
    match request {
        ServerRequest::CreateMessageRequest(_) => "sampling/createMessage",
        ServerRequest::ElicitRequest(_) => "elicitation/create",
        ServerRequest::ListRootsRequest(_) => "roots/list",
        ServerRequest::PingRequest(_) => "ping",
        _ => "a request",
    }
}

/// The capability `request` needs that `declared` lacks, if any.
#[allow(
    deprecated,
    reason = "sampling is deprecated in 2026-07-28 only; whether its params count depends on rmcp"
)]
fn undeclared(
    request: &ServerRequest,
    declared: Option<ClientCapabilities>,
) -> Option<&'static str> {
    let declared = declared.unwrap_or_default();
    match request {
        ServerRequest::CreateMessageRequest(r) => {
            let Some(sampling) = &declared.sampling else {
                return Some("sampling");
            };
            if r.params.tools.as_ref().is_some_and(|t| !t.is_empty()) && sampling.tools.is_none() {
                return Some("sampling.tools");
            }
            let context = r.params.include_context.as_ref();
            if context.is_some_and(|c| *c != ContextInclusion::None) && sampling.context.is_none() {
                return Some("sampling.context");
            }
            None
        }
        ServerRequest::ElicitRequest(r) => {
            let Some(elicitation) = &declared.elicitation else {
                return Some("elicitation");
            };
            match r.params {
                // `elicitation: {}` declares form mode (2025-06-18 had no modes).
                ElicitRequestParams::FormElicitationParams { .. }
                    if elicitation.form.is_none() && elicitation.url.is_some() =>
                {
                    Some("elicitation.form")
                }
                ElicitRequestParams::UrlElicitationParams { .. } if elicitation.url.is_none() => {
                    Some("elicitation.url")
                }
                _ => None,
            }
        }
        ServerRequest::ListRootsRequest(_) => declared.roots.is_none().then_some("roots"),
        _ => None,
    }
}

/// The answer of the client as the type the upstream asked for. Through JSON, since rmcp reads
/// a client's answer into an untagged enum whose first fitting variant need not be the asked one.
pub(crate) fn answer_as<T: serde::de::DeserializeOwned>(
    method: &str,
    answer: ClientResult,
) -> Result<T, ErrorData> {
    serde_json::to_value(answer)
        .and_then(serde_json::from_value)
        .map_err(|e| {
            ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the client's answer to `{method}` is not one: {e}"),
                None,
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Client(usize);

    impl Caller for Client {
        fn client(&self) -> usize {
            self.0
        }
        fn capabilities(&self) -> Option<ClientCapabilities> {
            None
        }
        fn ask(&self, _: ServerRequest) -> BoxFuture<'static, Result<ClientResult, ErrorData>> {
            Box::pin(std::future::ready(Ok(ClientResult::empty(()))))
        }
    }

    fn caller(n: usize) -> Option<Arc<dyn Caller>> {
        Some(Arc::new(Client(n)))
    }

    const LONG: Duration = Duration::from_secs(60);

    #[tokio::test]
    async fn a_request_goes_only_to_the_one_client_with_calls_in_flight() {
        let relay = Arc::new(Relay::default());
        assert!(relay.target(None).is_err(), "nobody in flight");
        let a1 = relay.enter(caller(1), LONG);
        let _a2 = relay.enter(caller(1), LONG);
        assert_eq!(relay.target(None).map(|t| t.caller.client()), Ok(1));
        let b = relay.enter(caller(2), LONG);
        assert!(relay.target(None).is_err(), "two clients: ambiguous");
        // Streamable HTTP names the call: no ambiguity.
        b.sent_as(&RequestId::Number(7));
        let on_b = InboundStreamOrigin::OutboundRequest(RequestId::Number(7));
        assert_eq!(relay.target(Some(&on_b)).map(|t| t.caller.client()), Ok(2));
        let elsewhere = InboundStreamOrigin::OutboundRequest(RequestId::Number(8));
        assert!(relay.target(Some(&elsewhere)).is_err());
        drop(b);
        let engine = relay.enter(None, LONG);
        assert!(
            relay.target(None).is_err(),
            "a graph node's call is another party"
        );
        drop(engine);
        let ended = relay.target(None).map(|t| t.ended);
        drop(a1);
        drop(_a2);
        assert!(ended.is_ok_and(|t| t.is_cancelled()));
        assert!(relay.target(None).is_err());
    }

    #[test]
    fn undeclared_capabilities_are_named() {
        let sampling: ServerRequest = serde_json::from_value(serde_json::json!({
            "method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 1}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(undeclared(&sampling, None), Some("sampling"));
        let caps: ClientCapabilities =
            serde_json::from_value(serde_json::json!({"sampling": {}, "elicitation": {}}))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(undeclared(&sampling, Some(caps.clone())), None);
        let form: ServerRequest = serde_json::from_value(serde_json::json!({
            "method": "elicitation/create",
            "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(undeclared(&form, Some(caps.clone())), None);
        let url: ServerRequest = serde_json::from_value(serde_json::json!({
            "method": "elicitation/create",
            "params": {"mode": "url", "message": "?", "url": "https://x", "elicitationId": "1"}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            undeclared(&url, Some(caps.clone())),
            Some("elicitation.url")
        );
        let roots: ServerRequest =
            serde_json::from_value(serde_json::json!({"method": "roots/list"}))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(undeclared(&roots, Some(caps)), Some("roots"));
    }
}
