//! Where a request's notifications (progress, an upstream's log lines) go.
//!
//! Through the request's peer, as rmcp serves a session: the peer's transport routes each
//! notification to its stream. The server's 2026-07-28 stateless path serves every request
//! through one shared peer instead (starting a service per request was most of that path's
//! cost), and a shared peer cannot tell whose notification it carries: that path puts a
//! [`ReplyTo`] in the request's extensions, and notifications made for the request go there.

use std::sync::Arc;

use rmcp::RoleServer;
#[allow(deprecated)] // Logging (SEP-2577): upstreams still send it, and it is relayed.
use rmcp::model::{LoggingMessageNotification, LoggingMessageNotificationParam};
use rmcp::model::{ProgressNotification, ProgressNotificationParam, ServerNotification};
use rmcp::service::{Peer, RequestContext};

/// One request's own stream of messages to the client.
pub trait Replies: Send + Sync {
    /// Queues `notification` for the client; `false` once nobody will read it (the client
    /// went away), so that whoever relays stops.
    fn notify(&self, notification: ServerNotification) -> bool;
}

/// In a request's extensions: its notifications go to this stream, not through its peer.
#[derive(Clone)]
pub struct ReplyTo(pub Arc<dyn Replies>);

/// Where one request's notifications go.
#[derive(Clone)]
pub enum Notifier {
    Peer(Peer<RoleServer>),
    Reply(ReplyTo),
}

impl Notifier {
    pub fn of(context: &RequestContext<RoleServer>) -> Notifier {
        match context.extensions.get::<ReplyTo>() {
            Some(reply) => Notifier::Reply(reply.clone()),
            None => Notifier::Peer(context.peer.clone()),
        }
    }

    /// Sends `notification`; `false` when it can no longer reach the client.
    pub async fn send(&self, notification: ServerNotification) -> bool {
        match self {
            Notifier::Peer(peer) => peer.send_notification(notification).await.is_ok(),
            Notifier::Reply(reply) => reply.0.notify(notification),
        }
    }

    pub async fn progress(&self, param: ProgressNotificationParam) -> bool {
        self.send(ProgressNotification::new(param).into()).await
    }

    #[allow(deprecated)]
    pub async fn logging(&self, param: LoggingMessageNotificationParam) -> bool {
        self.send(LoggingMessageNotification::new(param).into())
            .await
    }
}
