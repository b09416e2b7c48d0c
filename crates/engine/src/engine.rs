//! [`Engine`]: the compiled graph tools of one config, the upstream pool they call, and the
//! start of every run ([`Engine::run`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use indexmap::IndexMap;
use mcpflow_expr::Limits;
use mcpflow_model::{CompileErrors, Config};
use mcpflow_upstream::UpstreamPool;

use crate::control::Control;
use crate::error::{RunError, RunErrorKind};
use crate::event::Event;
use crate::graph::Graph;
use crate::observe::{Observe, Started};
use crate::request::RunRequest;
use crate::run::{Executor, Run, RunEnd, RunStatus, or_empty};

/// Compiled graph tools and the upstream pool they call. Cheap to clone; runs many
/// graphs at once.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) graphs: IndexMap<String, Arc<Graph>>,
    pub(crate) pool: UpstreamPool,
    /// An evaluation's full limits: what an expression gets off the request path.
    pub(crate) limits: Limits,
    /// The same with the small step budget of an evaluation on the request path
    /// (see [`crate::offload`]).
    pub(crate) quick_limits: Limits,
    /// Set once, when the server attaches a store (see [`Engine::attach_durability`]).
    durability: std::sync::OnceLock<crate::durable::Durability>,
    next_run: AtomicU64,
    /// The engines this one replaced (a reload), newest last: a session or an interrupted run
    /// pinned to one of their config versions goes on there, on the graph it started with.
    predecessors: std::sync::Mutex<Vec<Engine>>,
    /// Distinguishes run ids of this process from those of another one.
    instance: u64,
    /// Hears of every run's start and end; set once (see [`Engine::observe`]).
    observer: std::sync::OnceLock<Arc<dyn Observe>>,
}

/// How many replaced engines a reloaded one keeps for their waiting sessions.
pub const MAX_PREDECESSORS: usize = 16;

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A tool as the server lists it.
pub struct ToolInfo<'a> {
    pub graph: &'a Graph,
}

impl Engine {
    /// Compiles every tool of `config`: every expression, script and schema, once. Fails with
    /// every problem found, each at its JSON pointer into the config.
    pub fn new(config: &Config, pool: UpstreamPool) -> Result<Engine, CompileErrors> {
        // Started on the first script node; its workers live as long as the compiled scripts.
        let mut sandboxes = crate::nodes::script::Sandboxes::default();
        let mut compiler = crate::compile::Compiler {
            errors: Vec::new(),
            sandboxes: Some(&mut sandboxes),
        };
        let mut graphs = IndexMap::with_capacity(config.tools.len());
        for (i, tool) in config.tools.iter().enumerate() {
            let limits = config.execution_limits.as_ref();
            if let Some(graph) = Graph::compile_with(tool, i, limits, &mut compiler) {
                graphs.insert(tool.name.clone(), Arc::new(graph));
            }
        }
        crate::compile::check_hooks(&config.hooks, &mut compiler);
        if !compiler.errors.is_empty() {
            return Err(CompileErrors(compiler.errors));
        }
        let instance = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ u64::from(std::process::id());
        Ok(Engine {
            inner: Arc::new(Inner {
                graphs,
                pool,
                limits: Limits::default(),
                quick_limits: crate::offload::quick(Limits::default()),
                durability: std::sync::OnceLock::new(),
                next_run: AtomicU64::new(1),
                predecessors: std::sync::Mutex::new(Vec::new()),
                instance,
                observer: std::sync::OnceLock::new(),
            }),
        })
    }

    /// Makes this engine the successor of `previous`, which a reload replaces: sessions and
    /// interrupted runs pinned to `previous`'s config version (or to one it succeeded) are
    /// continued there, on the graphs they started with. The newest [`MAX_PREDECESSORS`] are
    /// kept; a session of an older one is refused as started on another config.
    pub fn succeed(&self, previous: &Engine) {
        if Arc::ptr_eq(&self.inner, &previous.inner) {
            return;
        }
        // Whoever watched the runs of the replaced engine watches this one's.
        if let Some(observer) = previous.inner.observer.get() {
            let _ = self.inner.observer.set(observer.clone());
        }
        // Taken, not copied: `previous` then holds no chain, so memory stays bounded.
        let mut kept = std::mem::take(&mut *lock(&previous.inner.predecessors));
        kept.push(previous.clone());
        let excess = kept.len().saturating_sub(MAX_PREDECESSORS);
        kept.drain(..excess);
        *lock(&self.inner.predecessors) = kept;
    }

    /// The engine a run or session pinned to `version` belongs to, when it is not this one's:
    /// one this engine succeeded.
    pub(crate) fn predecessor(&self, version: &str) -> Option<Engine> {
        lock(&self.inner.predecessors)
            .iter()
            .rev()
            .find(|e| e.durability().is_some_and(|d| d.config_version == version))
            .cloned()
    }

    pub fn graphs(&self) -> impl Iterator<Item = &Arc<Graph>> {
        self.inner.graphs.values()
    }

    pub fn graph(&self, tool: &str) -> Option<&Arc<Graph>> {
        self.inner.graphs.get(tool)
    }

    pub fn pool(&self) -> &UpstreamPool {
        &self.inner.pool
    }

