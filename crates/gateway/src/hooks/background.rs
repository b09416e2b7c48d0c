//! Non-blocking hooks: started after the fact on bounded queues, their answers ignored and
//! their failures only logged. Script hooks queue on the sandbox's background worker; graph-tool
//! hooks hold one of [`BACKGROUND_GRAPH_HOOKS`] slots. A full queue drops the call (counted,
//! logged) rather than grow.

use mcpflow_telemetry::metrics::{self, HookOutcome};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcpflow_sandbox::{Sandbox, SandboxError};
use serde_json::Value;
use tokio::sync::Semaphore;

use super::{Body, Compiled, Hooks, log_console, script_name};

/// Non-blocking graph-tool hooks running at once; more are dropped (and counted).
pub const BACKGROUND_GRAPH_HOOKS: usize = 64;

/// What bounds the non-blocking hooks, and what they dropped.
pub(super) struct Background {
    sandbox: Option<Sandbox>,
    graph_slots: Arc<Semaphore>,
    graph_dropped: AtomicU64,
}

impl Background {
    pub(super) fn new(sandbox: Option<Sandbox>) -> Self {
        Background {
            sandbox,
            graph_slots: Arc::new(Semaphore::new(BACKGROUND_GRAPH_HOOKS)),
            graph_dropped: AtomicU64::new(0),
        }
    }

    /// Non-blocking hook calls dropped so far because their queue was full.
    fn dropped(&self) -> u64 {
        let scripts = self.sandbox.as_ref().map_or(0, Sandbox::background_dropped);
        scripts + self.graph_dropped.load(Ordering::Relaxed)
    }
}

impl Hooks {
    /// Starts a non-blocking hook on its bounded queue, or drops it (counted, logged) when the
    /// queue is full. Its answer is ignored and its failure only logged.
    pub(super) fn in_background(&self, hook: &Compiled, ctx: Value, stage: &'static str) {
        let id = hook.config.id.clone();
        let count = move |id: &str, failed: bool| {
            let outcome = if failed {
                HookOutcome::Failed
            } else {
                HookOutcome::Passed
            };
            metrics::hook(id, stage, outcome, None);
        };
        match &hook.body {
            Body::Script(script) => {
                let call = script.call_in_background(&ctx);
                let background = Arc::clone(&self.background);
                tokio::spawn(async move {
                    let outcome = call.await;
                    log_console(script_name(&id), &outcome.logs);
                    count(&id, outcome.result.is_err());
                    match outcome.result {
                        Err(SandboxError::Busy { queued }) => {
                            let dropped = background.dropped();
                            tracing::warn!(hook = %id, queued, dropped, "non-blocking hook dropped: its background queue is full");
                        }
                        Err(e) => {
                            let error = e.to_string().escape_debug().to_string();
                            tracing::warn!(hook = %id, %error, "non-blocking hook failed");
                        }
                        Ok(_) => {}
                    }
                });
            }
            Body::GraphTool { runner, tool } => {
                let Ok(slot) = Arc::clone(&self.background.graph_slots).try_acquire_owned() else {
                    self.background
                        .graph_dropped
                        .fetch_add(1, Ordering::Relaxed);
                    let dropped = self.background.dropped();
                    count(&id, true);
                    tracing::warn!(hook = %id, in_flight = BACKGROUND_GRAPH_HOOKS, dropped, "non-blocking hook dropped: too many running");
                    return;
                };
                let run = runner.run_tool(tool, ctx);
                tokio::spawn(async move {
                    let outcome = run.await;
                    drop(slot);
                    count(&id, outcome.is_err());
                    if let Err(e) = outcome {
                        let error = e.to_string().escape_debug().to_string();
                        tracing::warn!(hook = %id, %error, "non-blocking hook failed");
                    }
                });
            }
        }
    }
}
