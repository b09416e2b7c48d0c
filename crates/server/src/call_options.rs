//! What a `tools/call` request brings besides its arguments (cancellation, progress, the
//! client to ask), and the progress notifications a run's events become.

use std::sync::Arc;

use mcpflow_engine::{Control, Event};
use mcpflow_gateway::notify::Notifier;
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken, RequestId};
use rmcp::service::Peer;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// What a `tools/call` request brings besides its arguments.
#[derive(Default)]
pub struct CallOptions {
    /// Cancelled when the client cancels the request; the run stops and is recorded as
    /// cancelled, and its in-flight upstream calls are cancelled in turn.
    pub cancel: Option<CancellationToken>,
    /// Where to send `notifications/progress`: one per finished node (progress = nodes
    /// finished so far, message = the node id) for the first 100, then at most ten a second.
    pub progress: Option<(Notifier, ProgressToken)>,
    /// The client, to ask it for input inline (await nodes with `mode: elicit` or `auto`).
    pub peer: Option<Peer<RoleServer>>,
    /// The client's request: what it is asked rides that request's stream.
    pub(crate) request: Option<RequestId>,
    /// A 2026-07-28 request: await nodes ask through an "input required" result instead.
    pub(crate) deferred: Option<Arc<crate::session::input::DeferredAsk>>,
    /// Who called (when access control ran): what an unknown tool's error may name.
    pub(crate) principal: Option<mcpflow_auth::Principal>,
    /// Who the call's run is for (`$caller`, its session's owner); the open caller when no
    /// access control ran.
    pub(crate) caller: mcpflow_engine::Caller,
    /// Where the run's id goes for the call's audit line, when the call is audited.
    pub(crate) run_note: Option<crate::audit::RunNote>,
}

impl CallOptions {
    pub(crate) fn caller(&self) -> mcpflow_engine::Caller {
        self.caller.clone()
    }

    /// The call started (or continued) run `id`: its audit line names it.
    pub(crate) fn note_run(&self, id: &std::sync::Arc<str>) {
        if let Some(note) = &self.run_note {
            note.set(id);
        }
    }
}

impl CallOptions {
    /// What the request of `context` brings: its cancellation, its progress token, the client
    /// to ask, and whether it is of the 2026-07-28 era (asked through "input required").
    pub(crate) fn of(context: &rmcp::service::RequestContext<RoleServer>) -> CallOptions {
        CallOptions {
            cancel: Some(context.ct.clone()),
            progress: context
                .meta
                .get_progress_token()
                .map(|token| (Notifier::of(context), token)),
            peer: Some(context.peer.clone()),
            request: Some(context.id.clone()),
            deferred: crate::session::input::deferred_ask(context),
            principal: crate::caller::principal(context),
            caller: crate::caller::run_caller(context),
            run_note: context.extensions.get::<crate::audit::RunNote>().cloned(),
        }
    }

    /// Drives a run (started by `start` with the progress sender, if the client asked for
    /// progress) under this call's cancellation, forwarding its events as progress
    /// notifications until it ends. The sender lives inside the run's future, so the channel
    /// closes, and forwarding stops, when the run does.
    pub(crate) async fn drive<T, Fut>(
        &self,
        control: &Control,
        start: impl FnOnce(Option<broadcast::Sender<Event>>) -> Fut,
    ) -> T
    where
        Fut: Future<Output = T>,
    {
        let (tx, rx) = match &self.progress {
            Some(_) => {
                let (tx, rx) = broadcast::channel(1024);
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let runner = async {
            let run = start(tx);
            tokio::pin!(run);
            match &self.cancel {
                Some(ct) => tokio::select! {
                    run = &mut run => run,
                    () = ct.cancelled() => {
                        control.cancel();
                        run.await
                    }
                },
                None => run.await,
            }
        };
        let report = async {
            if let (Some((notifier, token)), Some(rx)) = (&self.progress, rx) {
                forward_progress(rx, notifier, token).await;
            }
        };
        let (run, ()) = tokio::join!(runner, report);
        run
    }
}

/// Every node's progress is reported for the first this many notifications…
const PROGRESS_EVERY_NODE: u32 = 100;
/// …then at most one per this interval.
const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

pub(crate) async fn forward_progress(
    mut rx: broadcast::Receiver<Event>,
    notifier: &Notifier,
    token: &ProgressToken,
) {
    let mut done = 0u64;
    // Progress must grow with every notification: an upstream's progress on the node in flight
    // is reported as a fraction between the nodes done so far and the next one.
    let mut last = 0.0f64;
    let mut sent = 0u32;
    let mut last_sent = std::time::Instant::now();
    loop {
        let (progress, message) = match rx.recv().await {
            Ok(Event::NodeFinished { record }) => {
                done += 1;
                (done as f64, record.node_id.to_string())
            }
            Ok(Event::UpstreamProgress {
                node_id,
                progress,
                total,
                message,
            }) => {
                let fraction = match total {
                    Some(t) if t > 0.0 => (progress / t).clamp(0.0, 0.99),
                    _ => 0.5,
                };
                let text = match message {
                    Some(m) => format!("{node_id}: {m}"),
                    None => format!("{node_id}: {progress}"),
                };
                (done as f64 + fraction, text)
            }
            // Nodes whose events were missed still finished: count them, report the next one.
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                done += missed;
                continue;
            }
            Ok(_) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if progress <= last {
            continue;
        }
        // A long loop finishes hundreds of thousands of nodes a second: after the first few,
        // report at most a few times a second rather than flood the client.
        let now = std::time::Instant::now();
        if sent >= PROGRESS_EVERY_NODE && now.duration_since(last_sent) < PROGRESS_INTERVAL {
            continue;
        }
        sent += 1;
        last_sent = now;
        last = progress;
        let param = ProgressNotificationParam::new(token.clone(), progress).with_message(message);
        if !notifier.progress(param).await {
            return;
        }
    }
}
