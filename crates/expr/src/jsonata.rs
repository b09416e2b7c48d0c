//! JSONata through jlens-core: compile once, evaluate with limits against a `Scope`.

use std::sync::Arc;
use std::time::Duration;

use jlens_core::{Bindings, Expression, Options};
use serde_json::{Map, Value as Json};

use crate::history::{self, NoHistory};
use crate::input::Input;
use crate::{Context, ExprError, HistoryView, Value};

mod plan;

use plan::{Hoisted, Plan};

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

/// A compiled JSONata expression. Cloning shares it.
#[derive(Clone, Debug)]
pub struct Jsonata {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// As written: its errors and positions are the ones reported.
    expr: Expression,
    plan: Plan,
}

impl Jsonata {
    pub fn compile(src: &str) -> Result<Self, ExprError> {
        let expr = Expression::compile(src)?;
        let plan = Plan::new(&expr);
        Ok(Jsonata {
            inner: Arc::new(Inner { expr, plan }),
        })
    }

    /// The source text.
    pub fn source(&self) -> &str {
        self.inner.expr.source()
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
        let vars = bindings
            .iter()
            .fold(history::FUNCTIONS.clone(), |b, (k, v)| {
                b.var(k.clone(), v.clone())
            });
        let options = limits.options();
        history::with_history(&NoHistory, || {
            self.inner.expr.evaluate_with(input, &vars, &options)
        })
        .map_err(ExprError::from)
    }

    pub(crate) fn eval(
        &self,
        input: Input<'_>,
        history: &dyn HistoryView,
        limits: &Limits,
    ) -> Result<Option<Json>, ExprError> {
        match &self.inner.plan {
            Plan::Path(steps) => {
                if let Some(found) = plan::lookup(input, steps) {
                    return Ok(found.cloned());
                }
                self.run(
                    &self.inner.expr,
                    input,
                    &history::FUNCTIONS,
                    history,
                    limits,
                )
            }
            Plan::Engine => self.run(
                &self.inner.expr,
                input,
                &history::FUNCTIONS,
                history,
                limits,
            ),
            Plan::Hoisted {
                expr,
                calls,
                replaced,
            } => {
                let bindings = hoisted_bindings(calls, history);
                match self.run(expr, input, &bindings, history, limits) {
                    Ok(v) => Ok(v),
                    // An error about a replaced call would show its variable: the expression as
                    // written tells it in the user's terms (evaluation is pure, so it fails
                    // the same way).
                    Err(e) if e.message.contains(plan::HOISTED_PREFIX) => {
                        let functions = &history::FUNCTIONS;
                        self.run(&self.inner.expr, input, functions, history, limits)
                    }
                    Err(mut e) => {
                        e.position = e.position.map(|p| plan::original_position(replaced, p));
                        Err(e)
                    }
                }
            }
        }
    }

    fn run(
        &self,
        expr: &Expression,
        input: Input<'_>,
        bindings: &Bindings,
        history: &dyn HistoryView,
        limits: &Limits,
    ) -> Result<Option<Json>, ExprError> {
        let options = limits.options();
        history::with_history(history, || expr.evaluate_source(&input, bindings, &options))
            .map_err(ExprError::from)
    }
}

/// The history functions, plus the values of the calls hoisted out of the expression.
fn hoisted_bindings(calls: &[Hoisted], h: &dyn HistoryView) -> Bindings {
    calls.iter().fold(history::FUNCTIONS.clone(), |b, call| {
        match history::call(call.function, &call.args, h) {
            Some(v) => b.var(call.var.clone(), v),
            None => b,
        }
    })
}
