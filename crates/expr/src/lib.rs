//! mcpflow's expression layer: JSONata (through `jlens-core`), JSON Logic whose `var` operands
//! are JSONata, mcp argument templates, and mcpGraph's history functions
//! (`$previousNode`, `$executionCount`, `$nodeExecution`, `$nodeExecutions`).
//!
//! ```
//! use mcpflow_expr::{Context, Jsonata, Limits, Logic, MemoryHistory, Scope, Template, Value};
//! use serde_json::json;
//!
//! // What the engine keeps as a run goes: the history, and the context built from it.
//! let mut history = MemoryHistory::new();
//! let mut ctx = Context::new();
//! let entry = Value::from_json(json!({"value": "15"}));
//! history.push("entry", Some(entry.clone()));
//! ctx.set("entry", Some(entry));
//!
//! let limits = Limits::default();
//! let scope = Scope::new(&ctx, &history, &limits);
//!
//! // transform: JSONata, with the history functions.
//! let expr = Jsonata::compile("{'v': $.entry.value, 'runs': $executionCount('entry')}").unwrap();
//! let out = expr.evaluate(&scope).unwrap().map(|v| v.to_json());
//! assert_eq!(out, Some(json!({"v": "15", "runs": 1})));
//!
//! // switch: JSON Logic with JavaScript's loose comparison ("15" > 10), `var` as JSONata.
//! let rule = Logic::compile(&json!({">": [{"var": "entry.value"}, 10]})).unwrap();
//! assert!(mcpflow_expr::truthy(&rule.evaluate(&scope).unwrap()));
//!
//! // mcp args: literal JSON where `{"expr": ...}` is JSONata.
//! let args = Template::compile(&json!({"n": {"expr": "$number(entry.value)"}, "mode": "r"})).unwrap();
//! assert_eq!(args.render(&scope).unwrap(), Some(json!({"n": 15, "mode": "r"})));
//! ```
//!
//! Everything is compiled once ([`Jsonata::compile`], [`Logic::compile`],
//! [`Template::compile`]; syntax errors surface there) and evaluated many times against a
//! [`Scope`]: the [`Context`] the engine keeps incrementally, a [`HistoryView`] of the run,
//! and [`Limits`] (time and depth: a runaway expression fails with `D1012` or `D1011`, never
//! with a stack overflow or a hang).
//!
//! Cost does not grow with the history: a node output is shared ([`Value`] is an `Arc`), the
//! evaluator reads the context one level at a time and only where an expression reaches, a
//! plain path such as `$.node.field` is looked up without the JSONata engine, and a history
//! call with literal arguments (`$nodeExecution("n", -1)`) is computed once per evaluation
//! from the history's per-node index.
//!
//! [`Jsonata::evaluate_json`] and [`Logic::compile_classic`] / [`Logic::evaluate_json`] are the
//! plain-JSON entry points (CLI, conformance tests).

mod error;
mod history;
mod ids;
mod input;
mod jsonata;
mod logic;
mod member;
mod memory;
mod template;
mod value;

pub use error::ExprError;
pub use history::{HistoryView, MemoryHistory, NoHistory};
pub use ids::NodeIds;
pub use jsonata::{CALLER, Jsonata, Limits, Scope};
pub use logic::{Logic, js_truthy, logic_truthy, truthy};
pub use memory::{MEMORY_CODE, Metered, memory_bound_active};
pub use template::Template;
pub use value::{Context, Value};
