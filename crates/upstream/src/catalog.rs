//! The one cache of an upstream's tools: its last `tools/list` (all pages, every field as
//! sent), kept until the upstream announces `notifications/tools/list_changed` or a new
//! connection replaces the one it was listed on.
//!
//! Everyone reads the same list: the engine and the authoring tools as [`ToolInfo`]
//! (converted on read), the gateway whole, in rmcp's types. A caller that derives its own view
//! from it (the gateway's renamed tools) keys that view on the list's identity
//! ([`Arc::ptr_eq`]) rather than keeping a second cache with a second invalidation.
//!
//! [`ToolInfo`]: crate::ToolInfo

use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::Tool;

/// One upstream's tool list, shared by its successive connections.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Bumped by every invalidation, so a listing that raced with one is not stored.
    generation: u64,
    tools: Option<Arc<Vec<Tool>>>,
}

impl Catalog {
    /// The cached tools, or the generation to hand back to [`Catalog::store`].
    pub fn get(&self) -> Result<Arc<Vec<Tool>>, u64> {
        let state = self.lock();
        state.tools.clone().ok_or(state.generation)
    }

    /// The cached tools, if the list is current.
    pub fn current(&self) -> Option<Arc<Vec<Tool>>> {
        self.lock().tools.clone()
    }

    /// Keeps `tools` unless the list was invalidated since `generation` was read.
    pub fn store(&self, generation: u64, tools: Arc<Vec<Tool>>) {
        let mut state = self.lock();
        if state.generation == generation {
            state.tools = Some(tools);
        }
    }

    pub fn invalidate(&self) {
        let mut state = self.lock();
        state.generation += 1;
        state.tools = None;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_that_raced_with_a_change_is_not_kept() {
        let catalog = Catalog::default();
        let Err(before) = catalog.get() else {
            panic!("an empty catalog has no tools")
        };
        catalog.invalidate();
        catalog.store(before, Arc::new(Vec::new()));
        assert!(catalog.current().is_none(), "listed before the change");
        let Err(after) = catalog.get() else {
            panic!("still empty")
        };
        catalog.store(after, Arc::new(Vec::new()));
        assert!(catalog.current().is_some());
    }
}
