//! The fleet's message channel: PostgreSQL's LISTEN/NOTIFY, one channel per store (per
//! schema), so that replicas sharing a store can tell each other things (the run API's live
//! events and debug control) without another server. The store carries text and knows
//! nothing of what it says. SQLite serves one process: it has no channel.

use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::{OnceCell, broadcast};

use super::SqlStore;
use crate::StoreError;

/// The most bytes one message may have (PostgreSQL refuses a NOTIFY payload of 8000 or more).
pub const MAX_MESSAGE_BYTES: usize = 7900;
/// Messages a slow listener of this process may fall behind by before it misses some.
const FEED: usize = 4096;

/// Where the fleet's messages go, and this process's one listening connection.
#[derive(Debug)]
pub(crate) struct Channel {
    /// A plain PostgreSQL URL (the `schema` parameter removed).
    connect_url: String,
    /// The channel's name: one per schema, so stores in one database do not hear each other.
    name: String,
    feed: OnceCell<broadcast::Sender<String>>,
}

impl Channel {
    pub(crate) fn new(connect_url: String, schema: Option<&str>) -> Channel {
        let mut name = format!("mcpflow_{}", schema.unwrap_or("public"));
        // A PostgreSQL identifier holds 63 bytes; a schema is ASCII (target::valid_schema).
        name.truncate(63);
        Channel {
            connect_url,
            name,
            feed: OnceCell::new(),
        }
    }
}

impl SqlStore {
    pub(super) async fn notify(&self, message: &str) -> Result<bool, StoreError> {
        let Some(channel) = &self.channel else {
            return Ok(false);
        };
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(StoreError::Backend {
                url: self.db.url.clone(),
                reason: format!(
                    "a fleet message of {} bytes is over the {MAX_MESSAGE_BYTES} a NOTIFY carries",
                    message.len()
                ),
            });
        }
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(&channel.name)
            .bind(message)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(true)
    }

    /// The first call connects the listener (so a failure is this call's error) and starts the
    /// task that reads it for the life of the process; every call subscribes to its feed.
    pub(super) async fn listen(&self) -> Result<Option<broadcast::Receiver<String>>, StoreError> {
        let Some(channel) = &self.channel else {
            return Ok(None);
        };
        let feed = channel
            .feed
            .get_or_try_init(|| async {
                let mut listener = PgListener::connect(&channel.connect_url)
                    .await
                    .map_err(|e| self.err(e))?;
                listener
                    .listen(&channel.name)
                    .await
                    .map_err(|e| self.err(e))?;
                let (tx, _) = broadcast::channel(FEED);
                let sender = tx.clone();
                tokio::spawn(async move {
                    loop {
                        match listener.recv().await {
                            Ok(note) => {
                                // Nobody subscribed right now: nothing to hand on.
                                let _ = sender.send(note.payload().to_owned());
                            }
                            Err(e) => {
                                // `recv` reconnects on the next call; what was sent meanwhile
                                // is lost, as a NOTIFY to a listener that is away always is.
                                tracing::warn!(error = %e, "the fleet channel is down; reconnecting");
                                tokio::time::sleep(Duration::from_secs(1)).await;
                            }
                        }
                    }
                });
                Ok::<_, StoreError>(tx)
            })
            .await?;
        Ok(Some(feed.subscribe()))
    }
}
