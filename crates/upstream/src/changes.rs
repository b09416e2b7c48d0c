//! A pool's feeds of what its upstreams announce unasked: tool list changes, resource and
//! prompt list changes, and log lines.
//!
//! Each [`UpstreamPool`](crate::UpstreamPool) owns one [`Feeds`]; whoever re-exports its
//! upstreams (the gateway) subscribes to the pool it has, so two pools in one process never
//! hear each other's upstreams. Announcements are made by [`crate::inbound`] in the order the
//! upstream sent them, before any answer that followed them on the wire is handed back.

use std::sync::Arc;

use tokio::sync::broadcast;

/// How many list changes a slow subscriber may fall behind before it misses some (it then
/// hears `Lagged` and should treat every upstream as changed).
const CHANGES_CAPACITY: usize = 64;
/// How many log lines a slow subscriber may fall behind before the oldest are dropped.
const LOGS_CAPACITY: usize = 256;

/// One `notifications/message` an upstream sent.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamLog {
    /// The configured name of the upstream that logged.
    pub server: Arc<str>,
    /// The notification's params as sent (`level`, `logger`, `data`).
    pub params: serde_json::Value,
}

/// A list besides tools an upstream said changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentList {
    Resources,
    Prompts,
}

/// `notifications/resources/list_changed` or `notifications/prompts/list_changed` of an
/// upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentChange {
    /// The configured name of the upstream.
    pub server: Arc<str>,
    pub list: ContentList,
}

/// The senders of one pool's feeds.
#[derive(Debug)]
pub(crate) struct Feeds {
    changes: broadcast::Sender<Arc<str>>,
    contents: broadcast::Sender<ContentChange>,
    logs: broadcast::Sender<UpstreamLog>,
}

impl Default for Feeds {
    fn default() -> Self {
        Feeds {
            changes: broadcast::channel(CHANGES_CAPACITY).0,
            contents: broadcast::channel(CHANGES_CAPACITY).0,
            logs: broadcast::channel(LOGS_CAPACITY).0,
        }
    }
}

impl Feeds {
    pub fn list_changes(&self) -> broadcast::Receiver<Arc<str>> {
        self.changes.subscribe()
    }

    pub fn logs(&self) -> broadcast::Receiver<UpstreamLog> {
        self.logs.subscribe()
    }

    pub fn content_changes(&self) -> broadcast::Receiver<ContentChange> {
        self.contents.subscribe()
    }

    pub fn announce_content(&self, server: &Arc<str>, list: ContentList) {
        let _ = self.contents.send(ContentChange {
            server: server.clone(),
            list,
        });
    }

    pub fn announce_change(&self, server: &Arc<str>) {
        // No receiver is not an error: nobody re-exports the list.
        let _ = self.changes.send(server.clone());
    }

    pub fn announce_log(&self, server: &Arc<str>, params: &impl serde::Serialize) {
        // Nobody listening (no gateway) is the common case: skip the conversion.
        if self.logs.receiver_count() == 0 {
            return;
        }
        if let Ok(params) = serde_json::to_value(params) {
            let _ = self.logs.send(UpstreamLog {
                server: server.clone(),
                params,
            });
        }
    }
}
