//! What an upstream sends unasked (progress, log lines, tool list changes), handled in the
//! order it arrives, by construction.
//!
//! rmcp hands each notification to a task of its own but a response straight to the waiting
//! caller, so a progress line sent just before an answer could reach its caller after it.
//! [`Ordered`] wraps the connection's transport instead: it handles these notifications
//! inside `receive`, before rmcp even sees the message, so everything the upstream sent before
//! an answer has been routed (queued in the caller's progress channel, published on the pool's
//! feeds, the tool list dropped) by the time rmcp reads that answer. A caller that drains its
//! channels after the answer therefore holds every notification that preceded it.
//!
//! A request that wants its progress carries its sink as a [`ProgressRoute`] extension;
//! [`Ordered`] registers it under the request's progress token in `send`, before the request
//! is on the wire, so not even the first notification can arrive unrouted. The route holds
//! the sink weakly: the request's own future owns it, so a request abandoned before its route
//! was even registered still closes its caller's channel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, GetExtensions, GetMeta, JsonRpcMessage, ProgressToken,
    ServerJsonRpcMessage, ServerNotification,
};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use crate::catalog::Catalog;
use crate::changes::Feeds;

/// One `notifications/progress` an upstream sent about a request.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamProgress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a request's progress goes.
pub type ProgressSink = mpsc::UnboundedSender<UpstreamProgress>;

/// The sink of a request's progress, riding on the request until [`Ordered`] sends it.
#[derive(Clone)]
pub(crate) struct ProgressRoute(pub Weak<ProgressSink>);

/// What one connection does with the notifications it receives.
pub(crate) struct Inbound {
    server: Arc<str>,
    catalog: Arc<Catalog>,
    feeds: Arc<Feeds>,
    progress: Mutex<HashMap<ProgressToken, Weak<ProgressSink>>>,
}

impl Inbound {
    pub fn new(server: Arc<str>, catalog: Arc<Catalog>, feeds: Arc<Feeds>) -> Arc<Inbound> {
        Arc::new(Inbound {
            server,
            catalog,
            feeds,
            progress: Mutex::new(HashMap::new()),
        })
    }

    /// Ends the route of `token`'s progress when dropped (the request got its answer, or was
    /// abandoned); the sink goes with it, which tells its reader that no more will come.
    pub fn route_until_dropped(self: &Arc<Self>, token: ProgressToken) -> RouteGuard {
        RouteGuard {
            inbound: self.clone(),
            token,
        }
    }

    fn routes(&self) -> MutexGuard<'_, HashMap<ProgressToken, Weak<ProgressSink>>> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn outgoing(&self, message: &mut ClientJsonRpcMessage) {
        let JsonRpcMessage::Request(request) = message else {
            return;
        };
        let request = &mut request.request;
        let Some(ProgressRoute(sink)) = request.extensions_mut().remove::<ProgressRoute>() else {
            return;
        };
        if let Some(token) = request.get_meta().get_progress_token() {
            let mut routes = self.routes();
            // Routes of requests abandoned before they got here (their guard found nothing).
            routes.retain(|_, sink| sink.strong_count() > 0);
            routes.insert(token, sink);
        }
    }

    #[expect(
        deprecated,
        reason = "servers on 2025-11-25 and older still send notifications/message"
    )]
    fn incoming(&self, notification: &ServerNotification) {
        match notification {
            ServerNotification::ProgressNotification(progress) => {
                let params = &progress.params;
                let sink = self
                    .routes()
                    .get(&params.progress_token)
                    .and_then(Weak::upgrade);
                if let Some(sink) = sink {
                    let _ = sink.send(UpstreamProgress {
                        progress: params.progress,
                        total: params.total,
                        message: params.message.clone(),
                    });
                }
            }
            ServerNotification::LoggingMessageNotification(log) => {
                let params = &log.params;
                self.feeds.announce_log(&self.server, params);
                tracing::debug!(
                    target: "mcpflow_upstream::log",
                    server = %self.server,
                    level = ?params.level,
                    logger = params.logger.as_deref().unwrap_or(""),
                    "{}",
                    params.data
                );
            }
            ServerNotification::ToolListChangedNotification(_) => {
                tracing::debug!(server = %self.server, "upstream tool list changed");
                // Dropped before anyone hears of the change, so nobody lists the old one again.
                self.catalog.invalidate();
                self.feeds.announce_change(&self.server);
            }
            ServerNotification::ResourceListChangedNotification(_) => {
                tracing::debug!(server = %self.server, "upstream resource list changed");
                self.feeds
                    .announce_content(&self.server, crate::changes::ContentList::Resources);
            }
            ServerNotification::PromptListChangedNotification(_) => {
                tracing::debug!(server = %self.server, "upstream prompt list changed");
                self.feeds
                    .announce_content(&self.server, crate::changes::ContentList::Prompts);
            }
            _ => {}
        }
    }
}

/// See [`Inbound::route_until_dropped`].
pub(crate) struct RouteGuard {
    inbound: Arc<Inbound>,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.inbound.routes().remove(&self.token);
    }
}

/// A connection's transport, with its notifications handled in wire order (module docs).
pub(crate) struct Ordered<T> {
    inner: T,
    inbound: Arc<Inbound>,
}

impl<T> Ordered<T> {
    pub fn new(inner: T, inbound: Arc<Inbound>) -> Ordered<T> {
        Ordered { inner, inbound }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Ordered<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inbound.outgoing(&mut item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notification) = &message {
            self.inbound.incoming(&notification.notification);
        }
        // Passed on either way: rmcp's own bookkeeping (progress timeouts) still sees it.
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
