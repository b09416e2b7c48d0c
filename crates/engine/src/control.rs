//! [`Control`]: debug control of a run from outside it (breakpoints, conditional ones too,
//! pause, step, resume, stop) and the client's cancellation. It reaches every line of
//! execution of a run: the main flow, `parallel` branches and `foreach` items.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use mcpflow_expr::{ExprError, Jsonata, Scope};

use crate::event::Event;
use serde_json::Value as Json;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

/// Debug control of one run: breakpoints, pause, resume, step, stop.
///
/// Cheap to clone; every clone controls the same run. A run without any of these set pays
/// one relaxed atomic load per node.
#[derive(Clone, Debug, Default)]
pub struct Control {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Set whenever the run must look at `state` before a node; the fast path reads only this.
    attention: AtomicBool,
    state: Mutex<DebugState>,
    /// Bumped by every resume, step and stop: what paused lines wait on. A `watch` rather than
    /// a `Notify`: several lines (branches, items) may be paused at once, and each must see a
    /// bump that happened between its check and its wait.
    wake: watch::Sender<u64>,
    cancel: CancellationToken,
    /// Set by [`Control::cancel`]: the run ends as cancelled rather than stopped.
    by_client: AtomicBool,
    /// An event channel attached while the run goes (a watcher joined a run started without
    /// one); the run's events go there from its next event on.
    events: OnceLock<broadcast::Sender<Event>>,
    /// Events sent to a listening channel so far: a reader of the run's recorded history
    /// (the run API) waits until its recorder has handled this many, so what it shows is
    /// never behind what [`Control::state`] says.
    emitted: AtomicU64,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            attention: AtomicBool::new(false),
            state: Mutex::new(DebugState::default()),
            wake: watch::Sender::new(0),
            cancel: CancellationToken::new(),
            by_client: AtomicBool::new(false),
            events: OnceLock::new(),
            emitted: AtomicU64::new(0),
        }
    }
}

/// A breakpoint on a node: unconditional, or a JSONata condition on the context the node is
/// about to read (the run pauses when it is truthy, and when it fails to evaluate).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Breakpoint {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(skip)]
    compiled: Option<Arc<Jsonata>>,
}

impl PartialEq for Breakpoint {
    fn eq(&self, other: &Self) -> bool {
        self.condition == other.condition
    }
}

impl Eq for Breakpoint {}

impl Breakpoint {
    /// A breakpoint with an optional JSONata condition, compiled now: a syntax error comes back
    /// with its code and position in the condition.
    pub fn new(condition: Option<&str>) -> Result<Breakpoint, ExprError> {
        let compiled = condition.map(Jsonata::compile).transpose()?.map(Arc::new);
        Ok(Breakpoint {
            condition: condition.map(str::to_owned),
            compiled,
        })
    }
}

/// One line of execution paused before a node.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PausedLine {
    pub index: usize,
    pub node_id: String,
    pub reason: String,
    /// The `parallel` branch or `foreach` item it is in, if not the main flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<usize>,
    /// The context the paused node is about to read (taken when it paused, never otherwise).
    #[serde(skip)]
    pub context: Json,
}

/// A snapshot of a run's debug state.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DebugState {
    pub breakpoints: BTreeMap<String, Breakpoint>,
    /// Where the run waits now, if it is paused: (history index, node id) of the first line
    /// that paused.
    pub paused_at: Option<(usize, String)>,
    /// Every line paused now (several when branches or items pause concurrently).
    pub paused: Vec<PausedLine>,
    pub stopped: bool,
    #[serde(skip)]
    pause_requested: bool,
    #[serde(skip)]
    pause_next: bool,
}

/// Why [`Control::checkpoint`] refused to go on.
#[derive(Debug)]
pub(crate) struct Stopped;

/// Where a line of execution is, as the run loop tells [`Control::wait_paused`].
pub(crate) struct Here<'a> {
    pub index: usize,
    pub node_id: &'a str,
    pub reason: String,
    pub branch: Option<&'a str>,
    pub item: Option<usize>,
}

impl Control {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_breakpoints<I: IntoIterator<Item = S>, S: Into<String>>(breakpoints: I) -> Self {
        let c = Self::new();
        c.update(|s| {
            s.breakpoints.extend(
                breakpoints
                    .into_iter()
                    .map(|b| (b.into(), Breakpoint::default())),
            )
        });
        c
    }

    pub fn add_breakpoint(&self, node_id: &str) {
        self.set_breakpoint(node_id, Breakpoint::default());
    }

    /// Sets (or replaces) the breakpoint on `node_id`.
    pub fn set_breakpoint(&self, node_id: &str, breakpoint: Breakpoint) {
        self.update(|s| {
            s.breakpoints.insert(node_id.to_owned(), breakpoint);
        });
    }

    /// Clears the breakpoint on `node_id`; whether there was one.
    pub fn remove_breakpoint(&self, node_id: &str) -> bool {
        let mut had = false;
        self.update(|s| had = s.breakpoints.remove(node_id).is_some());
        had
    }

    /// Pause before the next node.
    pub fn pause(&self) {
        self.update(|s| s.pause_requested = true);
    }

