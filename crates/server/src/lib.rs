//! mcpflow server: the MCP face of a config, over stdio and HTTP.
//!
//! ```ignore
//! let server = GraphServer::new(&loaded.config, engine)?;
//! mcpflow_server::serve_stdio(server).await?;   // until the client closes stdin
//! ```
//!
//! This crate frames MCP: the tool list (with the full input and output schemas, which mcpGraph
//! strips), argument validation against the schema the engine compiled (errors name the JSON
//! pointer), a [`Run`](mcpflow_engine::Run) turned into a `CallToolResult`, sessions of tools
//! that wait (`session/`), and the transports (`stdio/`, `http/`). What is proxied,
//! and every hook, is the [`Gateway`]'s; what runs, the engine's.

mod audit;
mod call_options;
mod caller;
mod error;
mod handler;
mod http;
mod live;
mod observe;
mod result;
mod server;
mod session;
mod stdio;
mod tool_call;

/// The hasher of the maps every call looks up (the session table, a session's streams and
/// routes, the tools by name): foldhash, seeded per map, where std's SipHash cost a few
/// thousand instructions per call. SipHash's defence against chosen colliding keys buys
/// nothing here: the keys are the server's own (the session ids it made, the config's tool
/// names) or a client's request ids within its own session, as many as its calls in flight.
pub(crate) type Fast = foldhash::fast::RandomState;

pub use audit::{Audit, AuditOptions};
pub use call_options::CallOptions;
pub use caller::engine_caller;
pub use error::ServerError;
pub use http::{HttpLimits, HttpListener, HttpOptions, ReadinessCheck};
pub use live::LiveServer;
pub use mcpflow_gateway::Gateway;
pub use result::tool_result;
pub use server::GraphServer;
pub use stdio::{StdioOptions, serve_stdio, serve_stdio_with};
