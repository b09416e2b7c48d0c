//! mcpflow engine: runs graph tools.
//!
//! ```ignore
//! let engine = Engine::new(&loaded.config, pool)?;          // compiles every expression once
//! let run = engine.run("sum_to_n", json!({"n": 3})).await;   // a finished Run
//! assert_eq!(run.output().unwrap().to_json(), json!({"sum": 6}));
//! assert_eq!(run.history.len(), 9);
//! ```
//!
//! A run is a loop over nodes with the limits checked before each. It records a
//! [`History`], keeps the expression [`Context`](mcpflow_expr::Context) incrementally (one
//! entry replaced per node, so a node's cost does not grow with the history), and emits
//! [`Event`]s to observers. [`Engine::start`] runs in the background under debug
//! [`Control`]: breakpoints, pause, resume, step and stop.
//!
//! The engine knows nothing of transports: MCP framing, HTTP and JSON-RPC belong to `server`;
//! it reaches upstream MCP servers only through [`mcpflow_upstream::UpstreamPool`].

mod control;
mod engine;
mod error;
mod event;
mod graph;
mod history;
mod output;
mod run;

pub use control::{Control, DebugState};
pub use engine::{Engine, RunHandle, RunOptions, ToolInfo};
pub use error::{CompileError, RunError, RunErrorKind};
pub use event::Event;
pub use graph::Graph;
pub use history::{History, Record};
pub use output::mcp_output;
pub use run::{Run, RunStatus};

pub use mcpflow_expr::Value;
