//! One SSE stream's events: numbered, kept for a client that reconnects with `Last-Event-ID`,
//! and read by at most one reader at a time.
//!
//! Events are pushed synchronously (under the outbox's lock) in the order the session's
//! handler sends them, so a call's progress notifications always precede its answer on the
//! wire. A reader that stops reading does not block the handler: the outbox keeps at most
//! [`KEPT`] events, and past that the oldest unread ones are dropped (logged), never the
//! answer, which is always the last event.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures::Stream;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;

use super::Busy;

/// Events an outbox keeps: the unread ones, and the last ones read, for a reconnecting client.
pub(super) const KEPT: usize = 64;

pub(super) struct Outbox {
    /// `Some(n)` for the stream of a client's request (event ids `index/n`), `None` for the
    /// session's standalone stream (event ids `index`).
    request: Option<u64>,
    state: Mutex<State>,
}

struct State {
    /// The events kept, oldest first; `events[0]` has index `first`.
    events: VecDeque<ServerSseMessage>,
    first: usize,
    /// The index the next event gets.
    next: usize,
    /// The current reader: a reader with another generation has been replaced (by a client's
    /// reconnection) and ends.
    generation: u64,
    reader: Option<Waker>,
    /// Whether a reader holds the stream (it may not have polled yet).
    attached: bool,
    /// Up to which index a reader has taken events.
    delivered: usize,
    /// No more events come: the request was answered or cancelled, or the session closed.
    finished: bool,
    /// Whether dropping unread events was logged (once per stream: a stalled client must not
    /// flood the log).
    warned: bool,
}

