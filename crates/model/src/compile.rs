//! What the engine's compiler says about a config: problems at JSON pointers into it, which
//! the config loader (it has the positions) turns into `file:line:col`; and the parts of a
//! config that is broken elsewhere which can still be compiled, so every problem is reported
//! at once.

use std::fmt;

use serde_json::Value;

use crate::node::Node;

/// A part of a config that cannot be compiled: an expression, a script or a JSON Schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// JSON pointer of the offending value (`/tools/3/nodes/2/transform/expr`).
    pub pointer: String,
    /// Where inside that value the problem is, when the compiler knows.
    pub within: Within,
    pub message: String,
    pub hint: Option<String>,
}

/// A place inside the value a [`CompileError`] points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Within {
    /// The value as a whole.
    #[default]
    Value,
    /// A character offset into the string at the pointer (where a parser stopped).
    Offset(usize),
    /// A line and column (1-based, in characters) of the file the value at the pointer names:
    /// a `file:` script.
    FileLine { line: u32, col: u32 },
}

impl CompileError {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        CompileError {
            pointer: pointer.into(),
            within: Within::Value,
            message: message.into(),
            hint: None,
        }
    }

    #[must_use]
    pub fn within(mut self, within: Within) -> Self {
        self.within = within;
        self
    }

    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "at {}: {}", self.pointer, self.message)
        }
    }
}

impl std::error::Error for CompileError {}

/// Every compile error of a config, in config order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompileErrors(pub Vec<CompileError>);

impl fmt::Display for CompileErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileErrors {}

/// The compilable parts of tool `index` of a config that did not load as a whole: its schemas
/// and the nodes that are well-formed on their own (by index), `file:` scripts already read.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolParts {
    pub index: usize,
    pub name: Option<String>,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub nodes: Vec<(usize, Node)>,
}

/// A short description of a value for "got …" in messages about a config. Never quotes long
/// text.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "nothing (null)".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("{n}"),
        Value::String(s) if s.chars().count() > 40 => "a string".into(),
        Value::String(s) => format!("the string \"{s}\""),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}
