use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use indexmap::IndexMap;
use mcpflow_config::Config;
use mcpflow_expr::Limits;
use mcpflow_upstream::UpstreamPool;
use serde_json::Value as Json;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::control::Control;
use crate::error::{CompileError, RunError, RunErrorKind};
use crate::event::Event;
use crate::graph::Graph;
use crate::history::History;
use crate::run::{Executor, Run, RunStatus};

/// Compiled graph tools and the upstream pool they call. Cheap to clone; runs many
/// graphs at once.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) graphs: IndexMap<String, Arc<Graph>>,
    pub(crate) pool: UpstreamPool,
    pub(crate) limits: Limits,
    /// Set once, when the server attaches a store (see [`Engine::attach_durability`]).
    durability: std::sync::OnceLock<crate::durable::Durability>,
    next_run: AtomicU64,
    /// Distinguishes run ids of this process from those of another one.
    instance: u64,
}

/// A tool as the server lists it.
pub struct ToolInfo<'a> {
    pub graph: &'a Graph,
}

/// How to start a background run.
#[derive(Default)]
pub struct RunOptions {
    pub control: Control,
    /// Capacity of the event channel; slow observers that fall behind miss events
    /// (they see a `Lagged` error) rather than slowing the run.
    pub event_capacity: Option<usize>,
}

/// A run started with [`Engine::start`].
pub struct RunHandle {
    pub id: Arc<str>,
    pub control: Control,
    events: broadcast::Sender<Event>,
    /// Subscribed before the run started, so no event is missed.
    first: Option<broadcast::Receiver<Event>>,
    task: JoinHandle<Run>,
}

impl RunHandle {
    /// The events from the start of the run (first call) or from now (later calls).
    pub fn events(&mut self) -> broadcast::Receiver<Event> {
        self.first.take().unwrap_or_else(|| self.events.subscribe())
    }

    pub async fn wait(self) -> Run {
        let id = self.id.clone();
        match self.task.await {
            Ok(run) => run,
            Err(e) => Run {
                id,
                tool: "".into(),
                status: RunStatus::Failed,
                result: Err(RunError::new(
                    RunErrorKind::Stopped,
                    None,
                    format!("the run's task ended abnormally: {e}"),
                )),
                history: History::default(),
            },
        }
    }
}

