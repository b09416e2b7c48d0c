//! One QuickJS runtime with one context: what a single call runs in. An isolate serves exactly
//! one call and is then dropped, so nothing a script does (globals, prototypes, pending jobs,
//! garbage, interned symbols) can reach the next call. Creating one costs 65–125 µs, which the
//! worker pays after replying, before the next call arrives.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use rquickjs::context::intrinsic;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Module, Promise, Runtime, Value};
use serde_json::Value as Json;

use crate::budget::{Budget, thread_cpu_time};
use crate::clock;
use crate::console::{self, LogLine, LogSink};
use crate::json::{Mode, Walker};
use crate::memory::{Meter, capped_runtime};
use crate::pool::Job;
use crate::thrown::{Env, render};
use crate::{SandboxError, SandboxOptions};

/// The language, without `eval`/`Function` (no compiler at run time: scripts arrive as
/// bytecode), without timers, `performance`, `WeakRef`/`FinalizationRegistry` (which would make
/// results depend on the garbage collector), and without any I/O: QuickJS has none unless the
/// embedder adds it, and the only host function added here is the capturing `console`.
type CallIntrinsics = (
    intrinsic::Date,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
);

/// Parsing needs the compiler; nothing compiled here ever runs here.
type ParseIntrinsics = (CallIntrinsics, intrinsic::Eval);

/// A script ready to instantiate: QuickJS bytecode of a module whose default export is the
/// function to call.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) name: String,
    pub(crate) bytecode: Vec<u8>,
    /// Bytes of wrapper before the author's source on line 1 (expression form), else 0.
    pub(crate) prefix: usize,
}

/// Result of one call, with what the script logged and the CPU time it used.
#[derive(Debug)]
pub struct CallOutcome {
    pub result: Result<Option<Json>, SandboxError>,
    pub logs: Vec<LogLine>,
    pub cpu_time: Duration,
}

impl CallOutcome {
    pub(crate) fn failed(error: SandboxError) -> Self {
        Self {
            result: Err(error),
            logs: Vec::new(),
            cpu_time: Duration::ZERO,
        }
    }
}

pub(crate) struct Isolate {
    // Field order is drop order: the context must go before its runtime.
    pub(crate) context: Context,
    _runtime: Runtime,
    pub(crate) budget: Rc<Budget>,
    meter: Rc<Meter>,
    logs: Rc<RefCell<LogSink>>,
    stack_size: usize,
    max_output: usize,
}

impl Isolate {
    pub(crate) fn for_calls(options: &SandboxOptions) -> Result<Self, SandboxError> {
        Self::new::<CallIntrinsics>(options)
    }

    pub(crate) fn for_parsing(options: &SandboxOptions) -> Result<Self, SandboxError> {
        Self::new::<ParseIntrinsics>(options)
    }

    fn new<I: rquickjs::context::Intrinsic>(
        options: &SandboxOptions,
    ) -> Result<Self, SandboxError> {
        let oom = || SandboxError::OutOfMemory {
            limit: options.memory_limit_bytes,
        };
        let (runtime, meter) = capped_runtime(options.memory_limit_bytes).map_err(|_| oom())?;
        runtime.set_max_stack_size(options.stack_size);
        let budget = Rc::new(Budget::default());
        let handler_budget = Rc::clone(&budget);
        runtime.set_interrupt_handler(Some(Box::new(move || handler_budget.expired())));
        let context = Context::custom::<I>(&runtime).map_err(|_| oom())?;
        let logs = Rc::new(RefCell::new(LogSink::new(options.max_output_bytes)));
        context
            .with(|ctx| console::install(&ctx, &logs, &budget, &meter))
            .map_err(|e| SandboxError::Internal(format!("installing console: {e}")))?;
        Ok(Self {
            context,
            _runtime: runtime,
            budget,
            meter,
            logs,
            stack_size: options.stack_size,
            max_output: options.max_output_bytes,
        })
    }

    pub(crate) fn env<'a>(&'a self, script: &'a str, prefix: usize) -> Env<'a> {
        Env {
            budget: &self.budget,
            meter: &self.meter,
            stack_size: self.stack_size,
            script,
            prefix,
        }
    }

