//! The bounded queue of what goes to stdout, and the one task that writes it. The reader
//! (`Stdio::receive`) asks [`Outgoing::wait_for_room`] before every message it reads, so a
//! client that stops reading its answers stops being read: what it sent stays in its own pipe,
//! not in our memory.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{Notify, watch};

use super::StdioOptions;

pub(crate) struct Outgoing {
    queue: Mutex<Queue>,
    /// Wakes the writer: a message queued, or the end.
    wake_writer: Notify,
    /// Bumped on every message written and on closing: the reader waits on it for room.
    progress: watch::Sender<u64>,
    options: StdioOptions,
}

#[derive(Default)]
struct Queue {
    messages: VecDeque<Vec<u8>>,
    /// Bytes queued, the message being written included.
    bytes: usize,
    /// Messages queued, the one being written included.
    count: usize,
    /// Since when the message being written has waited for the client to read.
    writing_since: Option<Instant>,
    /// Why the connection was closed; nothing is queued or read after it.
    closed: Option<String>,
    /// stdin ended: the writer writes what is queued, then stops.
    finishing: bool,
}

impl Queue {
    fn full(&self, options: &StdioOptions) -> bool {
        self.count >= options.max_queued_messages || self.bytes >= options.max_queued_bytes
    }
}

/// What [`Outgoing::wait_for_room`] found.
pub(crate) enum Room {
    Ready,
    /// The connection is closed (the reason was logged when it closed).
    Closed,
}

impl Outgoing {
    pub(crate) fn new(options: StdioOptions) -> Arc<Self> {
        Arc::new(Outgoing {
            queue: Mutex::new(Queue::default()),
            wake_writer: Notify::new(),
            progress: watch::Sender::new(0),
            options,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues one line (a serialized message and its newline). Past the hard limit the
    /// connection is closed: answers and notifications kept coming while the client read none.
    pub(crate) fn push(&self, line: Vec<u8>) -> Result<(), std::io::Error> {
        let mut queue = self.lock();
        if let Some(why) = &queue.closed {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                why.clone(),
            ));
        }
        if queue.bytes
            > self
                .options
                .max_queued_bytes
                .saturating_mul(HARD_LIMIT_FACTOR)
        {
            let why = format!(
                "the stdio client stopped reading: {} messages ({} bytes) are waiting to be \
                 written to stdout, past the limit of {} bytes; closing the connection",
                queue.count,
                queue.bytes,
                self.options
                    .max_queued_bytes
                    .saturating_mul(HARD_LIMIT_FACTOR)
            );
            self.close_locked(&mut queue, why.clone());
            return Err(std::io::Error::new(std::io::ErrorKind::OutOfMemory, why));
        }
        queue.bytes += line.len();
        queue.count += 1;
        queue.messages.push_back(line);
        drop(queue);
        self.wake_writer.notify_one();
        Ok(())
    }

    /// Returns once the queue has room for the answers of one more request, or closes the
    /// connection when the client has not taken a message for the write timeout while it is full.
    pub(crate) async fn wait_for_room(&self, progress: &mut watch::Receiver<u64>) -> Room {
        loop {
            let deadline = {
                let mut queue = self.lock();
                if queue.closed.is_some() {
                    return Room::Closed;
                }
                if !queue.full(&self.options) {
                    return Room::Ready;
                }
                let since = *queue.writing_since.get_or_insert_with(Instant::now);
                let deadline = since + self.options.write_timeout;
                if Instant::now() >= deadline {
                    let why = format!(
                        "the stdio client stopped reading: {} messages ({} bytes) waited more \
                         than {} s to be written to stdout; closing the connection \
                         (`mcpflow serve --stdio-write-timeout SECS` sets the wait)",
                        queue.count,
                        queue.bytes,
                        self.options.write_timeout.as_secs_f64()
                    );
                    self.close_locked(&mut queue, why);
                    return Room::Closed;
                }
                progress.mark_unchanged();
                deadline
            };
            tokio::select! {
                _ = progress.changed() => {}
                () = tokio::time::sleep_until(deadline.into()) => {}
            }
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.progress.subscribe()
    }

    /// Why the connection was closed, if mcpflow closed it.
    pub(crate) fn closed(&self) -> Option<String> {
        self.lock().closed.clone()
    }

    fn close_locked(&self, queue: &mut Queue, why: String) {
        if queue.closed.is_some() {
            return;
        }
        tracing::error!("{why}");
        queue.closed = Some(why);
        queue.messages.clear();
        queue.messages.shrink_to_fit();
        self.progress.send_modify(|n| *n += 1);
        self.wake_writer.notify_one();
    }

    /// stdin ended: write what is queued (for at most the write timeout without progress),
    /// then stop.
    pub(crate) fn finish(&self) {
        self.lock().finishing = true;
        self.wake_writer.notify_one();
    }

    /// Writes the queue to `out` in order, flushing whenever it runs dry, until the end.
    pub(crate) async fn write_all<W: AsyncWrite + Unpin>(self: Arc<Self>, out: W) {
        enum Next {
            Write(Vec<u8>),
            Wait,
            Finish,
            Stop,
        }
        let mut out = BufWriter::with_capacity(64 * 1024, out);
        loop {
            let next = {
                let mut queue = self.lock();
                match queue.messages.pop_front() {
                    _ if queue.closed.is_some() => Next::Stop,
                    Some(line) => {
                        queue.writing_since = Some(Instant::now());
                        Next::Write(line)
                    }
                    None if queue.finishing => Next::Finish,
                    None => Next::Wait,
                }
            };
            match next {
                Next::Stop => return,
                Next::Finish => {
                    let _ = out.flush().await;
                    return;
                }
                Next::Wait => {
                    if let Err(e) = out.flush().await {
                        self.broken(&e);
                        return;
                    }
                    self.wake_writer.notified().await;
                }
                Next::Write(line) => {
                    if let Err(e) = out.write_all(&line).await {
                        self.broken(&e);
                        return;
                    }
                    {
                        let mut queue = self.lock();
                        queue.bytes -= line.len();
                        queue.count -= 1;
                        queue.writing_since = None;
                    }
                    self.progress.send_modify(|n| *n += 1);
                }
            }
        }
    }

    /// stdout is gone (the client closed it): nobody will read an answer again.
    fn broken(&self, e: &std::io::Error) {
        let mut queue = self.lock();
        if queue.closed.is_none() {
            tracing::info!("stdout closed ({e}): ending the stdio session");
            queue.closed = Some(format!("stdout closed: {e}"));
            queue.messages.clear();
            self.progress.send_modify(|n| *n += 1);
        }
    }

    /// How long `close` waits for the writer after stdin ended: while it makes progress, and
    /// at most the write timeout without any.
    pub(crate) async fn drained(&self, writer: &mut tokio::task::JoinHandle<()>) {
        let mut progress = self.subscribe();
        loop {
            tokio::select! {
                _ = &mut *writer => return,
                changed = progress.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(self.options.write_timeout) => {
                    writer.abort();
                    return;
                }
            }
        }
    }
}

/// The queue may grow to this many times `max_queued_bytes` (reading stops at 1×; answers of
/// requests already read and server notifications still arrive) before the connection closes.
pub(crate) const HARD_LIMIT_FACTOR: usize = 8;
