//! Who a request to an upstream is made for (issue #18), as `${caller.…}` in a remote
//! upstream's `headers` reads it (`mcpflow_model::caller_header`). The engine gives it for a
//! graph's calls, the gateway for the calls it forwards; the handshake, listings and anything
//! made for nobody carry none, and their templated headers are left out.

use std::fmt;
use std::sync::Arc;

use mcpflow_model::caller_header::HeaderTemplate;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, JsonRpcMessage};
use serde_json::Value;

/// The caller of one request: what expressions read as `$caller`, and the credential it
/// presented when the server keeps it for a `forwardCallerToken` upstream.
#[derive(Clone)]
pub struct Identity {
    caller: Arc<Value>,
    token: Option<Arc<str>>,
}

impl Identity {
    pub fn new(caller: Arc<Value>, token: Option<Arc<str>>) -> Identity {
        Identity { caller, token }
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("caller", &self.caller)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// One header of a remote upstream whose value names the caller.
#[derive(Debug, Clone)]
pub(crate) struct CallerHeader {
    pub name: HeaderName,
    pub template: HeaderTemplate,
}

/// A request's headers rendered for its caller, carried to the HTTP transport in the request's
/// extensions (the one thing of a request that reaches it).
#[derive(Clone)]
pub(crate) struct CallerHeaders(Arc<[(HeaderName, HeaderValue)]>);

impl CallerHeaders {
    /// `None` when no header renders for this caller.
    pub(crate) fn render(
        upstream: &str,
        headers: &[CallerHeader],
        identity: &Identity,
    ) -> Option<CallerHeaders> {
        let rendered: Vec<(HeaderName, HeaderValue)> = headers
            .iter()
            .filter_map(|h| {
                let text = h
                    .template
                    .render(&identity.caller, identity.token.as_deref())?;
                match HeaderValue::from_str(&text) {
                    Ok(mut value) => {
                        value.set_sensitive(true);
                        Some((h.name.clone(), value))
                    }
                    Err(_) => {
                        // A claim with a line break must not split the request: left out,
                        // and the value (the caller's) is not logged.
                        tracing::warn!(
                            %upstream,
                            header = %h.name,
                            "left out a header whose value for this caller is not a valid HTTP header value"
                        );
                        None
                    }
                }
            })
            .collect();
        (!rendered.is_empty()).then(|| CallerHeaders(rendered.into()))
    }

    /// The headers of `message`'s caller, if it is a request made for one.
    pub(crate) fn of(message: &ClientJsonRpcMessage) -> Option<&CallerHeaders> {
        match message {
            JsonRpcMessage::Request(request) => request.request.extensions().get(),
            _ => None,
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &(HeaderName, HeaderValue)> {
        self.0.iter()
    }
}
