//! One QuickJS runtime with one hardened context: what a worker's calls run in, one after
//! another, until it is replaced. Nothing a call does can reach the next (see the crate docs,
//! "Isolation"): everything the calls share is frozen ([`crate::lockdown`]), each call
//! instantiates its script's module afresh, no import resolves, what a call left queued runs
//! (inside its own CPU budget) before the next starts, and the clock and randomness are set per
//! call. Whenever a call ends in a way that could leave the context in doubt (out of time or
//! memory, a stack overflow, cancelled, a queue it left that does not drain) the isolate is
//! dropped and a fresh one prepared.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use rquickjs::context::intrinsic;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Module, Persistent, Promise, Runtime, Value};
use serde_json::Value as Json;

use crate::budget::{Budget, thread_cpu_time};
use crate::clock::{self, Clock};
use crate::console::{self, LogLine, LogSink};
use crate::json::{Mode, Walker};
use crate::lockdown;
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
pub(crate) type ParseIntrinsics = (CallIntrinsics, intrinsic::Eval);

/// A script ready to instantiate: QuickJS bytecode of a module.
#[derive(Debug)]
pub(crate) struct Compiled {
    /// Unique in the process: what an isolate keeps the script's factory under.
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) bytecode: Vec<u8>,
    /// Bytes of wrapper before the author's source on line 1 (expression form), else 0.
    pub(crate) prefix: usize,
    pub(crate) shape: Shape,
}

/// What the module's default export is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A function that evaluates the author's expression afresh and returns the function to
    /// call. The module holds nothing else (`source::wrap_element`), so an isolate instantiates
    /// it once and keeps it.
    Factory,
    /// The function to call. The module may hold state of its own at its top level, so each
    /// call instantiates it afresh.
    Module,
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

/// Calls one isolate serves at most: each leaves its module instance in the context (QuickJS
/// frees modules only with their context), so the list, and the collector's work, stay bounded.
const MAX_CALLS: u32 = 10_000;

/// Scripts whose factories one isolate keeps before it is replaced (scripts compiled and
/// dropped, as the authoring tools do, would otherwise pile up).
const MAX_FACTORIES: usize = 64;

/// Heap an isolate may hold past its hardened baseline between calls (what earlier calls'
/// modules keep, garbage not yet collected) before it is replaced: at most this much of the
/// memory limit is not available to a call.
fn max_retained(limit: usize) -> usize {
    (limit / 16).min(1 << 20)
}

pub(crate) struct Isolate {
    // Field order is drop order: the factories before the context, the context before its
    // runtime.
    /// The factories of the scripts called here, by `Compiled::id`.
    factories: RefCell<HashMap<u64, Persistent<Function<'static>>>>,
    pub(crate) context: Context,
    runtime: Runtime,
    pub(crate) budget: Rc<Budget>,
    meter: Rc<Meter>,
    logs: Rc<RefCell<LogSink>>,
    clock: Rc<Clock>,
    stack_size: usize,
    max_output: usize,
    /// Heap bytes held once hardened, before any call.
    baseline: usize,
    calls: u32,
    /// Scripts whose first module instance here has had its `import.meta` frozen.
    sealed: HashSet<String>,
}

