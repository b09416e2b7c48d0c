//! Versioned sessions: a run goes on on the config version it started on. The engines a
//! reload replaced are kept in memory ([`Engine::succeed`]); any other version (after a
//! restart, or one another replica served) is compiled again from what the store keeps of
//! it, by the [`Versions`] the binary attaches (the engine does not read configs). A tool may
//! refuse runs of an older revision of it (`revision:`): those are not continued.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::SessionError;
use crate::Engine;

/// Compiles a config version runs were pinned to, durable in the same store, from the files
/// the store keeps of it. The binary implements it (it loads configs; the engine does not).
pub trait Versions: Send + Sync + std::fmt::Debug {
    /// The engine of `version`, or why there is none (not kept, kept without its files,
    /// or it no longer loads here).
    fn engine<'a>(&'a self, version: &'a str) -> BoxFuture<'a, Result<Engine, String>>;
}

impl Engine {
    /// The engine a run or session pinned to `version` goes on in, when it is not this one:
    /// one this engine succeeded, else that version compiled again from the store. `None`:
    /// neither (the caller refuses it as started on another config).
    pub(crate) async fn engine_of_version(&self, version: &str) -> Option<Engine> {
        if let Some(older) = self.predecessor(version) {
            return Some(older);
        }
        let versions: Arc<dyn Versions> = self.durability()?.versions.clone()?;
        match versions.engine(version).await {
            Ok(older) => {
                // Its runs are watched, listed and debugged where this engine's are.
                if let Some(observer) = self.observer() {
                    let _ = older.observe(observer);
                }
                Some(older)
            }
            Err(why) => {
                tracing::warn!(
                    version,
                    "a run of this config version cannot go on here: {why}"
                );
                None
            }
        }
    }

    /// Refuses to let `older` go on with a run of `tool` when this engine's `tool` has another
    /// `revision`: its author marked the change as one old runs must not cross.
    pub(crate) fn check_revision(
        &self,
        older: &Engine,
        tool: &str,
        id: &str,
    ) -> Result<(), SessionError> {
        let (Some(now), Some(then)) = (self.graph(tool), older.graph(tool)) else {
            // A tool the served config no longer has: its runs finish on the graph they have.
            return Ok(());
        };
        let revision = |g: &crate::Graph| g.tool.revision.unwrap_or(0);
        if revision(now) == revision(then) {
            return Ok(());
        }
        Err(SessionError::MigrationRequired {
            id: id.to_owned(),
            tool: tool.to_owned(),
            started: revision(then),
            current: revision(now),
        })
    }
}
