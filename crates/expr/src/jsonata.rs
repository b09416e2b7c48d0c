//! JSONata through jlens-core: compile once, evaluate with limits against a `Scope`.

use std::sync::Arc;
use std::time::Duration;

use jlens_core::{Bindings, CancelToken, Expression, Options};
use serde_json::{Map, Value as Json};

use crate::history::{self, NoHistory};
use crate::input::Input;
use crate::{Context, ExprError, HistoryView, Value, memory};

mod direct;
mod plan;
mod range;

use direct::Direct;
use plan::{Hoisted, Plan, Rewritten};

/// Evaluation limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Wall-clock budget of one evaluation (JSONata `D1012` when exceeded).
    pub timeout: Duration,
    /// Maximum evaluation depth (JSONata `D1011` when exceeded); deep recursion fails with this
    /// error, never with a stack overflow.
    pub max_depth: usize,
    /// Bytes an evaluation may hold at once beyond what it started with ([`MEMORY_CODE`]
    /// when exceeded). Enforced when the process's allocator is [`crate::Metered`].
    ///
    /// [`MEMORY_CODE`]: crate::MEMORY_CODE
    pub max_memory_bytes: usize,
    /// Evaluation steps (nodes evaluated, functions called) before it stops with JSONata's
    /// `U1006`; `None`: no limit but the time. The engine uses a small one to tell cheap
    /// evaluations, done in place, from heavy ones, done again off the async runtime.
    pub max_steps: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(5),
            max_depth: 10_000,
            max_memory_bytes: Limits::DEFAULT_MAX_MEMORY_BYTES,
            max_steps: None,
        }
    }
}

impl Limits {
    /// 256 MiB: far above what a graph's expressions build from upstream outputs, far below
    /// what takes a server down.
    pub const DEFAULT_MAX_MEMORY_BYTES: usize = 256 * 1024 * 1024;

    fn options(&self, cancel: &CancelToken) -> Options {
        let options = Options::new()
            .timeout(self.timeout)
            .max_depth(self.max_depth)
            .cancel_token(cancel.clone());
        match self.max_steps {
            Some(steps) => options.max_steps(steps),
            None => options,
        }
    }

    /// Runs one evaluation under the memory budget: a budget that ran out turns jlens'
    /// cancellation into [`MEMORY_CODE`](crate::MEMORY_CODE).
    fn run<T>(
        &self,
        evaluate: impl FnOnce(&Options) -> Result<T, jlens_core::Error>,
    ) -> Result<T, ExprError> {
        let (result, exhausted) =
            memory::metered(self.max_memory_bytes, self.max_steps, |cancel| {
                evaluate(&self.options(cancel))
            });
        // Past the budget is an error even when the evaluation got to its end: jlens stops at
        // its next step, and a last step (`[1..$n]` as the whole expression) has none.
        match result {
            _ if exhausted => Err(ExprError::new(
                memory::MEMORY_CODE,
                format!(
                    "the expression needed more than {} MiB of memory at once, the limit of one \
                     evaluation; build smaller values (filter before mapping, avoid ranges of \
                     ranges)",
                    self.max_memory_bytes / (1024 * 1024)
                ),
            )),
            other => other.map_err(ExprError::from),
        }
    }
}

/// The variable (`$caller`) through which expressions read who started the run.
pub const CALLER: &str = "caller";

/// Everything an evaluation reads.
pub struct Scope<'a> {
    pub context: &'a Context,
    pub history: &'a dyn HistoryView,
    pub limits: &'a Limits,
    /// What `$caller` is bound to; `None` leaves it undefined.
    pub caller: Option<&'a Json>,
}

impl<'a> Scope<'a> {
    pub fn new(context: &'a Context, history: &'a dyn HistoryView, limits: &'a Limits) -> Self {
        Scope {
            context,
            history,
            limits,
            caller: None,
        }
    }

    /// The same scope with `$caller` bound to `caller`.
    pub fn with_caller(self, caller: Option<&'a Json>) -> Self {
        Scope { caller, ..self }
    }
}

/// What an evaluation reads besides its input: the history, the limits, and `$caller`.
#[derive(Clone, Copy)]
pub(crate) struct Reads<'a> {
    pub history: &'a dyn HistoryView,
    pub limits: &'a Limits,
    pub caller: Option<&'a Json>,
}

