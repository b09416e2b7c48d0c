//! The accept loop: each TCP connection served by hyper's HTTP/1 with a deadline on request
//! headers (a partial request, or a keep-alive connection with no next request, is closed
//! after `headerReadTimeoutMs`), and a cap on open connections kept below the open-file limit.
//!
//! At the cap, the connection open the longest with no request in flight is closed to make
//! room (an idle or half-sent connection holds a descriptor and nothing else); when every
//! connection is busy, the new one is answered 503 and closed. Either way a warning says so,
//! at most once per [`SHED_REPORT_EVERY`], with counts.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Descriptors kept out of the connection cap for the rest of the process: upstream children
/// and their pipes, remote upstreams' sockets, the store, config files.
pub(crate) const RESERVED_FDS: usize = 256;

/// The fewest connections the cap allows, whatever the open-file limit.
const MIN_CONNECTIONS: usize = 16;

/// How often shedding is reported (with the counts since the last report).
const SHED_REPORT_EVERY: Duration = Duration::from_secs(10);

/// The connection cap in effect: the configured one, lowered to the open-file limit less
/// [`RESERVED_FDS`].
pub(crate) fn connection_cap(configured: usize) -> usize {
    let Some(limit) = open_file_limit() else {
        return configured.max(1);
    };
    let room = limit.saturating_sub(RESERVED_FDS).max(MIN_CONNECTIONS);
    if configured > room {
        tracing::info!(
            configured,
            open_file_limit = limit,
            cap = room,
            "HTTP connection cap lowered to the open-file limit less {RESERVED_FDS} descriptors \
             kept for upstreams and the store (raise `ulimit -n` for more)"
        );
        room
    } else {
        configured.max(1)
    }
}

/// The soft limit on open files (`ulimit -n`), from /proc/self/limits.
fn open_file_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line
        .trim_start_matches("Max open files")
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

