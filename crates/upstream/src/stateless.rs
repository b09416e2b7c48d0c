//! The 2026-07-28 era through the gateway: a downstream request of that era carries its
//! client's context in its own `_meta` (protocol version, client capabilities, log level, …)
//! instead of in a session, and the upstream must see that context, not mcpflow's.
//!
//! - An upstream whose session speaks 2026-07-28 gets the request with the client's `_meta`
//!   entries put over rmcp's (its own progress token stays, so progress is still routed back).
//!   Its answer, an "input required" result included, comes back whole; the client's retry
//!   (with `inputResponses` and `requestState`) is just another such request.
//! - Whether a session speaks it: a `server/discover` session (a 2026-07-28-only remote
//!   upstream) does. A stdio session opened with `initialize` is asked `server/discover` once,
//!   on the first 2026-07-28 request; a server of both eras (rmcp's, say) then takes requests
//!   that declare 2026-07-28 in their `_meta` on that same session. A remote session opened
//!   with `initialize` does not: its HTTP headers pin the session's version, and a request
//!   whose `_meta` said otherwise would be refused as a header mismatch.
//! - Otherwise (a 2025-only upstream) the request is forwarded in 2025 terms on the shared
//!   session: the client's per-request capabilities and log level do not reach the upstream,
//!   and what the upstream asks back (sampling, elicitation, roots) is refused, since a
//!   2026-07-28 client cannot be asked anything in the middle of a call.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    ClientCapabilities, ClientRequest, DiscoverRequest, DiscoverRequestParams, Implementation,
    ProtocolVersion, RequestMetaObject, ServerCapabilities, ServerResult, SubscriptionFilter,
    SubscriptionsListenRequest, SubscriptionsListenRequestParams,
};
use rmcp::service::{Peer, PeerRequestOptions};
use tokio::sync::OnceCell;

use crate::connection::Connection;
use crate::upstream::Upstream;

/// How long the one `server/discover` probe of a session may take; a server that does not
/// answer by then is taken for one of the 2025 era.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether one session carries 2026-07-28 requests, found out on first need.
#[derive(Debug, Default)]
pub(crate) struct EraProbe(OnceCell<bool>);

impl Upstream {
    /// Whether `connection`'s session takes 2026-07-28 requests (asked once per session).
    pub(crate) async fn speaks_2026_on(&self, connection: &Connection) -> bool {
        *connection
            .era
            .0
            .get_or_init(|| probe(connection, &self.name))
            .await
    }
}

/// Asks the session once; the probe and the `subscriptions/listen` it may open are the
/// session's own upkeep, sent on rmcp's peer directly rather than through the send path (no
/// caller, no deadline of a call: the listen lasts as long as the session).
async fn probe(connection: &Connection, server: &str) -> bool {
    let version = connection.info().protocol_version.as_str();
    let peer = connection.peer();
    if version >= ProtocolVersion::V_2026_07_28.as_str() {
        let announced = peer
            .peer_info()
            .and_then(|info| announced_changes(&info.capabilities));
        if let Some(filter) = announced {
            tokio::spawn(follow_list_changes(peer.clone(), server.into(), filter));
        }
        return true;
    }
    if connection.may_retry() {
        // A remote session: see the module docs.
        return false;
    }
    let request = ClientRequest::DiscoverRequest(DiscoverRequest::new(DiscoverRequestParams {}));
    let ask = async {
        let options = PeerRequestOptions::no_options().with_meta(our_context());
        peer.send_request_with_option(request, options)
            .await?
            .await_response()
            .await
    };
    let (modern, announces) = match tokio::time::timeout(PROBE_TIMEOUT, ask).await {
        Ok(Ok(ServerResult::DiscoverResult(found))) => (
            found
                .supported_versions
                .contains(&ProtocolVersion::V_2026_07_28),
            announced_changes(&found.capabilities),
        ),
        // Method not found, an empty answer, no answer: a server of the 2025 era.
        _ => (false, None),
    };
    tracing::debug!(
        server,
        modern,
        "asked the upstream's session for 2026-07-28"
    );
    if modern && let Some(filter) = announces {
        tokio::spawn(follow_list_changes(peer.clone(), server.into(), filter));
    }
    modern
}

/// mcpflow's own `_meta` for a request of the 2026-07-28 era.
fn our_context() -> RequestMetaObject {
    RequestMetaObject::with_client_context(
        ProtocolVersion::V_2026_07_28,
        Implementation::new("mcpflow", env!("CARGO_PKG_VERSION")),
        ClientCapabilities::default(),
    )
}

/// The list changes a server of the 2026-07-28 era announces (its tools', resources' and
/// prompts' `listChanged`), as the filter of a `subscriptions/listen`; `None` for none.
fn announced_changes(capabilities: &ServerCapabilities) -> Option<SubscriptionFilter> {
    let mut filter = SubscriptionFilter::new();
    if capabilities
        .tools
        .as_ref()
        .is_some_and(|t| t.list_changed == Some(true))
    {
        filter.tools_list_changed = Some(true);
    }
    if capabilities
        .resources
        .as_ref()
        .is_some_and(|r| r.list_changed == Some(true))
    {
        filter.resources_list_changed = Some(true);
    }
    if capabilities
        .prompts
        .as_ref()
        .is_some_and(|p| p.list_changed == Some(true))
    {
        filter.prompts_list_changed = Some(true);
    }
    let any = [
        filter.tools_list_changed,
        filter.resources_list_changed,
        filter.prompts_list_changed,
    ]
    .contains(&Some(true));
    any.then_some(filter)
}

/// Keeps a `subscriptions/listen` for the list changes `filter` names open on a session that
/// speaks 2026-07-28, for as long as the session lasts. A server of that era announces a
/// change made by a 2026-07-28 request on such streams only, not to the session that made it;
/// the notifications (tagged with a subscription rmcp does not track) reach our client handler
/// like a session's own, which drops the cached list and tells our clients.
async fn follow_list_changes(peer: Peer<RoleClient>, server: Arc<str>, filter: SubscriptionFilter) {
    let request = ClientRequest::SubscriptionsListenRequest(SubscriptionsListenRequest::new(
        SubscriptionsListenRequestParams::new(filter),
    ));
    let options = PeerRequestOptions::no_options().with_meta(our_context());
    let ended = match peer.send_request_with_option(request, options).await {
        Ok(handle) => handle.await_response().await.map(|_| ()),
        Err(error) => Err(error),
    };
    tracing::debug!(server = %server, ?ended, "upstream's subscriptions/listen ended");
}
