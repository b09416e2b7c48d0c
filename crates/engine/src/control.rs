//! [`Control`]: debug control of a run from outside it (breakpoints, pause, step, resume,
//! stop) and the client's cancellation.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Debug control of one run: breakpoints, pause, resume, step, stop.
///
/// Cheap to clone; every clone controls the same run. A run without any of these set pays
/// one relaxed atomic load per node.
#[derive(Clone, Debug, Default)]
pub struct Control {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Set whenever the run must look at `state` before a node; the fast path reads only this.
    attention: AtomicBool,
    state: Mutex<DebugState>,
    wake: Notify,
    cancel: CancellationToken,
    /// Set by [`Control::cancel`]: the run ends as cancelled rather than stopped.
    by_client: AtomicBool,
}

/// A snapshot of a run's debug state.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DebugState {
    pub breakpoints: BTreeSet<String>,
    /// Where the run waits now, if it is paused: (history index, node id).
    pub paused_at: Option<(usize, String)>,
    pub stopped: bool,
    #[serde(skip)]
    pause_requested: bool,
    #[serde(skip)]
    pause_next: bool,
    #[serde(skip)]
    resume: bool,
}

/// Why [`Control::checkpoint`] refused to go on.
#[derive(Debug)]
pub(crate) struct Stopped;

impl Control {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_breakpoints<I: IntoIterator<Item = S>, S: Into<String>>(breakpoints: I) -> Self {
        let c = Self::new();
        c.update(|s| {
            s.breakpoints
                .extend(breakpoints.into_iter().map(Into::into))
        });
        c
    }

    pub fn add_breakpoint(&self, node_id: &str) {
        self.update(|s| {
            s.breakpoints.insert(node_id.to_owned());
        });
    }

    pub fn remove_breakpoint(&self, node_id: &str) {
        self.update(|s| {
            s.breakpoints.remove(node_id);
        });
    }

    /// Pause before the next node.
    pub fn pause(&self) {
        self.update(|s| s.pause_requested = true);
    }

    /// Go on from a pause until the next breakpoint.
    pub fn resume(&self) {
        self.update(|s| {
            s.resume = s.paused_at.is_some();
            s.pause_requested = false;
            s.pause_next = false;
        });
        self.inner.wake.notify_one();
    }

    /// Run exactly one node, then pause again.
    pub fn step(&self) {
        self.update(|s| {
            s.resume = s.paused_at.is_some();
            s.pause_next = true;
        });
        self.inner.wake.notify_one();
    }

    /// Stop the run before its next node and cancel its in-flight upstream call.
    pub fn stop(&self) {
        self.update(|s| s.stopped = true);
        self.inner.cancel.cancel();
        self.inner.wake.notify_one();
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
        self.lock().paused_at.is_some()
    }

    pub(crate) fn cancelled(&self) -> &CancellationToken {
        &self.inner.cancel
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

    /// Called before every node. Returns `Some(reason)` when the run must pause here.
    pub(crate) fn should_pause(&self, node_id: &str) -> Result<Option<&'static str>, Stopped> {
        if !self.inner.attention.load(Ordering::Acquire) {
            return Ok(None);
        }
        let mut reason = None;
        self.update(|s| {
            if s.stopped {
                return;
            }
            reason = if s.pause_next {
                s.pause_next = false;
                Some("step")
            } else if s.pause_requested {
                s.pause_requested = false;
                Some("pause")
            } else if s.breakpoints.contains(node_id) {
                Some("breakpoint")
            } else {
                None
            };
        });
        if self.lock().stopped {
            return Err(Stopped);
        }
        Ok(reason)
    }

    /// Waits, paused before `node_id`, until resumed, stepped or stopped.
    pub(crate) async fn wait_paused(&self, index: usize, node_id: &str) -> Result<(), Stopped> {
        self.update(|s| {
            s.resume = false;
            s.paused_at = Some((index, node_id.to_owned()));
        });
        loop {
            {
                let mut s = self.lock();
                if s.stopped {
                    s.paused_at = None;
                    return Err(Stopped);
                }
                if s.resume {
                    s.resume = false;
                    s.paused_at = None;
                    return Ok(());
                }
            }
            // notify_one stores a permit, so a resume between the check and here is not lost.
            self.inner.wake.notified().await;
        }
    }
}