impl Outbox {
    /// The stream of request `request`'s answer (or the standalone stream, for `None`); its
    /// events are numbered from `first`.
    pub(super) fn new(request: Option<u64>, first: usize) -> Arc<Self> {
        Arc::new(Outbox {
            request,
            state: Mutex::new(State {
                events: VecDeque::new(),
                first,
                next: first,
                generation: 0,
                reader: None,
                attached: false,
                delivered: first,
                finished: false,
                warned: false,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Written with `itoa` rather than `format!`: the formatting machinery cost ~700
    /// instructions per event, two events per call.
    fn event_id(&self, index: usize) -> String {
        let mut numbers = itoa::Buffer::new();
        let mut id = String::with_capacity(24);
        id.push_str(numbers.format(index));
        if let Some(request) = self.request {
            id.push('/');
            id.push_str(numbers.format(request));
        }
        id
    }

    /// Appends a message; with `last`, the stream ends after it.
    pub(super) fn push(&self, message: ServerJsonRpcMessage, last: bool) {
        self.push_event(ServerSseMessage::from_message(message));
        if last {
            self.finish();
        }
    }

    /// Appends a priming event (an id and a retry hint, no data: SEP-1699), which tells the
    /// client it can reconnect with that id if the connection drops before the answer.
    pub(super) fn prime(&self, retry: std::time::Duration) {
        self.push_event(ServerSseMessage::retry(retry));
    }

    fn push_event(&self, mut event: ServerSseMessage) {
        let mut state = self.lock();
        if state.finished {
            return;
        }
        event.event_id = Some(self.event_id(state.next));
        state.next += 1;
        state.events.push_back(event);
        while state.events.len() > KEPT {
            state.events.pop_front();
            if state.first >= state.delivered && state.attached && !state.warned {
                tracing::warn!(
                    "an SSE client is not reading its stream: its oldest unread notifications \
                     are dropped"
                );
                state.warned = true;
            }
            state.first += 1;
        }
        if let Some(waker) = state.reader.take() {
            waker.wake();
        }
    }

    /// No more events: the reader ends once it has read what is kept.
    pub(super) fn finish(&self) {
        let mut state = self.lock();
        state.finished = true;
        if let Some(waker) = state.reader.take() {
            waker.wake();
        }
    }

    /// Whether a reader holds the stream now.
    pub(super) fn attached(&self) -> bool {
        self.lock().attached
    }

    /// Finished, and a reader took every event: nothing is left for a reconnection.
    pub(super) fn spent(&self) -> bool {
        let state = self.lock();
        state.finished && state.delivered >= state.next
    }

    /// A reader of the events after index `after` (all those kept for `None`); a previous
    /// reader ends.
    pub(super) fn reader(self: &Arc<Self>, after: Option<usize>, busy: Option<Busy>) -> Reader {
        let mut state = self.lock();
        state.generation += 1;
        state.attached = true;
        if let Some(waker) = state.reader.take() {
            // The replaced reader ends on its next poll.
            waker.wake();
        }
        let next = after.map_or(state.first, |i| i.saturating_add(1).max(state.first));
        state.delivered = state.delivered.min(next);
        Reader {
            outbox: self.clone(),
            generation: state.generation,
            next,
            _busy: busy,
        }
    }
}

/// The SSE stream a client reads: the outbox's events from its position on.
pub(crate) struct Reader {
    outbox: Arc<Outbox>,
    generation: u64,
    next: usize,
    /// The request in flight, for the session's idle clock, until the stream ends.
    _busy: Option<Busy>,
}

impl Stream for Reader {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let mut state = this.outbox.lock();
        if state.generation != this.generation {
            return Poll::Ready(None);
        }
        this.next = this.next.max(state.first);
        if let Some(event) = state.events.get(this.next - state.first) {
            let event = event.clone();
            this.next += 1;
            state.delivered = state.delivered.max(this.next);
            if state.finished && this.next >= state.next {
                // Read to the end: what is kept is no longer needed.
                state.events.clear();
                state.first = state.next;
            }
            return Poll::Ready(Some(event));
        }
        if state.finished {
            return Poll::Ready(None);
        }
        state.reader = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let mut state = self.outbox.lock();
        if state.generation == self.generation {
            state.attached = false;
            state.reader = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use rmcp::model::{
        JsonRpcResponse, JsonRpcVersion2_0, NumberOrString, ServerJsonRpcMessage, ServerResult,
    };

    use super::super::tests::Within;
    use super::*;

    fn answer(id: i64) -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::Number(id),
            result: ServerResult::empty(()),
        })
    }

    fn ids(events: &[ServerSseMessage]) -> Vec<String> {
        events
            .iter()
            .map(|e| e.event_id.clone().unwrap_or_default())
            .collect()
    }

    #[tokio::test]
    async fn a_request_stream_is_primed_numbered_and_ends_after_its_answer() {
        let outbox = Outbox::new(Some(7), 0);
        outbox.prime(std::time::Duration::from_secs(3));
        outbox.push(answer(1), false);
        outbox.push(answer(2), true);
        outbox.push(answer(3), false);
        let events: Vec<_> = outbox.reader(None, None).collect::<Vec<_>>().within().await;
        assert_eq!(ids(&events), ["0/7", "1/7", "2/7"]);
        assert!(events[0].message.is_none() && events[0].retry.is_some());
        assert!(outbox.spent(), "read to the end");
    }

    /// A client that reconnects with the id of the last event it saw gets the events after
    /// it, not that one again, and the old connection's reader ends.
    #[tokio::test]
    async fn a_reconnection_gets_what_follows_its_last_event_and_replaces_the_reader() {
        let outbox = Outbox::new(Some(1), 0);
        outbox.prime(std::time::Duration::from_secs(3));
        let mut first = outbox.reader(None, None);
        assert_eq!(
            first
                .next()
                .within()
                .await
                .and_then(|e| e.event_id)
                .as_deref(),
            Some("0/1")
        );
        let second = outbox.reader(Some(0), None);
        assert!(
            first.next().within().await.is_none(),
            "the replaced reader ends"
        );
        outbox.push(answer(9), true);
        assert!(!outbox.spent());
        let events: Vec<_> = second.collect::<Vec<_>>().within().await;
        assert_eq!(ids(&events), ["1/1"]);
        assert!(outbox.spent());
    }

    /// Nobody reads: the outbox stays bounded, keeping the newest events and the answer.
    #[tokio::test]
    async fn an_unread_stream_keeps_a_bounded_number_of_the_newest_events() {
        let outbox = Outbox::new(None, 1);
        for i in 0..1000 {
            outbox.push(answer(i), false);
        }
        outbox.finish();
        let events: Vec<_> = outbox.reader(None, None).collect::<Vec<_>>().within().await;
        assert_eq!(events.len(), KEPT);
        assert_eq!(
            events.last().and_then(|e| e.event_id.clone()).as_deref(),
            Some("1000")
        );
    }
}
