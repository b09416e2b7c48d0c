//! The CPU time budget: QuickJS calls an interrupt handler every few thousand bytecode
//! instructions (and inside regex backtracking); ours answers "stop" once the worker thread has
//! used its budget. The resulting exception is uncatchable, so `try {} catch {}` cannot swallow
//! it, and `finally` blocks are interrupted too.
//!
//! The same handler stops a call whose caller has gone (its future was dropped: a cancelled
//! request, a client that disconnected): the script is interrupted at its next check instead of
//! burning the rest of its budget on a worker others are waiting for.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// CPU time used by the calling thread. Thread CPU time, not wall time, so a call is not charged
/// for the time the OS spent running other threads.
pub(crate) fn thread_cpu_time() -> Duration {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; `clock_gettime` only writes into it.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc == 0 {
            return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    wall_clock_fallback()
}

fn wall_clock_fallback() -> Duration {
    thread_local! {
        static EPOCH: std::time::Instant = std::time::Instant::now();
    }
    EPOCH.with(|epoch| epoch.elapsed())
}

#[derive(Debug, Default)]
pub(crate) struct Budget {
    deadline: Cell<Option<Duration>>,
    limit: Cell<Duration>,
    fired: Cell<bool>,
    /// Set by the caller's side when it stops waiting for the call.
    cancel: RefCell<Option<Arc<AtomicBool>>>,
    cancelled: Cell<bool>,
}

impl Budget {
    pub(crate) fn arm(&self, limit: Duration) {
        self.limit.set(limit);
        self.fired.set(false);
        self.cancelled.set(false);
        self.deadline.set(Some(thread_cpu_time() + limit));
    }

    /// Also stops the call once `cancel` is set.
    pub(crate) fn watch(&self, cancel: Arc<AtomicBool>) {
        *self.cancel.borrow_mut() = Some(cancel);
    }

    /// Stops watching the caller: it has its answer, and its going away stops nothing more.
    pub(crate) fn unwatch(&self) {
        *self.cancel.borrow_mut() = None;
    }

    /// Whether the call was stopped because its caller went away.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled.get()
    }

    pub(crate) fn limit(&self) -> Duration {
        self.limit.get()
    }

    /// True once the budget is spent; stays true so that every later check, in JavaScript or in
    /// our own loops, stops as well.
    pub(crate) fn expired(&self) -> bool {
        if self.fired.get() {
            return true;
        }
        let gone = self
            .cancel
            .borrow()
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed));
        if gone {
            self.cancelled.set(true);
            self.fired.set(true);
            return true;
        }
        match self.deadline.get() {
            Some(deadline) if thread_cpu_time() >= deadline => {
                self.fired.set(true);
                true
            }
            _ => false,
        }
    }

    /// Whether the budget has been found spent (by the interrupt handler or a loop of ours).
    pub(crate) fn fired(&self) -> bool {
        self.fired.get()
    }
}
