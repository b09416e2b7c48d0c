//! mcpflow-auth: access control, and only that. Who a request's credential belongs to (an API
//! key, or a JWT checked as an OAuth 2.1 resource server), what that principal may do (scopes,
//! tool globs), and what every endpoint of the HTTP listener asks for (one table).
//!
//! ```ignore
//! let auth = Arc::new(Auth::from_config(config.auth.as_ref(), "demo", |v| std::env::var(v).ok())?);
//! let app = app
//!     .merge(mcpflow_auth::http::metadata_router(auth.clone()))
//!     .layer(axum::middleware::from_fn_with_state(auth, mcpflow_auth::http::enforce));
//! // A route (or rmcp's handler, through the request's `http::request::Parts`) reads the caller:
//! let who = mcpflow_auth::http::principal_of(&parts.extensions);
//! ```
//!
//! This crate frames no MCP message and knows no other mcpflow crate but `model`: `server`
//! mounts the middleware and applies tool globs to what its handler lists and calls.

mod credential;
mod crypto;
mod endpoints;
mod error;
mod gate;
pub mod http;
mod jwt;
mod keys;
mod limits;
mod principal;
mod scopes;
mod tools;
mod verified;

pub use credential::Credential;
pub use endpoints::{Access, MCP_SCOPES, access, method_scope};
pub use error::ConfigError;
pub use gate::{Auth, Refusal};
pub use jwt::{JwtVerifier, TokenRefusal};
pub use keys::{KEY_PREFIX, KeyStore, NewKey, new_key};
pub use limits::{RUNS_RETRY_AFTER_SECONDS, RunQuota, RunSlot};
pub use mcpflow_model::auth::{AuthConfig, RateLimit, Scope};
pub use principal::{Principal, Via};
pub use scopes::Scopes;
pub use tools::ToolGlobs;
