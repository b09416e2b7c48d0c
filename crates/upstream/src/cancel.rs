//! Cancelling a request whose answer nobody will read any more, from either side of a
//! connection: mcpflow's requests to an upstream (the send path) and the upstream's requests
//! relayed to a downstream client (the gateway's `Caller`).

use rmcp::model::{CancelledNotification, CancelledNotificationParam, RequestId};
use rmcp::service::{Peer, ServiceRole};
use tokio_util::task::TaskTracker;

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
    /// Where the sending is tracked, so a shutdown can wait for it (see [`Pending`]).
    pending: Option<&'a Pending>,
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
            pending: None,
        }
    }

    /// The notification's sending is tracked in `pending`, for a shutdown to flush.
    pub(crate) fn tracked(mut self, pending: &'a Pending) -> Self {
        self.pending = Some(pending);
        self
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
        let send = async move {
            let _ = peer.send_notification(notification.into()).await;
        };
        match self.pending {
            Some(pending) => drop(pending.0.spawn_on(send, &runtime)),
            None => drop(runtime.spawn(send)),
        }
    }
}

/// The `notifications/cancelled` a connection is still sending. A process that exits right
/// after abandoning a call (`mcpflow run` whose `failFast` sibling failed) would otherwise drop
/// them unsent, and a remote upstream would work on for nobody.
#[derive(Default)]
pub(crate) struct Pending(TaskTracker);

impl Pending {
    /// Waits until every cancel sent so far is on the wire (rmcp answers a notification's
    /// sender once the transport took it), or `bound` passed. Returns how many were still
    /// unsent at the bound.
    pub async fn flush(&self, bound: std::time::Duration) -> usize {
        self.0.close();
        let flushed = tokio::time::timeout(bound, self.0.wait()).await.is_ok();
        self.0.reopen();
        if flushed { 0 } else { self.0.len() }
    }
}

/// Why mcpflow cancels a request it sent upstream.
pub(crate) const ABANDONED: &str = "request abandoned by mcpflow";