    /// Go on from a pause until the next breakpoint.
    pub fn resume(&self) {
        self.update(|s| {
            s.pause_requested = false;
            s.pause_next = false;
        });
        self.wake();
    }

    /// Run exactly one node, then pause again (before whichever node of the run starts next).
    pub fn step(&self) {
        self.update(|s| s.pause_next = !s.paused.is_empty());
        self.wake();
    }

    /// Stop the run before its next node and cancel its in-flight upstream call.
    pub fn stop(&self) {
        self.update(|s| s.stopped = true);
        self.inner.cancel.cancel();
        self.wake();
    }

    /// Stop on the client's behalf (MCP `notifications/cancelled`, a closed stream): like
    /// [`Control::stop`], and the run is recorded as cancelled.
    pub fn cancel(&self) {
        self.inner.by_client.store(true, Ordering::Release);
        self.stop();
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.by_client.load(Ordering::Acquire)
    }

    pub fn state(&self) -> DebugState {
        self.lock().clone()
    }

    pub fn is_paused(&self) -> bool {
        !self.lock().paused.is_empty()
    }

    /// Gives a run that was started without an event channel one, from its next event on
    /// (a watcher joining late). Once: returns the channel the run has then (this one, or
    /// one attached before).
    pub fn attach_events(&self, tx: broadcast::Sender<Event>) -> broadcast::Sender<Event> {
        self.inner.events.get_or_init(|| tx).clone()
    }

    /// How many events the run has sent to a channel with a listener.
    pub fn emitted(&self) -> u64 {
        self.inner.emitted.load(Ordering::Acquire)
    }

    pub(crate) fn count_emitted(&self) {
        self.inner.emitted.fetch_add(1, Ordering::AcqRel);
    }

    /// The channel attached with [`Control::attach_events`]; reading it is one atomic load.
    pub(crate) fn attached_events(&self) -> Option<&broadcast::Sender<Event>> {
        self.inner.events.get()
    }

    pub(crate) fn cancelled(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    fn wake(&self) {
        self.inner.wake.send_modify(|g| *g = g.wrapping_add(1));
    }

    fn lock(&self) -> MutexGuard<'_, DebugState> {
        // A poisoned lock only means another holder panicked; the state itself stays valid.
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut DebugState)) {
        let mut s = self.lock();
        f(&mut s);
        let attention = s.stopped || s.pause_requested || s.pause_next || !s.breakpoints.is_empty();
        self.inner.attention.store(attention, Ordering::Release);
    }

    /// Called before every node of every line of execution. Returns `Some(reason)` when the
    /// run must pause here. A breakpoint's condition is evaluated on `scope` (outside the lock);
    /// one that fails to evaluate pauses, with the error as the reason.
    pub(crate) fn should_pause<'s>(
        &self,
        node_id: &str,
        scope: impl FnOnce() -> Scope<'s>,
    ) -> Result<Option<String>, Stopped> {
        if !self.inner.attention.load(Ordering::Acquire) {
            return Ok(None);
        }
        let mut reason = None;
        let mut condition = None;
        self.update(|s| {
            if s.stopped {
                return;
            }
            if s.pause_next {
                s.pause_next = false;
                reason = Some("step".to_owned());
            } else if s.pause_requested {
                s.pause_requested = false;
                reason = Some("pause".to_owned());
            } else if let Some(b) = s.breakpoints.get(node_id) {
                match &b.compiled {
                    None => reason = Some("breakpoint".to_owned()),
                    Some(c) => condition = Some(c.clone()),
                }
            }
        });
        if self.lock().stopped {
            return Err(Stopped);
        }
        if let Some(c) = condition {
            reason = match c.evaluate(&scope()) {
                Ok(v)
                    if v.as_ref()
                        .is_some_and(|v| mcpflow_expr::truthy(v.as_json())) =>
                {
                    Some("breakpoint".to_owned())
                }
                Ok(_) => None,
                Err(e) => Some(format!("breakpoint condition failed: {e}")),
            };
        }
        Ok(reason)
    }

    /// Waits, paused before `here`, until resumed, stepped or stopped. `context` is the
    /// context the node is about to read, kept for inspection while paused.
    pub(crate) async fn wait_paused(&self, here: Here<'_>, context: Json) -> Result<(), Stopped> {
        let line = PausedLine {
            index: here.index,
            node_id: here.node_id.to_owned(),
            reason: here.reason,
            branch: here.branch.map(str::to_owned),
            item: here.item,
            context,
        };
        let mut woken = {
            let mut s = self.lock();
            s.paused.push(line.clone());
            s.paused_at = s.paused.first().map(|l| (l.index, l.node_id.clone()));
            // Subscribed under the lock: a resume after this is seen, one before is not ours.
            self.inner.wake.subscribe()
        };
        let stopped = self.lock().stopped || woken.changed().await.is_err() || self.lock().stopped;
        let mut s = self.lock();
        if let Some(i) = s.paused.iter().position(|l| *l == line) {
            s.paused.remove(i);
        }
        s.paused_at = s.paused.first().map(|l| (l.index, l.node_id.clone()));
        if stopped { Err(Stopped) } else { Ok(()) }
    }
}
