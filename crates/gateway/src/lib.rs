//! mcpflow-gateway: many upstream MCP servers behind one endpoint, and hooks on the traffic.
//!
//! ```ignore
//! let gateway = Gateway::new(&config, pool, Arc::new(my_tool_runner))?;
//! gateway.check_names().await?;                 // at start: two tools under one name?
//! let tools = gateway.list_tools(graph_tools, &context).await;
//! match gateway.route(&name).await {
//!     Some(route) => gateway.call(&route, request, &context).await,      // proxied, or tool search's
//!     None => gateway.hooks().around_call(traffic, args, run_graph).await, // a graph tool
//! }
//! ```
//!
//! The [`Gateway`] owns the proxied side of a served config: the upstreams it passes through
//! (`proxy:`), each one's tools renamed, filtered and overridden ([`expose`]), their resources,
//! prompts and completions ([`content`]), list changes re-announced, and every hook
//! ([`hooks`]); in tool search mode (`proxy.toolSearch`) a search tool and a call tool listed
//! in place of the proxied tools (`search.rs`). It is always present: a config that proxies nothing has a gateway with no
//! upstreams, which declares and answers nothing beyond the graph tools.
//!
//! Hooks wrap proxied traffic and, for hooks that opt in, the config's own graph tools, in one
//! sequence ([`Hooks::around_call`], [`Hooks::around_list`]): `pre` hooks, the call, `post`
//! hooks. A graph-tool hook (a hook whose body is a graph tool of this config) runs through
//! [`ToolRunner`], which the server supplies: this crate knows no engine.
//!
//! How a request crosses between the two protocol eras (a 2025-11-25 session client, a
//! 2026-07-28 stateless one, and the upstreams behind) is written up in this crate's
//! `README.md`.
//!
//! Never frames MCP messages (the server does, over its transports); reaches upstreams only
//! through [`mcpflow_upstream::UpstreamPool`].

mod call;
mod caller;
mod content;
mod era;
mod error;
mod expose;
mod gateway;
pub mod hooks;
mod listing;
pub mod notify;
mod search;

pub use error::GatewayError;
pub use gateway::{Gateway, Offer};
pub use hooks::trial::{Outcome as TrialOutcome, Sample, Trial, TrialError, Trials};
pub use hooks::{CallerMetadata, Hooks, ToolRunner, Traffic, Verdict};
pub use listing::Route;
