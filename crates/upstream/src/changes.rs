//! Announcements that an upstream's tool list changed, for whoever re-exports the list (the
//! gateway sends its own `notifications/tools/list_changed` to its clients).

use std::sync::{Arc, OnceLock};

use tokio::sync::broadcast;

/// The names of upstreams that said `notifications/tools/list_changed`, as they say it.
///
/// Process-wide: a name seen by two pools in one process wakes both listeners, which costs
/// one spurious refresh and nothing else.
pub fn list_changes() -> broadcast::Receiver<Arc<str>> {
    feed().subscribe()
}

pub(crate) fn announce(server: &Arc<str>) {
    // No receiver is not an error: nobody re-exports the list.
    let _ = feed().send(server.clone());
}

fn feed() -> &'static broadcast::Sender<Arc<str>> {
    static FEED: OnceLock<broadcast::Sender<Arc<str>>> = OnceLock::new();
    FEED.get_or_init(|| broadcast::channel(64).0)
}

/// `notifications/message` an upstream sent, as `(server, params as JSON)`: the gateway relays
/// them to the client whose call is in flight there.
pub fn upstream_logs() -> broadcast::Receiver<(Arc<str>, serde_json::Value)> {
    log_feed().subscribe()
}

pub(crate) fn announce_log(server: &Arc<str>, params: &impl serde::Serialize) {
    // Nobody listening (no gateway) is the common case: skip the conversion.
    if log_feed().receiver_count() == 0 {
        return;
    }
    if let Ok(params) = serde_json::to_value(params) {
        let _ = log_feed().send((server.clone(), params));
    }
}

fn log_feed() -> &'static broadcast::Sender<(Arc<str>, serde_json::Value)> {
    static FEED: OnceLock<broadcast::Sender<(Arc<str>, serde_json::Value)>> = OnceLock::new();
    FEED.get_or_init(|| broadcast::channel(256).0)
}
