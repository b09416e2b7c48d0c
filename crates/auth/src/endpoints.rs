//! The one table of what each endpoint of the HTTP listener asks of a caller. A request to a
//! path not in it is refused (404) whatever the caller may do, so an endpoint added without
//! declaring its scope cannot be reached, and its first test says so.

use mcpflow_model::auth::Scope;

/// What a request to an endpoint needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Nothing: probes and the protected-resource metadata a client reads before it has a token.
    Public,
    /// This scope (or `admin`).
    Scope(Scope),
    /// Any caller the server knows: a credential that proves who it is, whatever its scopes,
    /// or no credential where the config grants anonymous callers some scope. A request
    /// without one where anonymous callers have none is asked to authenticate (401), so a
    /// client learns from it that it needs a key (`/api/whoami`, the web UI's first call).
    Known,
    /// An MCP endpoint: a POST needs the scope of its JSON-RPC method ([`method_scope`]); a
    /// GET (a listening stream) or DELETE (end of a session) needs any MCP scope.
    Mcp,
    /// A tool's call outside MCP (the REST face): `tools:call`, and, as for an MCP
    /// `tools/call`, 429 while the caller has all the runs in flight it may have.
    ToolCall,
}

/// `None` matches every HTTP method.
struct Endpoint {
    method: Option<&'static str>,
    path: &'static str,
    access: Access,
}

const fn any(path: &'static str, access: Access) -> Endpoint {
    Endpoint {
        method: None,
        path,
        access,
    }
}

const fn only(method: &'static str, path: &'static str, access: Access) -> Endpoint {
    Endpoint {
        method: Some(method),
        path,
        access,
    }
}

use Access::{Mcp, Public};
const RUNS_READ: Access = Access::Scope(Scope::RunsRead);
const DEBUG: Access = Access::Scope(Scope::Debug);
const SESSIONS: Access = Access::Scope(Scope::Sessions);
const TOOLS_LIST: Access = Access::Scope(Scope::ToolsList);
const AUTHORING: Access = Access::Scope(Scope::Authoring);

/// Every endpoint of `mcpflow serve --http`, in the order a reader meets them: MCP, probes,
/// OAuth metadata, metrics, the web UI, then the run API and the REST face (`mcpflow_api`'s
/// OpenAPI document; a test checks that each of its paths is here).
///
/// The web UI's files are public: they are the same for everyone and hold no data (the page
/// asks `/api` for everything it shows, with the key a person types in), and a browser must be
/// able to load the page that asks for the key.
const ENDPOINTS: &[Endpoint] = &[
    any("/mcp", Mcp),
    any("/mcp/{*rest}", Mcp),
    any("/sse", Mcp),
    any("/message", Mcp),
    any("/healthz", Public),
    any("/readyz", Public),
    any("/.well-known/oauth-protected-resource", Public),
    any("/.well-known/oauth-protected-resource/{*rest}", Public),
    any("/metrics", Access::Scope(Scope::Metrics)),
    any("/ui", Public),
    any("/ui/", Public),
    any("/ui/{*path}", Public),
    any("/api/openapi.json", RUNS_READ),
    // Who the caller is and what its scopes allow: what the web UI shows and enables.
    only("GET", "/api/whoami", Access::Known),
    any("/api/tools", RUNS_READ),
    any("/api/tools/{tool}/graph", RUNS_READ),
    // A tool's time per node over its recent runs: read from the runs.
    any("/api/tools/{tool}/timing", RUNS_READ),
    // The upstreams and their tools' schemas: what the graphs' `mcp` nodes call.
    only("GET", "/api/upstreams", RUNS_READ),
    // The web UI's editor: reading a tool is reading what its graph shows; checking and saving
    // are what the authoring tools do, under their scope.
    any("/api/tools/{tool}/source", RUNS_READ),
    any("/api/authoring", RUNS_READ),
    any("/api/authoring/check", AUTHORING),
    any("/api/authoring/expression", AUTHORING),
    any("/api/authoring/save", AUTHORING),
    // The hook flow editor: reading the hooks as the tools' sources are read; checking, trying
    // a hook in the sandbox and saving them are authoring.
    only("GET", "/api/hooks", RUNS_READ),
    any("/api/hooks/check", AUTHORING),
    any("/api/hooks/try", AUTHORING),
    any("/api/hooks/save", AUTHORING),
    only("GET", "/api/runs", RUNS_READ),
    // Starting a run here means starting it under the debugger (breakpoints, pause).
    only("POST", "/api/runs", DEBUG),
    any("/api/runs/{id}", RUNS_READ),
    any("/api/runs/{id}/context", RUNS_READ),
    any("/api/runs/{id}/events", RUNS_READ),
    any("/api/events", RUNS_READ),
    any("/api/runs/{id}/pause", DEBUG),
    any("/api/runs/{id}/resume", DEBUG),
    any("/api/runs/{id}/step", DEBUG),
    any("/api/runs/{id}/stop", DEBUG),
    any("/api/runs/{id}/breakpoints", DEBUG),
    any("/api/runs/{id}/breakpoints/{node}", DEBUG),
    any("/api/sessions", SESSIONS),
    any("/api/sessions/{id}/continue", SESSIONS),
    any("/api/sessions/{id}/cancel", SESSIONS),
    only("POST", "/api/admin/reload", Access::Scope(Scope::Admin)),
    // The REST face of the MCP endpoint asks what the MCP methods it stands for ask; its
    // health tells what /readyz tells, to a probe that carries no credential.
    any("/rest/v1/tools", TOOLS_LIST),
    any("/rest/v1/tools/{name}", TOOLS_LIST),
    any("/rest/v1/tools/{name}/call", Access::ToolCall),
    any("/rest/v1/health", Public),
];