impl<'a> Reads<'a> {
    pub(crate) fn of(scope: &Scope<'a>) -> Self {
        Reads {
            history: scope.history,
            limits: scope.limits,
            caller: scope.caller,
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
    /// What the engine evaluates for it: the same with its ranges guarded.
    engine: Rewritten,
    plan: Plan,
    /// Walked directly over the context and history when it is in the subset that
    /// [`Direct`] takes (and jlens-core's otherwise).
    direct: Option<Direct>,
    /// Whether it names `$caller`: only then is the caller bound (a copy per evaluation).
    reads_caller: bool,
}

impl Jsonata {
    pub fn compile(src: &str) -> Result<Self, ExprError> {
        let expr = Expression::compile(src)?;
        let plan = Plan::new(&expr);
        let direct = match plan {
            // A plain path has its own lookup.
            Plan::Path(_) => None,
            Plan::Engine | Plan::Hoisted { .. } => Direct::new(&expr),
        };
        let reads_caller = plan::names_variable(&expr, CALLER);
        let engine = Rewritten::guarded(&expr);
        Ok(Jsonata {
            inner: Arc::new(Inner {
                expr,
                engine,
                plan,
                direct,
                reads_caller,
            }),
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
            .eval(Input::Context(scope.context), Reads::of(scope))?
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
            .fold(FUNCTIONS.clone(), |b, (k, v)| b.var(k.clone(), v.clone()));
        let engine = &self.inner.engine;
        limits
            .run(|options| {
                history::with_history(&NoHistory, || {
                    engine
                        .expr(&self.inner.expr)
                        .evaluate_with(input, &vars, options)
                })
            })
            .map_err(|e| engine.locate(e))
    }

    pub(crate) fn eval(
        &self,
        input: Input<'_>,
        reads: Reads<'_>,
    ) -> Result<Option<Json>, ExprError> {
        let Reads {
            history, limits, ..
        } = reads;
        let caller = reads.caller.filter(|_| self.inner.reads_caller);
        if let Some(direct) = &self.inner.direct
            && let Some(done) = direct.evaluate(input, history, limits)
        {
            return Ok(done);
        }
        match &self.inner.plan {
            Plan::Path(steps) => {
                if let Some(found) = plan::lookup(input, steps) {
                    return Ok(found.map(plan::as_jsonata));
                }
                self.run_as_written(input, reads, caller)
            }
            Plan::Engine => self.run_as_written(input, reads, caller),
            Plan::Hoisted { expr, calls } => {
                let hoisted = hoisted_bindings(calls, history);
                let bindings = with_caller(&hoisted, caller);
                match self.run(
                    expr.expr(&self.inner.expr),
                    input,
                    &bindings,
                    history,
                    limits,
                ) {
                    Ok(v) => Ok(v),
                    // An error about a replaced call would show its variable: the expression as
                    // written tells it in the user's terms (evaluation is pure, so it fails
                    // the same way).
                    Err(e) if e.message.contains(plan::HOISTED_PREFIX) => {
                        self.run_as_written(input, reads, caller)
                    }
                    Err(e) => Err(expr.locate(e)),
                }
            }
        }
    }

    /// The expression as written (its ranges guarded), with the history functions bound.
    fn run_as_written(
        &self,
        input: Input<'_>,
        reads: Reads<'_>,
        caller: Option<&Json>,
    ) -> Result<Option<Json>, ExprError> {
        let engine = &self.inner.engine;
        let bindings = with_caller(&FUNCTIONS, caller);
        self.run(
            engine.expr(&self.inner.expr),
            input,
            &bindings,
            reads.history,
            reads.limits,
        )
        .map_err(|e| engine.locate(e))
    }

    fn run(
        &self,
        expr: &Expression,
        input: Input<'_>,
        bindings: &Bindings,
        history: &dyn HistoryView,
        limits: &Limits,
    ) -> Result<Option<Json>, ExprError> {
        limits.run(|options| {
            history::with_history(history, || expr.evaluate_source(&input, bindings, options))
        })
    }
}

/// `bindings` with `$caller` bound, when the expression reads it and the scope has one;
/// otherwise `bindings` themselves (no copy).
fn with_caller<'b>(
    bindings: &'b Bindings,
    caller: Option<&Json>,
) -> std::borrow::Cow<'b, Bindings> {
    match caller {
        Some(caller) => std::borrow::Cow::Owned(bindings.clone().var(CALLER, caller.clone())),
        None => std::borrow::Cow::Borrowed(bindings),
    }
}

/// The history functions and the range guards, built once and shared by every evaluation.
static FUNCTIONS: std::sync::LazyLock<Bindings> =
    std::sync::LazyLock::new(|| range::bind(history::bind(Bindings::new())));

/// The functions, plus the values of the calls hoisted out of the expression.
fn hoisted_bindings(calls: &[Hoisted], h: &dyn HistoryView) -> Bindings {
    calls.iter().fold(FUNCTIONS.clone(), |b, call| {
        match history::call(call.function, &call.args, h) {
            Some(v) => b.var(call.var.clone(), v),
            None => b,
        }
    })
}