impl Isolate {
    /// A hardened isolate, ready for calls (about 9 M instructions: see the crate docs).
    pub(crate) fn for_calls(options: &SandboxOptions) -> Result<Self, SandboxError> {
        let mut isolate = Self::new::<CallIntrinsics>(options)?;
        isolate.context.with(|ctx| {
            clock::install(&ctx, &isolate.clock)
                .map_err(|e| SandboxError::Internal(format!("installing the clock: {e}")))?;
            lockdown::harden(&ctx)
        })?;
        isolate.runtime.run_gc();
        isolate.baseline = isolate.meter.used();
        Ok(isolate)
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
        runtime.set_loader(NoImports, NoImports);
        let budget = Rc::new(Budget::default());
        let handler_budget = Rc::clone(&budget);
        runtime.set_interrupt_handler(Some(Box::new(move || handler_budget.expired())));
        let context = Context::custom::<I>(&runtime).map_err(|_| oom())?;
        let logs = Rc::new(RefCell::new(LogSink::new(options.max_output_bytes)));
        context
            .with(|ctx| console::install(&ctx, &logs, &budget, &meter))
            .map_err(|e| SandboxError::Internal(format!("installing console: {e}")))?;
        Ok(Self {
            factories: RefCell::default(),
            context,
            runtime,
            budget,
            meter,
            logs,
            clock: Rc::default(),
            stack_size: options.stack_size,
            max_output: options.max_output_bytes,
            baseline: 0,
            calls: 0,
            sealed: HashSet::new(),
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
    pub(crate) fn call(&mut self, job: &Job) -> CallOutcome {
        let started = thread_cpu_time();
        self.calls += 1;
        self.meter.begin_call();
        self.clock.begin(job.determinism);
        self.budget.arm(job.cpu_time);
        self.budget.watch(Arc::clone(&job.cancel));
        let script = &job.script;
        let seal = !self.sealed.contains(&script.name);
        let env = self.env(&script.name, script.prefix);
        let result = self.context.with(|ctx| {
            let function = match script.shape {
                Shape::Module => instantiate(&ctx, script, &env, seal)?,
                Shape::Factory => {
                    let kept = self.factories.borrow().get(&script.id).cloned();
                    let factory = match kept {
                        Some(kept) => kept
                            .restore(&ctx)
                            .map_err(|e| env.explain_js_error(&ctx, e))?,
                        None => {
                            let factory = instantiate(&ctx, script, &env, seal)?;
                            let kept = Persistent::save(&ctx, factory.clone());
                            self.factories.borrow_mut().insert(script.id, kept);
                            factory
                        }
                    };
                    produce(&ctx, &env, &factory)?
                }
            };
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
        if seal && result.is_ok() {
            self.sealed.insert(script.name.clone());
        }
        CallOutcome {
            result,
            logs: self.logs.borrow_mut().take(),
            cpu_time: thread_cpu_time().saturating_sub(started),
        }
    }

    /// After a call that ended soundly ([`SandboxError::leaves_context_sound`]) has been
    /// answered: whether this isolate may serve the next one. Runs what the call left queued,
    /// inside what is left of its CPU budget, so that none of it runs during the next call;
    /// collects garbage when the heap grew.
    pub(crate) fn reusable(&self) -> bool {
        if self.calls >= MAX_CALLS || self.factories.borrow().len() > MAX_FACTORIES {
            return false;
        }
        // The caller has its answer and may be gone: that is no reason to stop the drain.
        self.budget.unwatch();
        let drained = self.context.with(|ctx| {
            loop {
                if self.budget.expired() {
                    return false;
                }
                if !ctx.execute_pending_job() {
                    return true;
                }
            }
        });
        // Lines written after the answer belong to nobody.
        drop(self.logs.borrow_mut().take());
        if !drained || self.meter.refused() == Some(true) {
            return false;
        }
        let allowed = self.baseline + max_retained(self.meter.limit());
        if self.meter.used() > allowed {
            self.runtime.run_gc();
        }
        self.meter.used() <= allowed
    }
}

/// The module resolver and loader of a call runtime: no import resolves, not even a script's
/// own name (QuickJS would otherwise hand it the first instance loaded under that name, an
/// earlier call's).
struct NoImports;

impl rquickjs::loader::Resolver for NoImports {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        Err(rquickjs::Error::new_resolving_message(
            base,
            name,
            "scripts cannot import modules",
        ))
    }
}

impl rquickjs::loader::Loader for NoImports {
    fn load<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, rquickjs::module::Declared>> {
        Err(rquickjs::Error::new_loading_message(
            name,
            "scripts cannot import modules",
        ))
    }
}

/// The function a call of `script` calls, in a context of its own (compiling checks with it
/// that the script yields one).
pub(crate) fn callable<'js>(
    ctx: &Ctx<'js>,
    script: &Compiled,
    env: &Env<'_>,
    seal: bool,
) -> Result<Function<'js>, SandboxError> {
    let export = instantiate(ctx, script, env, seal)?;
    match script.shape {
        Shape::Module => Ok(export),
        Shape::Factory => produce(ctx, env, &export),
    }
}

/// Evaluates the author's expression through its factory.
fn produce<'js>(
    ctx: &Ctx<'js>,
    env: &Env<'_>,
    factory: &Function<'js>,
) -> Result<Function<'js>, SandboxError> {
    let made: Value<'js> = factory.call(()).map_err(|e| env.explain_js_error(ctx, e))?;
    match made.as_function() {
        Some(f) => Ok(f.clone()),
        None => Err(SandboxError::NotAFunction {
            found: describe(ctx, env, made),
        }),
    }
}

/// Evaluates the module (its top level may await) and returns its default export. `seal` on the
/// first instance of a script in a context: `import.meta` in any later instance finds the
/// first one loaded under its name, so that one's is frozen, empty, before anything runs.
pub(crate) fn instantiate<'js>(
    ctx: &Ctx<'js>,
    script: &Compiled,
    env: &Env<'_>,
    seal: bool,
) -> Result<Function<'js>, SandboxError> {
    // SAFETY: `bytecode` was produced by `Module::write` in this process, by this same QuickJS
    // build, and is never modified afterwards; `Module::load` requires exactly that.
    let declared = unsafe { Module::load(ctx.clone(), &script.bytecode) }
        .map_err(|e| env.explain_js_error(ctx, e))?;
    if seal {
        let frozen = || -> rquickjs::Result<()> {
            let object: rquickjs::Object<'js> = ctx.globals().get("Object")?;
            let freeze: Function<'js> = object.get("freeze")?;
            freeze.call::<_, Value<'js>>((declared.meta()?,))?;
            Ok(())
        };
        // Whatever failed, this context must not serve another call with the first instance
        // of the name unfrozen: an internal error ends it.
        frozen().map_err(|e| {
            let why = env.explain_js_error(ctx, e);
            SandboxError::Internal(format!("freezing import.meta: {why}"))
        })?;
    }
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
