//! mcpflow expressions: JSONata (through `jlens-core`), JSON Logic with `var` read through
//! JSONata, and mcpGraph's history functions. SKELETON: the expr helper replaces this file.
#![allow(dead_code, unused_variables)]

use std::time::Duration;

/// A JSON value in the expression engine's own form: converted once, cheap to clone.
#[derive(Clone, Debug, PartialEq)]
pub struct Value(std::sync::Arc<serde_json::Value>);

impl Value {
    pub fn from_json(v: serde_json::Value) -> Self {
        Value(std::sync::Arc::new(v))
    }
    pub fn to_json(&self) -> serde_json::Value {
        (*self.0).clone()
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// The flat `{nodeId: latest output}` object that expressions see as `$` and `$$`.
#[derive(Clone, Debug, Default)]
pub struct Context {}

impl Context {
    pub fn new() -> Self {
        Self::default()
    }
    /// Replaces one node's entry; `None` (undefined) removes the key.
    pub fn set(&mut self, node_id: &str, output: Option<Value>) {
        todo!()
    }
    pub fn get(&self, node_id: &str) -> Option<&Value> {
        todo!()
    }
    pub fn to_json(&self) -> serde_json::Value {
        todo!()
    }
}

/// What the history functions read; the engine's history implements it.
pub trait HistoryView {
    /// Records so far (mcpGraph's `cur` when a node starts).
    fn len(&self) -> usize;
    /// Output of record `index`; `None` when undefined or out of range.
    fn output(&self, index: usize) -> Option<&Value>;
    /// Indices of the records of `node_id`, oldest first.
    fn executions(&self, node_id: &str) -> &[usize];
}

/// Evaluation limits.
#[derive(Clone, Debug)]
pub struct Limits {
    pub timeout: Duration,
    pub max_depth: usize,
}

/// Everything an evaluation reads.
pub struct Scope<'a> {
    pub context: &'a Context,
    pub history: &'a dyn HistoryView,
    pub limits: &'a Limits,
}

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ExprError {
    pub message: String,
    pub code: Option<String>,
    pub position: Option<usize>,
}

/// A compiled JSONata expression.
#[derive(Clone, Debug)]
pub struct Jsonata {}

impl Jsonata {
    pub fn compile(src: &str) -> Result<Self, ExprError> {
        todo!()
    }
    pub fn evaluate(&self, scope: &Scope<'_>) -> Result<Option<Value>, ExprError> {
        todo!()
    }
}

/// A compiled JSON Logic rule whose `{var: "<string>"}` operands are JSONata.
#[derive(Clone, Debug)]
pub struct Logic {}

impl Logic {
    pub fn compile(rule: &serde_json::Value) -> Result<Self, ExprError> {
        todo!()
    }
    pub fn evaluate(&self, scope: &Scope<'_>) -> Result<serde_json::Value, ExprError> {
        todo!()
    }
}

/// mcp node arguments: literal JSON where `{expr: "<string>"}` objects are JSONata.
#[derive(Clone, Debug)]
pub struct Template {}

impl Template {
    pub fn compile(args: &serde_json::Value) -> Result<Self, ExprError> {
        todo!()
    }
    pub fn render(&self, scope: &Scope<'_>) -> Result<Option<serde_json::Value>, ExprError> {
        todo!()
    }
}

/// JavaScript truthiness.
pub fn truthy(v: &serde_json::Value) -> bool {
    todo!()
}