    /// Calls the job's script with its input (JSON text) and converts what it returns.
    pub(crate) fn call(&self, job: &Job) -> CallOutcome {
        let started = thread_cpu_time();
        self.budget.arm(job.cpu_time);
        self.budget.watch(Arc::clone(&job.cancel));
        let script = &job.script;
        let env = self.env(&script.name, script.prefix);
        let result = self.context.with(|ctx| {
            if let Some(fixed) = job.determinism {
                clock::install(&ctx, fixed).map_err(|e| env.explain_js_error(&ctx, e))?;
            }
            let function = instantiate(&ctx, script, &env)?;
            let input = ctx
                .json_parse(job.input.as_str())
                .map_err(|e| input_error(&ctx, e, &env))?;
            let returned: Value = function
                .call((input,))
                .map_err(|e| env.explain_js_error(&ctx, e))?;
            let returned = match returned.as_promise() {
                Some(promise) => settle(&ctx, promise, &env)?,
                None => returned,
            };
            Walker::new(
                ctx.clone(),
                &self.budget,
                &self.meter,
                Mode::Strict,
                self.max_output,
            )
            .walk(returned)
            .map_err(|stop| env.explain_stop(&ctx, stop))
        });
        CallOutcome {
            result,
            logs: self.logs.borrow_mut().take(),
            cpu_time: thread_cpu_time().saturating_sub(started),
        }
    }
}

/// Evaluates the module (its top level may await) and returns its default export.
pub(crate) fn instantiate<'js>(
    ctx: &Ctx<'js>,
    script: &Compiled,
    env: &Env<'_>,
) -> Result<Function<'js>, SandboxError> {
    // SAFETY: `bytecode` was produced by `Module::write` in this process, by this same QuickJS
    // build, and is never modified afterwards; `Module::load` requires exactly that.
    let declared = unsafe { Module::load(ctx.clone(), &script.bytecode) }
        .map_err(|e| env.explain_js_error(ctx, e))?;
    let (module, evaluated) = declared.eval().map_err(|e| env.explain_js_error(ctx, e))?;
    settle(ctx, &evaluated, env)?;
    let export: Value = module
        .get("default")
        .map_err(|e| env.explain_js_error(ctx, e))?;
    match export.as_function() {
        Some(f) => Ok(f.clone()),
        None if export.is_undefined() && script.prefix == 0 => Err(SandboxError::NotAFunction {
            found: "a module without a default export".into(),
        }),
        None => Err(SandboxError::NotAFunction {
            found: describe(ctx, env, export),
        }),
    }
}

fn describe<'js>(ctx: &Ctx<'js>, env: &Env<'_>, value: Value<'js>) -> String {
    let kind = value.type_name();
    let mut text = render(ctx, env.budget, env.meter, value);
    if text.len() > 80 {
        let mut cut = 80;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    format!("{kind} {text}")
}

/// Runs promise jobs until `promise` settles. A promise still pending with no job left to run
/// can never settle: there are no timers and no I/O that could resolve it later.
fn settle<'js>(
    ctx: &Ctx<'js>,
    promise: &Promise<'js>,
    env: &Env<'_>,
) -> Result<Value<'js>, SandboxError> {
    loop {
        match promise.state() {
            PromiseState::Resolved | PromiseState::Rejected => {
                return match promise.result::<Value>() {
                    Some(Ok(v)) => Ok(v),
                    Some(Err(e)) => Err(env.explain_js_error(ctx, e)),
                    None => Err(SandboxError::Unsettled),
                };
            }
            PromiseState::Pending => {
                // Jobs swallow their own exceptions, an interrupt included; the budget's flag
                // is how we learn that one was stopped.
                if env.budget.expired() {
                    return Err(env.timeout());
                }
                if !ctx.execute_pending_job() {
                    // A job that failed to allocate breaks the chain that would have settled it.
                    if env.meter.refused() == Some(true) {
                        return Err(SandboxError::OutOfMemory {
                            limit: env.meter.limit(),
                        });
                    }
                    return Err(SandboxError::Unsettled);
                }
            }
        }
    }
}

fn input_error<'js>(ctx: &Ctx<'js>, e: rquickjs::Error, env: &Env<'_>) -> SandboxError {
    match env.explain_js_error(ctx, e) {
        SandboxError::OutOfMemory { limit } => SandboxError::Input {
            reason: format!("it does not fit in the memory limit of {limit} bytes"),
        },
        SandboxError::StackOverflow { .. } => SandboxError::Input {
            reason: "it is nested too deeply".into(),
        },
        other => other,
    }
}
