//! Expression errors with their JSONata (or our own) code and position.

use std::fmt;

/// An expression failed to compile or to evaluate.
///
/// `code` is the JSONata error code (`S0203`, `T2001`, `D1012`…) for JSONata errors, and one of
/// ours (`L…` for JSON Logic, `H…` for the history functions) otherwise. `position` is the
/// character offset in the expression source where the error was detected, when known.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ExprError {
    pub message: String,
    pub code: Option<String>,
    pub position: Option<usize>,
}

impl ExprError {
    /// An error with a code of ours and no position.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        ExprError {
            message: message.into(),
            code: Some(code.to_owned()),
            position: None,
        }
    }

    /// The same error, its message prefixed with where it happened (a rule path, an argument
    /// pointer).
    pub fn context(mut self, prefix: impl fmt::Display) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        self
    }
}

impl ExprError {
    /// The message, followed by the code and the position when known.
    fn render(&self) -> String {
        match (&self.code, self.position) {
            (Some(code), Some(pos)) => format!("{} [{code} at {pos}]", self.message),
            (Some(code), None) => format!("{} [{code}]", self.message),
            (None, Some(pos)) => format!("{} [at {pos}]", self.message),
            (None, None) => self.message.clone(),
        }
    }
}

impl From<jlens_core::Error> for ExprError {
    fn from(e: jlens_core::Error) -> Self {
        ExprError {
            message: e.message(),
            code: Some(e.code().to_owned()),
            position: e.position(),
        }
    }
}