impl Engine {
    /// Compiles every tool of `config`.
    pub fn new(config: &Config, pool: UpstreamPool) -> Result<Engine, CompileError> {
        // Started on the first script node; its workers live as long as the compiled scripts.
        let mut sandboxes = crate::script_node::Sandboxes::default();
        let graphs = config
            .tools
            .iter()
            .map(|t| {
                Ok((
                    t.name.clone(),
                    Arc::new(Graph::compile_with(
                        t,
                        config.execution_limits.as_ref(),
                        &mut sandboxes,
                    )?),
                ))
            })
            .collect::<Result<_, CompileError>>()?;
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
                durability: std::sync::OnceLock::new(),
                next_run: AtomicU64::new(1),
                instance,
            }),
        })
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
    pub fn attach_durability(
        &self,
        durability: crate::durable::Durability,
    ) -> Result<(), crate::durable::Durability> {
        self.inner.durability.set(durability)
    }

    pub fn durability(&self) -> Option<&crate::durable::Durability> {
        self.inner.durability.get()
    }

    /// [`Engine::run_observed`] for a client that may be asked for input inline (an await
    /// node with `mode: elicit` or `auto`).
    pub async fn run_asking(
        &self,
        tool: &str,
        args: Json,
        control: &Control,
        events: Option<&broadcast::Sender<Event>>,
        ask: Option<Arc<dyn crate::await_node::Ask>>,
    ) -> Run {
        self.run_as(self.next_id(), tool, args, control, events, ask)
            .await
    }

    fn next_id(&self) -> Arc<str> {
        let n = self.inner.next_run.fetch_add(1, Ordering::Relaxed);
        format!("{:08x}-{n}", self.inner.instance as u32).into()
    }

    /// Runs `tool` to the end on the current task.
    pub async fn run(&self, tool: &str, args: Json) -> Run {
        self.run_with(tool, args, &Control::new(), None).await
    }

    /// Runs `tool` to the end on the current task under `control` (stop it, or cancel it on
    /// the client's behalf, from elsewhere), sending events to `events` if given.
    pub async fn run_observed(
        &self,
        tool: &str,
        args: Json,
        control: &Control,
        events: Option<&broadcast::Sender<Event>>,
    ) -> Run {
        self.run_with(tool, args, control, events).await
    }

    async fn run_with(
        &self,
        tool: &str,
        args: Json,
        control: &Control,
        events: Option<&broadcast::Sender<Event>>,
    ) -> Run {
        self.run_as(self.next_id(), tool, args, control, events, None)
            .await
    }

    async fn run_as(
        &self,
        id: Arc<str>,
        tool: &str,
        args: Json,
        control: &Control,
        events: Option<&broadcast::Sender<Event>>,
        ask: Option<Arc<dyn crate::await_node::Ask>>,
    ) -> Run {
        let Some(graph) = self.inner.graphs.get(tool) else {
            let known: Vec<&str> = self.inner.graphs.keys().map(String::as_str).collect();
            return Run {
                id,
                tool: tool.into(),
                status: RunStatus::Failed,
                result: Err(RunError::new(
                    RunErrorKind::UnknownTool,
                    None,
                    format!(
                        "no tool named `{tool}`; the config has: {}",
                        known.join(", ")
                    ),
                )),
                history: History::default(),
            };
        };
        if let Some(durability) = self.durability()
            && (graph.can_wait() || graph.is_resumable())
        {
            return self
                .start_durable(durability, graph, args, control, events, ask)
                .await;
        }
        let tool: Arc<str> = graph.name().into();
        if let Some(tx) = events {
            let _ = tx.send(Event::RunStarted {
                run_id: id.clone(),
                tool: tool.clone(),
            });
        }
        let shared = self.shared(
            control,
            events,
            None,
            std::time::Instant::now(),
            AtomicU64::new(0),
        );
        let exec = Executor {
            shared: &shared,
            graph,
            depth: 0,
            deadline: graph.timeout.map(|t| shared.started + t),
        };
        // Plain runs are recorded at their end when a store is attached; the arguments are
        // kept for that only then.
        let saved_args = self
            .durability()
            .map(|_| (args.clone(), mcpflow_store::now_ms()));
        let (result, history) = exec.execute(args).await;
        let status = match &result {
            Ok(_) => RunStatus::Succeeded,
            Err(e) if e.kind == RunErrorKind::Stopped && control.is_cancelled() => {
                RunStatus::Cancelled
            }
            Err(e) if e.kind == RunErrorKind::Stopped => RunStatus::Stopped,
            Err(_) => RunStatus::Failed,
        };
        if let Some(tx) = events {
            let _ = tx.send(Event::RunFinished { status });
        }
        let run = Run {
            id,
            tool,
            status,
            result,
            history,
        };
        if let (Some(durability), Some((args, started_at))) = (self.durability(), saved_args) {
            durability.save_plain(graph, args, started_at, &run);
        }
        run
    }

    /// Starts `tool` in the background under `options.control`.
    pub fn start(&self, tool: &str, args: Json, options: RunOptions) -> RunHandle {
        let (tx, rx) = broadcast::channel(options.event_capacity.unwrap_or(1024).max(1));
        let id = self.next_id();
        let control = options.control;
        let task = {
            let engine = self.clone();
            let tool = tool.to_owned();
            let control = control.clone();
            let tx = tx.clone();
            let id = id.clone();
            tokio::spawn(async move {
                engine
                    .run_as(id, &tool, args, &control, Some(&tx), None)
                    .await
            })
        };
        RunHandle {
            id,
            control,
            events: tx,
            first: Some(rx),
            task,
        }
    }
}
