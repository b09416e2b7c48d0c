//! Cancelling a request whose answer nobody will read any more, from either side of a
//! connection: mcpflow's requests to an upstream (the send path) and the upstream's requests
//! relayed to a downstream client (the gateway's `Caller`).

use rmcp::model::{CancelledNotification, CancelledNotificationParam, RequestId};
use rmcp::service::{Peer, ServiceRole};

/// Sends `notifications/cancelled` for a request whose answer nobody will read any more (the
/// caller cancelled or timed out, or the upstream stopped waiting for a relayed request), from
/// either side of a connection; [`CancelOnDrop::disarm`] once the answer arrived.
pub struct CancelOnDrop<'a, R: ServiceRole>
where
    R::Not: From<CancelledNotification>,
{
    peer: &'a Peer<R>,
    id: Option<RequestId>,
    reason: &'static str,
}

impl<'a, R: ServiceRole> CancelOnDrop<'a, R>
where
    R::Not: From<CancelledNotification>,
{
    pub fn new(peer: &'a Peer<R>, id: RequestId, reason: &'static str) -> Self {
        CancelOnDrop {
            peer,
            id: Some(id),
            reason,
        }
    }

    /// The answer arrived: nothing to cancel.
    pub fn disarm(&mut self) {
        self.id = None;
    }
}

impl<R: ServiceRole> Drop for CancelOnDrop<'_, R>
where
    R::Not: From<CancelledNotification>,
{
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let peer = self.peer.clone();
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some(self.reason.to_owned()),
        ));
        runtime.spawn(async move {
            let _ = peer.send_notification(notification.into()).await;
        });
    }
}

/// Why mcpflow cancels a request it sent upstream.
pub(crate) const ABANDONED: &str = "request abandoned by mcpflow";
