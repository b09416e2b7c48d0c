//! The public handles: a `Sandbox` (its worker threads and limits) and a compiled `Script`
//! with the ways to call it (awaited, in the background, with a fixed clock).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value as Json;
use tokio::sync::oneshot;

use crate::clock::Determinism;
use crate::compile;
use crate::isolate::{CallOutcome, Compiled};
use crate::json;
use crate::pool::{Job, Pool};
use crate::{SandboxError, SandboxOptions};

/// A pool of worker threads that run compiled scripts under one set of limits. Cheap to clone;
/// the workers stop when the last clone (and the last [`Script`]) is dropped.
#[derive(Clone)]
pub struct Sandbox {
    shared: Arc<Shared>,
}

struct Shared {
    options: SandboxOptions,
    pool: Pool,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Checks the options and starts the workers.
    pub fn new(options: SandboxOptions) -> Result<Self, SandboxError> {
        options.validate()?;
        let pool = Pool::start(&options)?;
        Ok(Self {
            shared: Arc::new(Shared { options, pool }),
        })
    }

    pub fn options(&self) -> &SandboxOptions {
        &self.shared.options
    }

    /// Background calls refused so far because the background queue was full
    /// ([`Script::call_in_background`]).
    pub fn background_dropped(&self) -> u64 {
        self.shared.pool.background_dropped()
    }

    /// Isolates (a QuickJS runtime and context ready for a call) prepared so far by the
    /// workers. None before the first call: each worker prepares its first isolate on its
    /// first call, and the next one after a call that left its isolate unfit for reuse.
    pub fn isolates_prepared(&self) -> u64 {
        self.shared.pool.isolates_prepared()
    }

    /// Same as [`Script::compile`].
    pub fn compile(&self, name: &str, source: &str) -> Result<Script, SandboxError> {
        Script::compile(self, name, source)
    }
}

/// A compiled script: QuickJS bytecode plus the sandbox that runs it. Cheap to clone, `Send` and
/// `Sync`; any number of calls may be in flight at once.
#[derive(Clone)]
pub struct Script {
    sandbox: Sandbox,
    compiled: Arc<Compiled>,
    cpu_time: Duration,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("name", &self.compiled.name)
            .field("cpu_time", &self.cpu_time)
            .finish_non_exhaustive()
    }
}

impl Script {
    /// Compiles `source` (see the crate docs for the two accepted forms) and checks that it
    /// yields a function by evaluating its top level once, under the sandbox's limits.
    ///
    /// Blocks the calling thread for the compilation (about 0.5 ms for a typical hook, at most
    /// the CPU budget if the top level loops): call it when loading configuration, not per
    /// request. It runs on a short-lived thread whose stack is sized for the sandbox's stack
    /// limit, so the caller's own stack size does not matter.
    pub fn compile(sandbox: &Sandbox, name: &str, source: &str) -> Result<Script, SandboxError> {
        let options = sandbox.options();
        let compiled = compile_on_thread(options, name, source)?;
        Ok(Script {
            sandbox: sandbox.clone(),
            compiled: Arc::new(compiled),
            cpu_time: options.cpu_time,
        })
    }

    /// Checks `source` exactly as [`Script::compile`] would under `options` (syntax, and that it
    /// yields a function), without starting any worker: for validating configuration.
    pub fn check(options: &SandboxOptions, name: &str, source: &str) -> Result<(), SandboxError> {
        options.validate()?;
        compile_on_thread(options, name, source).map(drop)
    }

    /// The name given at compile time; stack traces and syntax errors use it as the file name.
    pub fn name(&self) -> &str {
        &self.compiled.name
    }

    /// The same script with a different CPU budget per call (a node's `timeoutMs`, say). A zero
    /// budget is ignored: the sandbox's budget stays.
    #[must_use]
    pub fn with_cpu_time(mut self, cpu_time: Duration) -> Self {
        if !cpu_time.is_zero() {
            self.cpu_time = cpu_time;
        }
        self
    }

