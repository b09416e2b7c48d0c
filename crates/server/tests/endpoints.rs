//! Every endpoint the listener serves declares the access it needs in `mcpflow_auth`'s one
//! table: each path and method of the OpenAPI document (the run API and the REST face), and
//! the listener's own.
//! (An undeclared one is refused 404 at run time; this says which, before any request.)

use serde_json::Value;

/// The document's operations that are public by design: a health probe carries no credential.
const PUBLIC: &[&str] = &["get /rest/v1/health"];

#[test]
fn every_run_api_operation_declares_its_access() {
    let doc: Value = serde_json::from_str(mcpflow_api::OPENAPI).expect("the OpenAPI document");
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() >= 15, "the document lists the API");
    let mut undeclared = Vec::new();
    for (path, operations) in paths {
        for method in operations.as_object().expect("operations").keys() {
            if !["get", "post", "put", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            // `{id}` stands for any one segment, as a request's would.
            let concrete = path.replace('{', "x").replace('}', "");
            match mcpflow_auth::access(&method.to_uppercase(), &concrete) {
                Some(mcpflow_auth::Access::Public)
                    if !PUBLIC.contains(&format!("{method} {path}").as_str()) =>
                {
                    undeclared.push(format!("{method} {path} is public"))
                }
                Some(_) => {}
                None => undeclared.push(format!("{method} {path}")),
            }
        }
    }
    assert!(undeclared.is_empty(), "{undeclared:#?}");
}

#[test]
fn the_listeners_own_endpoints_declare_theirs() {
    use mcpflow_auth::{Access, Scope, access};
    for (method, path, expected) in [
        ("POST", "/mcp", Access::Mcp),
        ("GET", "/mcp", Access::Mcp),
        ("DELETE", "/mcp", Access::Mcp),
        ("GET", "/sse", Access::Mcp),
        ("POST", "/message", Access::Mcp),
        ("GET", "/healthz", Access::Public),
        ("GET", "/readyz", Access::Public),
        ("GET", "/metrics", Access::Scope(Scope::Metrics)),
        // The web UI's files hold no data: the page that asks for a key loads without one.
        ("GET", "/ui", Access::Public),
        ("GET", "/ui/", Access::Public),
        ("GET", "/ui/assets/index.js", Access::Public),
        (
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            Access::Public,
        ),
        ("GET", "/rest/v1/tools", Access::Scope(Scope::ToolsList)),
        (
            "GET",
            "/rest/v1/tools/echo",
            Access::Scope(Scope::ToolsList),
        ),
        ("POST", "/rest/v1/tools/echo/call", Access::ToolCall),
        ("GET", "/rest/v1/health", Access::Public),
    ] {
        assert_eq!(access(method, path), Some(expected), "{method} {path}");
    }
}
