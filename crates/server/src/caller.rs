//! Who sent an MCP request: the [`Principal`] the HTTP listener's access control established
//! (on Streamable HTTP inside the request's `http::request::Parts`, which rmcp hands the
//! handler; on legacy SSE put on the message itself). `None` means no access control ran
//! (stdio, in-process): everything is visible, as before `auth:` existed.

use mcpflow_auth::{Principal, Scope};
use rmcp::RoleServer;
use rmcp::service::RequestContext;

pub(crate) fn principal(context: &RequestContext<RoleServer>) -> Option<Principal> {
    context
        .extensions
        .get::<Principal>()
        .or_else(|| {
            context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Principal>())
        })
        .cloned()
}

/// Whether the tool, prompt or resource `name` is visible to `principal` (`authoring`: it is
/// one of the built-in authoring tools, which need that scope too).
pub(crate) fn sees(principal: Option<&Principal>, name: &str, authoring: bool) -> bool {
    principal.is_none_or(|p| p.sees(name) && (!authoring || p.allows(Scope::Authoring)))
}
