use std::time::Duration;

use jlens_core::{Bindings, Expression, Options};
use serde_json::{Map, Value as Json};

use crate::history::{self, NoHistory};
use crate::input::Input;
use crate::{Context, ExprError, HistoryView, Value};

/// Evaluation limits.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Wall-clock budget of one evaluation (JSONata `D1012` when exceeded).
    pub timeout: Duration,
    /// Maximum evaluation depth (JSONata `D1011` when exceeded); deep recursion fails with this
    /// error, never with a stack overflow.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(5),
            max_depth: 10_000,
        }
    }
}

impl Limits {
    fn options(&self) -> Options {
        Options::new()
            .timeout(self.timeout)
            .max_depth(self.max_depth)
    }
}

/// Everything an evaluation reads.
pub struct Scope<'a> {
    pub context: &'a Context,
    pub history: &'a dyn HistoryView,
    pub limits: &'a Limits,
}

impl<'a> Scope<'a> {
    pub fn new(context: &'a Context, history: &'a dyn HistoryView, limits: &'a Limits) -> Self {
        Scope {
            context,
            history,
            limits,
        }
    }
}

/// A compiled JSONata expression.
#[derive(Clone, Debug)]
pub struct Jsonata {
    expr: Expression,
}

impl Jsonata {
    pub fn compile(src: &str) -> Result<Self, ExprError> {
        Ok(Jsonata {
            expr: Expression::compile(src)?,
        })
    }

    /// The source text.
    pub fn source(&self) -> &str {
        self.expr.source()
    }

    /// Evaluates against the context (`$`, `$$`) with the history functions bound.
    /// `Ok(None)` is JSONata's undefined.
    pub fn evaluate(&self, scope: &Scope<'_>) -> Result<Option<Value>, ExprError> {
        Ok(self
            .eval(Input::Context(scope.context), scope.history, scope.limits)?
            .map(Value::from_json))
    }

    /// Plain JSON in and out, for the CLI and the conformance tests: `input` `None` is
    /// undefined; `bindings` are variables (`$name`); the history functions see an empty
    /// history.
    pub fn evaluate_json(
        &self,
        input: Option<&Json>,
        bindings: &Map<String, Json>,
        limits: &Limits,
    ) -> Result<Option<Json>, ExprError> {
        let vars: Bindings = history::bind(Bindings::new());
        let vars = bindings
            .iter()
            .fold(vars, |b, (k, v)| b.var(k.clone(), v.clone()));
        let options = limits.options();
        history::with_history(&NoHistory, || {
            self.expr.evaluate_with(input, &vars, &options)
        })
        .map_err(ExprError::from)
    }

    pub(crate) fn eval(
        &self,
        input: Input<'_>,
        history: &dyn HistoryView,
        limits: &Limits,
    ) -> Result<Option<Json>, ExprError> {
        let options = limits.options();
        history::with_history(history, || {
            self.expr
                .evaluate_source(&input, &history::FUNCTIONS, &options)
        })
        .map_err(ExprError::from)
    }
}
