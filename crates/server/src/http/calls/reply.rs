//! One stateless request's messages to its client: the notifications its handler sends, then
//! its answer, read in order by the HTTP response.

use std::collections::VecDeque;
use std::sync::Mutex;

use mcpflow_gateway::notify::Replies;
use rmcp::model::{ServerJsonRpcMessage, ServerNotification};
use tokio::sync::Notify;

/// Notifications queued for a reader that does not keep up; past this the oldest are dropped
/// (never the answer), so a client that stops reading cannot make the server hold more (a
/// session stream's outbox keeps as many). The handler is never held back: a progress or log
/// line is worth less than the call it reports on.
pub(super) const MAX_QUEUED: usize = 64;

#[derive(Default)]
pub(super) struct Reply {
    state: Mutex<State>,
    ready: Notify,
}

#[derive(Default)]
struct State {
    queue: VecDeque<ServerJsonRpcMessage>,
    /// The answer is queued (or the handler ended without one): nothing more will come.
    finished: bool,
    /// The response is gone (answered, or the client went away): nothing more is read.
    closed: bool,
    /// Dropping was logged (once per reply: a stalled client must not flood the log).
    warned: bool,
}

impl Reply {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues the answer, last; `None` when the handler ended without one.
    pub(super) fn finish(&self, answer: Option<ServerJsonRpcMessage>) {
        {
            let mut state = self.lock();
            if state.finished {
                return;
            }
            state.finished = true;
            if let Some(answer) = answer {
                state.queue.push_back(answer);
            }
        }
        self.ready.notify_one();
    }

    /// The next message, waiting for it; `None` once the handler ended and all was read.
    pub(super) async fn next(&self) -> Option<ServerJsonRpcMessage> {
        loop {
            {
                let mut state = self.lock();
                if let Some(message) = state.queue.pop_front() {
                    return Some(message);
                }
                if state.finished {
                    return None;
                }
            }
            // One reader: a wake-up sent before this wait is kept as a permit, never lost.
            self.ready.notified().await;
        }
    }

    /// Nothing more will be read: later notifications are refused (their relays stop).
    pub(super) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.queue.clear();
    }
}

impl Replies for Reply {
    fn notify(&self, notification: ServerNotification) -> bool {
        {
            let mut state = self.lock();
            if state.closed || state.finished {
                return false;
            }
            if state.queue.len() >= MAX_QUEUED {
                state.queue.pop_front();
                if !state.warned {
                    tracing::warn!(
                        "a stateless request's client does not read its stream: dropping its oldest notifications"
                    );
                    state.warned = true;
                }
            }
            state
                .queue
                .push_back(ServerJsonRpcMessage::notification(notification));
        }
        self.ready.notify_one();
        true
    }
}
