//! mcpflow-config loads a config file (mcpGraph's YAML graph format plus mcpflow's keys) into
//! typed [`Config`] values, and reports every problem of the file at once with its
//! `file:line:col`.
//!
//! ```no_run
//! use std::path::Path;
//!
//! match mcpflow_config::load(Path::new("graph.yaml"), Some(Path::new("mcp.json"))) {
//!     Ok(loaded) => {
//!         for w in &loaded.warnings {
//!             eprintln!("warning: {w}");
//!         }
//!         println!("{} tools", loaded.config.tools.len());
//!         // Where the engine's errors should point:
//!         let pos = loaded.locate("/tools/0/nodes/2");
//!         # let _ = pos;
//!     }
//!     // One `file:line:col: message` (and a hint) per problem, then "3 errors".
//!     Err(errors) => eprintln!("{errors}"),
//! }
//! ```
//!
//! What loading checks, in order, collecting everything it finds:
//! - `include:`d files of graph tools (`tools:` only), appended with their own positions, and
//!   the hooks file the web UI writes (`authoring.hooksFile`, `hooks:` only) likewise;
//! - YAML syntax, duplicate keys, and input budgets (size, nesting depth, alias expansion);
//! - structure, against the JSON Schema generated from the types ([`schema()`]): unknown keys
//!   (with a "did you mean"), missing keys, wrong types, limits that are not positive integers;
//! - `${VAR}` references in server settings ([`interpolate`]): an unset variable is an error;
//! - the graphs: one entry and one exit per tool, unique node ids and tool names, every `next`
//!   and every mcp `server` defined, the exit reachable from the entry (unreachable nodes are
//!   warnings);
//! - `script` nodes: `file:` scripts read (relative to the config);
//! - the resilience extensions: `retry` only on `mcp`/`call` nodes, every branch, body and
//!   `onError` target defined, every `parallel` branch reaching its join and every `foreach`
//!   body routing back to its `foreach` (never into the exit), `call` targets defined and free
//!   of cycles.
//!
//! Expressions, scripts and schemas are compiled by the engine, once; [`Loader::read`] gives a
//! [`Draft`] to compile and [`Draft::finish`] places the compiler's errors (JSON pointers, see
//! [`mcpflow_model::CompileError`]) at their `file:line:col` among the loader's own, so JSONata
//! and JavaScript syntax errors point at their line and column.
//!
//! Leniency kept for files written for mcpGraph: a stdio server's `args` may be omitted (empty),
//! a number written `1.0` is the integer 1 (as in JavaScript). Stricter than mcpGraph: unknown
//! keys, duplicate keys and duplicate node ids are errors.

mod error;
mod flow;
mod include;
pub mod interpolate;
mod load;
mod mcp_json;
mod mcpgraph_0_1_23;
mod place;
pub mod proxy;
mod read;
mod schema;
pub mod script;
mod source;
mod structure;
mod suggest;
mod validate;
mod version;
mod yaml;

pub use error::{ConfigError, ConfigErrors};
pub use include::{MAX_INCLUDED_FILES, hooks_file, save_dir};
pub use load::{Draft, Loaded, Loader, load, load_str, node_pointer, parse_value};
pub use mcpflow_model::*;
pub use mcpflow_model::{http, session, telemetry};
pub use mcpgraph_0_1_23::{MigrateError, Migrated, migrate};
pub use read::{ReadError, read_text};
pub use schema::schema;

/// The config's types, which live in [`mcpflow_model`]; kept at this path for existing users.
pub mod model {
    pub use mcpflow_model::*;
}
pub use source::{SourceMap, SourcePos};
pub use version::version;
pub use yaml::{MAX_ALIAS_REPLAY, MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES};