    /// Calls the script's function with a deep copy of `input` and returns its result as JSON;
    /// `None` when it returns `undefined`. A returned promise is awaited inside the sandbox.
    ///
    /// The input is serialized before this returns, so the future borrows nothing and can be
    /// spawned.
    pub fn call(
        &self,
        input: &Json,
    ) -> impl Future<Output = Result<Option<Json>, SandboxError>> + Send + 'static {
        let outcome = self.call_with_logs(input);
        async move { outcome.await.result }
    }

    /// Like [`Script::call`], and also returns what the script wrote with `console.*` and the
    /// CPU time it used, whether or not it succeeded.
    ///
    /// Dropping the future cancels the call: a script still waiting is never started, and a
    /// running one is stopped at its next interrupt check rather than using up its budget.
    pub fn call_with_logs(
        &self,
        input: &Json,
    ) -> impl Future<Output = CallOutcome> + Send + 'static {
        self.submit(input, None, Queue::Foreground)
    }

    /// Like [`Script::call_with_logs`], with `Date.now()`, `new Date()` and `Math.random()`
    /// fixed by `fixed` (see [`Determinism`]): the same input and `fixed` give the same result,
    /// for calls that are repeated when a durable run resumes.
    pub fn call_deterministic(
        &self,
        input: &Json,
        fixed: Determinism,
    ) -> impl Future<Output = CallOutcome> + Send + 'static {
        self.submit(input, Some(fixed), Queue::Foreground)
    }

    /// Queues a call nobody waits for (a fire-and-forget hook) on the sandbox's background
    /// worker, which never takes a foreground caller's turn. When the background queue is full
    /// the call is refused with [`SandboxError::Busy`] (and counted, see
    /// [`Sandbox::background_dropped`]) instead of growing without limit. The future need not be
    /// awaited for the call to run; dropping it cancels the call.
    pub fn call_in_background(
        &self,
        input: &Json,
    ) -> impl Future<Output = CallOutcome> + Send + 'static {
        self.submit(input, None, Queue::Background)
    }

    fn submit(
        &self,
        input: &Json,
        determinism: Option<Determinism>,
        queue: Queue,
    ) -> impl Future<Output = CallOutcome> + Send + 'static {
        let (reply, outcome) = oneshot::channel();
        let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
        let shared = &self.sandbox.shared;
        let submitted = json::input_text(input, shared.options.max_input_bytes)
            .map_err(|reason| SandboxError::Input { reason })
            .and_then(|input| {
                let job = Job {
                    script: Arc::clone(&self.compiled),
                    input,
                    cpu_time: self.cpu_time,
                    determinism,
                    cancel: Arc::clone(&cancel.0),
                    reply,
                };
                match queue {
                    Queue::Foreground => shared.pool.submit(job),
                    Queue::Background => shared.pool.submit_background(job),
                }
            });
        async move {
            // Owned by the future: dropping it before the answer stops the script.
            let _cancel = cancel;
            if let Err(e) = submitted {
                count_failure(&e);
                return CallOutcome::failed(e);
            }
            let outcome = outcome.await.unwrap_or_else(|_| {
                CallOutcome::failed(SandboxError::Internal(
                    "the sandbox worker stopped before answering".into(),
                ))
            });
            if let Err(e) = &outcome.result {
                count_failure(e);
            }
            outcome
        }
    }
}

/// Every failed call, by kind, in the process's metrics (a cancelled call is not a failure).
fn count_failure(error: &SandboxError) {
    if let Some(kind) = error.metric_kind() {
        mcpflow_telemetry::metrics::sandbox_failure(kind);
    }
}

#[derive(Clone, Copy)]
enum Queue {
    Foreground,
    Background,
}

/// Tells the worker that nobody waits for the call any more.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Compiles on a short-lived thread whose stack fits the sandbox's stack limit.
fn compile_on_thread(
    options: &SandboxOptions,
    name: &str,
    source: &str,
) -> Result<Compiled, SandboxError> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("mcpflow-sandbox-compile".into())
            .stack_size(options.thread_stack_size())
            .spawn_scoped(scope, || compile::compile(options, name, source))
            .map_err(|e| SandboxError::Internal(format!("starting the compiler thread: {e}")))?
            .join()
            .map_err(|_| SandboxError::Internal("the compiler thread panicked".into()))?
    })
}
