//! [`Observe`]: who hears of every run an engine starts and ends, whoever started it (an MCP
//! client, the HTTP run API, a session's continue). The HTTP run API's registry of live runs is
//! one; an engine without an observer pays nothing for this.

use std::sync::Arc;

use serde_json::Value as Json;
use tokio::sync::broadcast;

use crate::control::Control;
use crate::event::Event;
use crate::run::Run;

/// A run as it starts, as an observer sees it.
pub struct Started<'a> {
    pub id: &'a Arc<str>,
    pub tool: &'a Arc<str>,
    /// The run's arguments (`null` for a continued or restarted run).
    pub args: &'a Json,
    pub control: &'a Control,
    /// The channel the run's starter gave it, if any.
    pub events: Option<&'a broadcast::Sender<Event>>,
}

/// Hears of every run an engine starts and ends. Called on the run's own task, once at its
/// start and once at its end: keep both cheap (no I/O, no waiting).
pub trait Observe: Send + Sync {
    /// A run starts. Returns the channel its events should go to when its starter gave it
    /// none (`None`: it stays without one and builds no event, unless a channel is attached
    /// later with [`Control::attach_events`]).
    fn started(&self, run: Started<'_>) -> Option<broadcast::Sender<Event>>;
    /// The run ended, or waits for its client.
    fn ended(&self, run: &Run);
}
