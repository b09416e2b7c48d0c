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
//! Resilience (mcpflow extensions, see the README's config reference): every node may have
//! `timeoutMs`, `retry` (exponential backoff; only timeouts, transport errors and, if asked,
//! tool errors are retried), `onError` and `optional` (the failure becomes the node's output,
//! `{message, code, nodeId, kind, attempts}`). `parallel` runs branches concurrently,
//! `foreach` maps a body over an array with a concurrency limit, `call` runs another tool as a
//! sub-run; `script` runs a JavaScript function in `mcpflow_sandbox` (one sandbox per engine,
//! started on the first script node; a throw, a spent CPU or memory budget fails only the
//! node). A branch or item runs on a fork of the history and context (the branch-local
//! view); its records are appended to the run's history when the node ends, each with its
//! [`Parent`]. [`Control::cancel`] stops a run on the client's behalf ([`RunStatus::Cancelled`]);
//! dropped upstream calls are cancelled at the upstream.
//!
//! The engine knows nothing of transports: MCP framing, HTTP and JSON-RPC belong to `server`;
//! it reaches upstream MCP servers only through [`mcpflow_upstream::UpstreamPool`].

mod await_node;
mod control;
mod durable;
mod engine;
mod error;
mod event;
mod fanout;
mod frame;
mod graph;
mod history;
mod output;
mod resilience;
mod run;
mod script_node;

pub use await_node::{Answer, Ask, Suspension};
pub use control::{Control, DebugState};
pub use durable::{Durability, SessionError, waiting_json};
pub use engine::{Engine, RunHandle, RunOptions, ToolInfo};
pub use error::{CompileError, RunError, RunErrorKind};
pub use event::Event;
pub use graph::Graph;
pub use history::{History, Parent, Record};
pub use output::mcp_output;
pub use run::{Run, RunStatus};

pub use mcpflow_expr::Value;