    /// Makes runs of tools that can wait or are resumable durable in `durability`'s store.
    /// Once per engine: a second call is refused and returns the value back.
    // Called once at start; handing the refused value back beats boxing it for clippy.
    #[allow(clippy::result_large_err)]
    pub fn attach_durability(
        &self,
        durability: crate::durable::Durability,
    ) -> Result<(), crate::durable::Durability> {
        self.inner.durability.set(durability)
    }

    pub fn durability(&self) -> Option<&crate::durable::Durability> {
        self.inner.durability.get()
    }

    /// Attaches the observer that hears of every run this engine (and the engines that
    /// [`succeed`](Engine::succeed) it) starts and ends. Once per engine: a second call is
    /// refused and returns the observer back.
    pub fn observe(&self, observer: Arc<dyn Observe>) -> Result<(), Arc<dyn Observe>> {
        self.inner.observer.set(observer)
    }

    pub(crate) fn observer(&self) -> Option<Arc<dyn Observe>> {
        self.inner.observer.get().cloned()
    }

    /// Tells the observer, if any, that run `id` starts; gives `events` the channel it asks
    /// for when the run has none.
    pub(crate) fn observe_start(
        &self,
        id: &Arc<str>,
        tool: &Arc<str>,
        args: &serde_json::Value,
        control: &Control,
        events: &mut Option<tokio::sync::broadcast::Sender<Event>>,
    ) {
        let Some(observer) = self.inner.observer.get() else {
            return;
        };
        let given = observer.started(Started {
            id,
            tool,
            args,
            control,
            events: events.as_ref(),
        });
        if events.is_none() {
            *events = given;
        }
    }

    pub(crate) fn observe_end(&self, run: &Run) {
        mcpflow_telemetry::metrics::run_ended(&run.tool, run.status.as_str());
        if let Some(observer) = self.inner.observer.get() {
            observer.ended(run);
        }
    }

    pub(crate) fn next_id(&self) -> Arc<str> {
        let n = self.inner.next_run.fetch_add(1, Ordering::Relaxed);
        format!("{:08x}-{n}", self.inner.instance as u32).into()
    }

    /// Runs `request.tool` to its end, or to where it waits for its client, on the current task.
    pub async fn run(&self, request: RunRequest) -> Run {
        self.run_as(self.next_id(), request).await
    }

    pub(crate) async fn run_as(&self, id: Arc<str>, mut request: RunRequest) -> Run {
        // Held to the end of this future, so given back however the run ends, or waits.
        let _slot = match request
            .slot
            .take()
            .map_or_else(|| request.caller.admit(), Ok)
        {
            Ok(slot) => slot,
            Err(busy) => {
                let err = RunError::new(RunErrorKind::TooManyRuns, None, busy.to_string());
                return Run::failed(id, &request.tool, err);
            }
        };
        let Some(graph) = self.inner.graphs.get(&request.tool) else {
            let known: Vec<&str> = self.inner.graphs.keys().map(String::as_str).collect();
            let err = RunError::new(
                RunErrorKind::UnknownTool,
                None,
                format!(
                    "no tool named `{}`; the config has: {}",
                    request.tool,
                    known.join(", ")
                ),
            );
            return Run::failed(id, &request.tool, err);
        };
        if let Some(durability) = self.durability()
            && (graph.can_wait() || graph.is_resumable())
        {
            return self.start_durable(durability, graph, request).await;
        }
        let span = crate::spans::run(graph.name(), &id, false);
        let run = span.around(self.run_plain(id, graph, request)).await;
        crate::spans::run_ended(&span, run.status, run.error());
        run
    }

    async fn run_plain(&self, id: Arc<str>, graph: &Graph, request: RunRequest) -> Run {
        let RunRequest {
            args,
            control,
            mut events,
            caller,
            ..
        } = request;
        let tool: Arc<str> = graph.name().into();
        self.observe_start(&id, &tool, &args, &control, &mut events);
        if let Some(tx) = &events {
            let _ = tx.send(Event::RunStarted {
                run_id: id.clone(),
                tool: tool.clone(),
            });
        }
        let shared = self.shared(
            &control,
            events.as_ref(),
            None,
            std::time::Instant::now(),
            AtomicU64::new(0),
            &caller,
        );
        // Plain runs are recorded at their end when a store is attached; the arguments are
        // kept for that only then.
        let saved_args = self
            .durability()
            .map(|_| (args.clone(), mcpflow_store::now_ms()));
        let (chain, history) = Executor::top(&shared, graph).execute(args).await;
        // Only a durable run can wait: an await node without a store fails instead.
        let result = chain.and_then(|c| c.output(None)).map(or_empty);
        let status = RunStatus::of(&result, &control);
        if let Some(tx) = events.as_ref().or(control.attached_events()) {
            let _ = tx.send(Event::RunFinished { status });
        }
        let run = Run {
            id,
            tool,
            status,
            end: RunEnd::Finished(result),
            history,
        };
        if let (Some(durability), Some((args, started_at))) = (self.durability(), saved_args) {
            durability.save_plain(graph, (args, started_at), &caller, &run);
        }
        self.observe_end(&run);
        run
    }
}