pub(crate) struct Settings {
    pub(crate) max_connections: usize,
    pub(crate) header_read_timeout: Duration,
    pub(crate) shutdown_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` is cancelled, then stops accepting, lets every
/// connection finish the requests it is answering, and returns once all are closed or the
/// shutdown timeout has passed (the connections still open then end with the process).
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    settings: Settings,
    shutdown: CancellationToken,
) {
    let open = Arc::new(Open::new(settings.max_connections));
    let tasks = TaskTracker::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(settings.header_read_timeout)
        .keep_alive(true);
    let builder = Arc::new(builder);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors (or a connection reset before it was accepted): the
                    // cap is meant to prevent the first; wait a little rather than spin.
                    tracing::warn!("cannot accept an HTTP connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let Some(entry) = open.admit() else {
            tasks.spawn(refuse(tcp));
            continue;
        };
        // Without TCP_NODELAY an SSE answer written in two pieces (priming event, then the
        // message) waits out Nagle and delayed ACK: 40 ms per call.
        let _ = tcp.set_nodelay(true);
        let service = Counted {
            inner: TowerToHyperService::new(app.clone()),
            busy: entry.busy.clone(),
        };
        let builder = builder.clone();
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            let conn = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(conn);
            let mut stopping = false;
            loop {
                tokio::select! {
                    result = conn.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(%peer, "HTTP connection ended: {e}");
                        }
                        break;
                    }
                    () = entry.evicted.cancelled() => {
                        tracing::debug!(%peer, "closed an idle HTTP connection to make room");
                        break;
                    }
                    () = shutdown.cancelled(), if !stopping => {
                        stopping = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(entry);
        });
    }
    drop(listener);
    tasks.close();
    if tokio::time::timeout(settings.shutdown_timeout, tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            "{} HTTP connection(s) still open {} ms after the listener closed: closing them",
            tasks.len(),
            settings.shutdown_timeout.as_millis()
        );
    }
}

/// The answer to a connection past the cap when none can be closed for it: 503, then close.
async fn refuse(mut tcp: TcpStream) {
    let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"server busy: too many open connections; retry later"}}"#;
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = tcp.write_all(response.as_bytes()).await;
        let _ = tcp.shutdown().await;
    })
    .await;
}

/// The open connections, oldest first.
struct Open {
    max: usize,
    state: Mutex<OpenState>,
}

#[derive(Default)]
struct OpenState {
    next: u64,
    entries: BTreeMap<u64, Slot>,
    /// Since the last report: idle connections closed, new ones refused.
    evicted: u64,
    refused: u64,
    reported: Option<Instant>,
}

struct Slot {
    busy: Arc<AtomicUsize>,
    evicted: CancellationToken,
}

/// One admitted connection: leaves the set when dropped.
struct Entry {
    id: u64,
    open: Arc<Open>,
    busy: Arc<AtomicUsize>,
    evicted: CancellationToken,
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.open.lock().entries.remove(&self.id);
    }
}

impl Open {
    fn new(max: usize) -> Self {
        Open {
            max,
            state: Mutex::new(OpenState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OpenState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a new connection: free, or made by closing the oldest idle one; `None` when
    /// every open connection is answering a request.
    fn admit(self: &Arc<Self>) -> Option<Entry> {
        let mut state = self.lock();
        if state.entries.len() >= self.max {
            let idle = state
                .entries
                .iter()
                .find(|(_, slot)| slot.busy.load(Ordering::Acquire) == 0)
                .map(|(id, _)| *id);
            match idle {
                Some(id) => {
                    if let Some(slot) = state.entries.remove(&id) {
                        slot.evicted.cancel();
                    }
                    state.evicted += 1;
                    self.report(&mut state);
                }
                None => {
                    state.refused += 1;
                    self.report(&mut state);
                    return None;
                }
            }
        }
        let id = state.next;
        state.next += 1;
        let busy = Arc::new(AtomicUsize::new(0));
        let evicted = CancellationToken::new();
        state.entries.insert(
            id,
            Slot {
                busy: busy.clone(),
                evicted: evicted.clone(),
            },
        );
        Some(Entry {
            id,
            open: self.clone(),
            busy,
            evicted,
        })
    }

    fn report(&self, state: &mut OpenState) {
        let now = Instant::now();
        if state
            .reported
            .is_some_and(|at| now.duration_since(at) < SHED_REPORT_EVERY)
        {
            return;
        }
        tracing::warn!(
            cap = self.max,
            closed_idle = state.evicted,
            refused = state.refused,
            "HTTP connection cap reached: closing the oldest idle connections to make room, \
             refusing new ones with 503 when all are busy (`http.maxConnections`, `ulimit -n`)"
        );
        state.evicted = 0;
        state.refused = 0;
        state.reported = Some(now);
    }
}

/// The router, counting the requests in flight on one connection: from the request's head
/// until its response body has been sent or dropped (an SSE stream counts as long as it is open).
struct Counted {
    inner: TowerToHyperService<Router>,
    busy: Arc<AtomicUsize>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Counted {
    type Response = hyper::Response<Tracked>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        let busy = Busy::new(self.busy.clone());
        let response = hyper::service::Service::call(&self.inner, request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| Tracked { body, _busy: busy }))
        })
    }
}

/// One request in flight on its connection.
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn new(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Busy(count)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted in flight until it is done with.
pub(crate) struct Tracked {
    body: Body,
    _busy: Busy,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let open = Arc::new(Open::new(2));
        let a = open.admit().expect("room");
        let b = open.admit().expect("room");
        a.busy.fetch_add(1, Ordering::AcqRel);
        // a is busy: b, the oldest idle one, goes.
        let c = open.admit().expect("room made");
        assert!(b.evicted.is_cancelled());
        assert!(!a.evicted.is_cancelled());
        // Both open ones busy: refused.
        c.busy.fetch_add(1, Ordering::AcqRel);
        assert!(open.admit().is_none());
        // A connection that ends frees its place.
        drop(a);
        assert!(open.admit().is_some());
    }
}
