//! mcpflow-model holds the config's types, the single source of truth for a config file:
//! mcpGraph's graph format plus mcpflow's additive keys, and the JSON Schema generated from
//! them ([`schema()`]).
//!
//! ```
//! let config: mcpflow_model::Config = serde_json::from_value(serde_json::json!({
//!     "version": "1.0",
//!     "server": {"name": "demo", "version": "1"},
//!     "tools": [{"name": "echo", "nodes": [
//!         {"id": "entry", "type": "entry", "next": "exit"},
//!         {"id": "exit", "type": "exit"}
//!     ]}]
//! })).unwrap();
//! assert_eq!(config.tools[0].nodes[0].successors(), ["exit"]);
//! assert!(mcpflow_model::schema()["properties"]["tools"].is_object());
//! ```
//!
//! Plain data only: these types know no YAML, no positions, no expression language and no
//! sandbox. Loading them from files with `file:line:col` messages is `mcpflow-config`'s job;
//! compiling their expressions, scripts and schemas is the engine's, which reports what it
//! cannot compile as [`CompileError`]s at JSON pointers, the language the two share. So a crate
//! that only needs to read a config (an upstream pool needs its servers) depends on this crate
//! and nothing heavier. One exception, not data: [`future::boxed`], a `std`-only helper the
//! request-running crates share, here because they all depend on this crate.

pub mod audit;
pub mod auth;
pub mod authoring;
pub mod caller_header;
mod compile;
mod config;
pub mod future;
pub mod http;
mod node;
pub mod proxy;
mod schema;
pub mod script;
pub mod session;
pub mod store;
pub mod telemetry;

pub use audit::AuditConfig;
pub use auth::AuthConfig;
pub use authoring::AuthoringConfig;
pub use compile::{CompileError, CompileErrors, ToolParts, Within, describe};
pub use config::*;
pub use node::*;
pub use schema::schema;
pub use script::{ScriptFile, ScriptInput, ScriptLimits, ScriptNode};
pub use session::{AwaitMode, AwaitNode, SessionsConfig};
pub use store::{Retention, StoreConfig, StoreSetting};