/// What `method path` needs, or `None` for an endpoint nobody declared.
pub fn access(method: &str, path: &str) -> Option<Access> {
    ENDPOINTS
        .iter()
        .find(|e| e.method.is_none_or(|m| m.eq_ignore_ascii_case(method)) && matches(e.path, path))
        .map(|e| e.access)
}

/// A pattern's `{name}` segment matches one non-empty segment, `{*name}` the rest (at least one
/// segment); anything else literally.
fn matches(pattern: &str, path: &str) -> bool {
    let mut pattern = pattern.split('/');
    let mut path = path.split('/');
    loop {
        match (pattern.next(), path.next()) {
            (None, None) => return true,
            (Some(p), Some(s)) if p.starts_with("{*") => {
                return !s.is_empty() || path.next().is_some();
            }
            (Some(p), Some(s)) if p.starts_with('{') && p.ends_with('}') => {
                if s.is_empty() {
                    return false;
                }
            }
            (Some(p), Some(s)) if p == s => {}
            _ => return false,
        }
    }
}

/// The scope one JSON-RPC method of MCP needs; `None` for the methods every MCP client needs to
/// hold a session at all (`initialize`, `ping`, notifications, answers to the server's own
/// requests, `logging/setLevel`, discovery), which any MCP scope grants.
pub fn method_scope(method: &str) -> Option<Scope> {
    match method {
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            Some(Scope::ToolsList)
        }
        "tools/call"
        | "resources/read"
        | "resources/subscribe"
        | "resources/unsubscribe"
        | "prompts/get"
        | "completion/complete" => Some(Scope::ToolsCall),
        m if m.starts_with("tasks/") => Some(Scope::ToolsCall),
        _ => None,
    }
}

/// The scopes that make a caller an MCP client at all.
pub const MCP_SCOPES: [Scope; 2] = [Scope::ToolsList, Scope::ToolsCall];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_segments() {
        assert!(matches("/api/runs/{id}", "/api/runs/abc"));
        assert!(!matches("/api/runs/{id}", "/api/runs/"));
        assert!(!matches("/api/runs/{id}", "/api/runs/abc/more"));
        assert!(matches("/ui/{*path}", "/ui/assets/app.js"));
        assert!(!matches("/ui/{*path}", "/ui/"));
        assert!(matches("/ui/", "/ui/"));
        assert!(!matches("/ui", "/ui2"));
        assert!(!matches("/mcp", "/mcpx"));
    }

    #[test]
    fn every_endpoint_has_its_declared_access_and_others_none() {
        assert_eq!(access("POST", "/mcp"), Some(Mcp));
        assert_eq!(access("GET", "/healthz"), Some(Public));
        assert_eq!(access("GET", "/api/runs"), Some(RUNS_READ));
        assert_eq!(access("POST", "/api/runs"), Some(DEBUG));
        assert_eq!(access("DELETE", "/api/runs"), None);
        assert_eq!(access("GET", "/api/runs/x/context"), Some(RUNS_READ));
        assert_eq!(access("PUT", "/api/runs/x/breakpoints/n"), Some(DEBUG));
        assert_eq!(
            access("GET", "/metrics"),
            Some(Access::Scope(Scope::Metrics))
        );
        assert_eq!(access("POST", "/api/authoring/save"), Some(AUTHORING));
        assert_eq!(access("GET", "/api/hooks"), Some(RUNS_READ));
        assert_eq!(access("POST", "/api/hooks"), None);
        for action in ["check", "try", "save"] {
            let path = format!("/api/hooks/{action}");
            assert_eq!(access("POST", &path), Some(AUTHORING), "{path}");
        }
        assert_eq!(access("GET", "/api/tools/t/source"), Some(RUNS_READ));
        assert_eq!(access("GET", "/api/tools/t/timing"), Some(RUNS_READ));
        assert_eq!(access("GET", "/api/upstreams"), Some(RUNS_READ));
        assert_eq!(access("GET", "/rest/v1/tools"), Some(TOOLS_LIST));
        assert_eq!(access("GET", "/rest/v1/tools/echo"), Some(TOOLS_LIST));
        assert_eq!(
            access("POST", "/rest/v1/tools/echo/call"),
            Some(Access::ToolCall)
        );
        assert_eq!(access("GET", "/rest/v1/health"), Some(Public));
        assert_eq!(access("GET", "/rest/v1/tools/echo/call/more"), None);
        assert_eq!(access("GET", "/ui/"), Some(Public));
        assert_eq!(access("GET", "/ui/assets/index-abc.js"), Some(Public));
        assert_eq!(access("GET", "/api/whoami"), Some(Access::Known));
        assert_eq!(access("POST", "/api/whoami"), None);
        assert_eq!(access("GET", "/api/whoami/more"), None);
        assert_eq!(access("GET", "/admin"), None);
        assert_eq!(access("GET", "/api/nothing"), None);
    }

    #[test]
    fn mcp_methods_need_their_scope() {
        assert_eq!(method_scope("tools/list"), Some(Scope::ToolsList));
        assert_eq!(method_scope("tools/call"), Some(Scope::ToolsCall));
        assert_eq!(method_scope("prompts/get"), Some(Scope::ToolsCall));
        assert_eq!(method_scope("initialize"), None);
        assert_eq!(method_scope("notifications/initialized"), None);
    }
}
