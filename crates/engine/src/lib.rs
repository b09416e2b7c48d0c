//! mcpflow engine: runs graph tools.
//!
//! ```ignore
//! let engine = Engine::new(&loaded.config, pool)?;          // compiles everything, once
//! let run = engine.run(RunRequest::new("sum_to_n", json!({"n": 3}))).await;
//! assert_eq!(run.output().unwrap().to_json(), json!({"sum": 6}));
//! assert_eq!(run.history.len(), 9);
//! ```
//!
//! A run is a loop over nodes with the limits checked before each. It records a
//! [`History`], keeps the expression [`Context`](mcpflow_expr::Context) incrementally (one
//! entry replaced per node, so a node's cost does not grow with the history), and emits
//! [`Event`]s to observers. Every run starts from a [`RunRequest`] through [`Engine::run`]
//! ([`Engine::spawn`] runs it in the background) and ends [`RunEnd::Finished`] or
//! [`RunEnd::Waiting`] for its client. Debug [`Control`]: breakpoints, pause, resume, step and
//! stop, in the main flow and in branches and items alike; a breakpoint may carry a JSONata
//! condition on the context. An [`Observe`]r attached to the engine hears of every run's start
//! and end (the HTTP run API's registry of live runs).
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

mod caller;
mod compile;
mod control;
mod durable;
mod engine;
mod error;
mod event;
mod frame;
mod graph;
mod history;
mod nodes;
mod observe;
mod offload;
mod output;
mod request;
mod resilience;
mod run;
mod schema;
mod spans;

pub use caller::{Caller, RunLimit, RunSlot, TooManyRuns};
pub use compile::check;
pub use control::{Breakpoint, Control, DebugState, PausedLine};
pub use durable::{Durability, SessionError, Versions};
pub use engine::{Engine, MAX_PREDECESSORS, ToolInfo};
pub use error::{RunError, RunErrorKind};
pub use event::Event;
pub use graph::Graph;
pub use history::{History, Parent, Record};
pub use mcpflow_model::{CompileError, CompileErrors};
pub use nodes::await_node::{Answer, Ask, Suspension};
pub use observe::{Observe, Started};
pub use output::mcp_output;
pub use request::{RunHandle, RunRequest};
pub use run::{Run, RunEnd, RunStatus, Waiting};
pub use schema::{SchemaError, SchemaValidator};

pub use mcpflow_expr::{ExprError, Value};
