//! [`RunRequest`]: everything a run is started with, in one value, so there is one way to start
//! a run ([`Engine::run`]) however much of it a caller needs: a tool and its arguments, and
//! optionally the [`Control`] to stop, cancel or debug it from elsewhere, a channel for its
//! [`Event`]s and the [`Ask`] an await node asks inline. [`Engine::spawn`] is the same run on
//! a task of its own.

use std::sync::Arc;

use serde_json::Value as Json;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::Engine;
use crate::caller::{Caller, RunSlot};
use crate::control::Control;
use crate::error::{RunError, RunErrorKind};
use crate::event::Event;
use crate::history::History;
use crate::nodes::await_node::Ask;
use crate::run::{Run, RunEnd, RunStatus};

/// A run to start: `RunRequest::new(tool, args)`, then what the caller needs of the rest.
pub struct RunRequest {
    pub tool: String,
    /// The tool's arguments; for [`Engine::continue_session`], the client's input.
    pub args: Json,
    /// Stops, cancels (on the client's behalf) or debugs the run from elsewhere.
    pub control: Control,
    /// Where the run's events go. Slow observers that fall behind miss events (they see a
    /// `Lagged` error) rather than slow the run.
    pub events: Option<broadcast::Sender<Event>>,
    /// Who an await node with `mode: elicit` (or `auto`) asks inline.
    pub asker: Option<Arc<dyn Ask>>,
    /// Who the run is for: what `$caller` reads, whom a durable run's session belongs to, and,
    /// for [`Engine::continue_session`], who continues it (who must be allowed to). Without
    /// access control, [`Caller::open`] (the default).
    pub caller: Caller,
    /// The caller's slot, taken before the run is handed on (the run API answers a refusal
    /// itself, before it spawns); without one the engine takes it when the run starts.
    pub slot: Option<RunSlot>,
}

impl RunRequest {
    pub fn new(tool: impl Into<String>, args: Json) -> Self {
        RunRequest {
            tool: tool.into(),
            args,
            control: Control::new(),
            events: None,
            asker: None,
            caller: Caller::open(),
            slot: None,
        }
    }

    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    pub fn with_slot(mut self, slot: RunSlot) -> Self {
        self.slot = Some(slot);
        self
    }

    pub fn with_control(mut self, control: Control) -> Self {
        self.control = control;
        self
    }

    pub fn with_events(mut self, events: Option<broadcast::Sender<Event>>) -> Self {
        self.events = events;
        self
    }

    pub fn with_asker(mut self, asker: Option<Arc<dyn Ask>>) -> Self {
        self.asker = asker;
        self
    }
}

/// A run started with [`Engine::spawn`].
pub struct RunHandle {
    pub id: Arc<str>,
    pub control: Control,
    events: broadcast::Sender<Event>,
    /// Subscribed before the run started, so no event is missed.
    first: Option<broadcast::Receiver<Event>>,
    task: JoinHandle<Run>,
}

/// Events a spawned run buffers for its slowest observer.
const EVENT_CAPACITY: usize = 1024;

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
                end: RunEnd::Finished(Err(RunError::new(
                    RunErrorKind::Stopped,
                    None,
                    format!("the run's task ended abnormally: {e}"),
                ))),
                history: History::default(),
            },
        }
    }
}

impl Engine {
    /// [`Engine::run`] on a task of its own: watch it through the handle's events and control.
    pub fn spawn(&self, mut request: RunRequest) -> RunHandle {
        let tx = request
            .events
            .get_or_insert_with(|| broadcast::channel(EVENT_CAPACITY).0)
            .clone();
        let first = Some(tx.subscribe());
        let id = self.next_id();
        let control = request.control.clone();
        let task = {
            let engine = self.clone();
            let id = id.clone();
            tokio::spawn(async move { engine.run_as(id, request).await })
        };
        RunHandle {
            id,
            control,
            events: tx,
            first,
            task,
        }
    }
}
