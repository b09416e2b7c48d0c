//! Worker threads. A QuickJS runtime is not `Send`, so each worker owns its runtimes for their
//! whole life and callers talk to it through a queue; a slow call holds up only its own
//! worker. Each worker keeps its isolate for the calls that follow as long as it stays sound
//! (see [`Isolate::reusable`]) and otherwise prepares a fresh one after replying, so a call
//! starts without paying for creating one. A worker prepares nothing before its first call: a
//! prepared isolate holds a few hundred KB, and a server whose hooks or scripts are idle (or
//! never run) should not hold one per worker from the start (issue #20, idle RSS); only each
//! worker's first call pays for the preparation.
//!
//! Two queues: the callers who wait for an answer share the foreground workers in arrival order
//! (an unbounded queue: each of them is a request in flight, bounded where requests are
//! admitted); calls nobody waits for (fire-and-forget hooks) go to one background worker of their
//! own through a bounded queue, so background work can neither delay the callers who wait nor
//! pile up without limit: when its queue is full the call is refused and counted.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TrySendError, channel, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::clock::Determinism;
use crate::isolate::{CallOutcome, Compiled, Isolate};
use crate::{SandboxError, SandboxOptions};

pub(crate) struct Job {
    pub(crate) script: Arc<Compiled>,
    pub(crate) input: String,
    pub(crate) cpu_time: Duration,
    pub(crate) determinism: Option<Determinism>,
    /// Set when the caller stops waiting; the interrupt handler then stops the script.
    pub(crate) cancel: Arc<AtomicBool>,
    pub(crate) reply: oneshot::Sender<CallOutcome>,
}

/// Dropping the pool closes the queues; each worker finishes the call it is running and exits.
pub(crate) struct Pool {
    queue: Sender<Job>,
    background: OnceLock<Result<SyncSender<Job>, SandboxError>>,
    dropped: AtomicU64,
    /// Isolates prepared for calls so far, by every worker.
    prepared: Arc<AtomicU64>,
    options: SandboxOptions,
}

impl Pool {
    pub(crate) fn start(options: &SandboxOptions) -> Result<Self, SandboxError> {
        let (queue, jobs) = channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        let prepared = Arc::new(AtomicU64::new(0));
        for index in 0..options.workers {
            spawn_worker(
                format!("mcpflow-sandbox-{index}"),
                &jobs,
                options,
                &prepared,
            )?;
        }
        Ok(Self {
            queue,
            background: OnceLock::new(),
            dropped: AtomicU64::new(0),
            prepared,
            options: options.clone(),
        })
    }

    pub(crate) fn submit(&self, job: Job) -> Result<(), SandboxError> {
        self.queue
            .send(job)
            .map_err(|_| SandboxError::Internal("the sandbox workers have stopped".into()))
    }

    /// Queues a call for the background worker (started on first use), or refuses it when
    /// the background queue is full.
    pub(crate) fn submit_background(&self, job: Job) -> Result<(), SandboxError> {
        let queue = self.background.get_or_init(|| {
            let capacity = self.options.background_queue;
            let (queue, jobs) = sync_channel::<Job>(capacity);
            let jobs = Arc::new(Mutex::new(jobs));
            spawn_worker(
                "mcpflow-sandbox-bg".into(),
                &jobs,
                &self.options,
                &self.prepared,
            )?;
            Ok(queue)
        });
        let queue = queue.as_ref().map_err(Clone::clone)?;
        match queue.try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                Err(SandboxError::Busy {
                    queued: self.options.background_queue,
                })
            }
            Err(TrySendError::Disconnected(_)) => Err(SandboxError::Internal(
                "the sandbox's background worker has stopped".into(),
            )),
        }
    }

    /// Background calls refused so far because the background queue was full.
    pub(crate) fn background_dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub(crate) fn isolates_prepared(&self) -> u64 {
        self.prepared.load(Ordering::Relaxed)
    }
}

fn spawn_worker(
    name: String,
    jobs: &Arc<Mutex<Receiver<Job>>>,
    options: &SandboxOptions,
    prepared: &Arc<AtomicU64>,
) -> Result<(), SandboxError> {
    let jobs = Arc::clone(jobs);
    let options = options.clone();
    let prepared = Arc::clone(prepared);
    std::thread::Builder::new()
        .name(name)
        .stack_size(options.thread_stack_size())
        .spawn(move || work(&jobs, &options, &prepared))
        .map(drop)
        .map_err(|e| SandboxError::Internal(format!("starting a worker thread: {e}")))
}

fn work(jobs: &Mutex<Receiver<Job>>, options: &SandboxOptions, prepared: &AtomicU64) {
    tracing::debug!("sandbox worker started");
    let prepare = || {
        prepared.fetch_add(1, Ordering::Relaxed);
        Isolate::for_calls(options)
    };
    // Nothing is prepared before the first call (see the module docs).
    let mut ready: Option<Isolate> = None;
    let mut called = false;
    loop {
        if called && ready.is_none() {
            ready = prepare()
                .inspect_err(|e| tracing::warn!(error = %e, "cannot prepare a sandbox isolate"))
                .ok();
        }
        let next = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(job) = next else { break };
        if job.reply.is_closed() || job.cancel.load(Ordering::Relaxed) {
            // The caller gave up while the job waited; the ready isolate stays unused.
            continue;
        }
        called = true;
        let isolate = match ready.take() {
            Some(isolate) => Ok(isolate),
            None => prepare(),
        };
        let mut isolate = match isolate {
            Ok(isolate) => isolate,
            Err(e) => {
                let _ = job.reply.send(CallOutcome::failed(e));
                continue;
            }
        };
        let outcome = run(&mut isolate, &job);
        let sound = outcome.as_ref().is_ok_and(|o| {
            o.result
                .as_ref()
                .map_or_else(|e| e.leaves_context_sound(), |_| true)
        });
        let _ = job.reply.send(outcome.unwrap_or_else(CallOutcome::failed));
        // Deciding whether the isolate serves the next call (running what the call left
        // queued) and, if not, freeing it and preparing the next happen after the reply, off
        // the caller's latency.
        if sound && isolate.reusable() {
            ready = Some(isolate);
        }
    }
    tracing::debug!("sandbox worker stopped");
}

/// The call, with a panic turned into an error (and the isolate then never used again).
fn run(isolate: &mut Isolate, job: &Job) -> Result<CallOutcome, SandboxError> {
    catch_unwind(AssertUnwindSafe(|| isolate.call(job))).map_err(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        tracing::error!(panic = %what, script = %job.script.name, "sandbox call panicked");
        SandboxError::Internal(format!("the call panicked: {what}"))
    })
}
