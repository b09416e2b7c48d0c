//! Worker threads. A QuickJS runtime is not `Send`, so each worker owns its runtimes for their
//! whole life and callers talk to it through a shared queue; a slow call holds up only its own
//! worker. Each worker keeps one fresh isolate ready, so a call starts without paying for
//! creating one.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::isolate::{CallOutcome, Compiled, Isolate};
use crate::{SandboxError, SandboxOptions};

pub(crate) struct Job {
    pub(crate) script: Arc<Compiled>,
    pub(crate) input: String,
    pub(crate) cpu_time: Duration,
    pub(crate) reply: oneshot::Sender<CallOutcome>,
}

/// Dropping the pool closes the queue; each worker finishes the call it is running and exits.
pub(crate) struct Pool {
    queue: Sender<Job>,
}

impl Pool {
    pub(crate) fn start(options: &SandboxOptions) -> Result<Self, SandboxError> {
        let (queue, jobs) = channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        for index in 0..options.workers {
            let jobs = Arc::clone(&jobs);
            let options = options.clone();
            std::thread::Builder::new()
                .name(format!("mcpflow-sandbox-{index}"))
                .stack_size(options.thread_stack_size())
                .spawn(move || work(&jobs, &options))
                .map_err(|e| SandboxError::Internal(format!("starting a worker thread: {e}")))?;
        }
        Ok(Self { queue })
    }

    pub(crate) fn submit(&self, job: Job) -> Result<(), SandboxError> {
        self.queue
            .send(job)
            .map_err(|_| SandboxError::Internal("the sandbox workers have stopped".into()))
    }
}

fn work(jobs: &Mutex<Receiver<Job>>, options: &SandboxOptions) {
    tracing::debug!("sandbox worker started");
    let mut ready: Option<Isolate> = None;
    loop {
        if ready.is_none() {
            ready = Isolate::for_calls(options)
                .inspect_err(|e| tracing::warn!(error = %e, "cannot prepare a sandbox isolate"))
                .ok();
        }
        let next = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(job) = next else { break };
        if job.reply.is_closed() {
            // The caller gave up while the job waited; the ready isolate stays unused.
            continue;
        }
        let isolate = match ready.take() {
            Some(isolate) => Ok(isolate),
            None => Isolate::for_calls(options),
        };
        let (outcome, used) = match isolate {
            Ok(isolate) => (run(&isolate, &job), Some(isolate)),
            Err(e) => (CallOutcome::failed(e), None),
        };
        let _ = job.reply.send(outcome);
        // Freeing the used isolate and preparing the next happen after the reply, off the
        // caller's latency.
        drop(used);
    }
    tracing::debug!("sandbox worker stopped");
}

fn run(isolate: &Isolate, job: &Job) -> CallOutcome {
    catch_unwind(AssertUnwindSafe(|| {
        isolate.call(&job.script, &job.input, job.cpu_time)
    }))
    .unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        tracing::error!(panic = %what, script = %job.script.name, "sandbox call panicked");
        CallOutcome::failed(SandboxError::Internal(format!("the call panicked: {what}")))
    })
}
