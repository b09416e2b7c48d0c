//! The gateway's side of the pool, in rmcp's own types: any client request sent to an
//! upstream as is through the one send path ([`UpstreamPool::send`] with [`SendOptions`]), its
//! answer returned whole (every field, `_meta` included), and the upstream's tools as it listed
//! them.
//!
//! Unlike the rest of the crate this speaks rmcp's types: a gateway must not lose what it does
//! not understand, so requests, answers and tools stay in MCP's own shape.

use std::sync::Arc;

use rmcp::model::{ClientRequest, ServerResult, Tool};

pub use crate::cancel::CancelOnDrop;
pub use crate::relay::Caller;
pub use crate::send::SendOptions;

use crate::error::UpstreamError;
use crate::pool::UpstreamPool;

impl UpstreamPool {
    /// Sends `request` to `server` (starting it if needed) as `options` say and returns the
    /// answer whole. Dropping the future cancels the request upstream.
    pub async fn send(
        &self,
        server: &str,
        request: ClientRequest,
        options: SendOptions,
    ) -> Result<ServerResult, UpstreamError> {
        self.upstream(server)?.send(request, &options).await
    }

    /// Every tool `server` lists, all pages, with every field it sent (icons, `_meta`, …):
    /// the pool's one cache of them, dropped when the server announces a change (see
    /// [`UpstreamPool::list_changes`]) and when it is restarted. The same `Arc` comes back
    /// until then, so a caller may key a view of its own on it.
    pub async fn tools(&self, server: &str) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        self.upstream(server)?.tools().await
    }

    /// [`UpstreamPool::tools`] without waiting for a (re)start: the cached list, or one made on
    /// the live connection. An upstream that is not connected is started in the background
    /// and this fails at once (with why its last start failed, if it did); once it is up, a
    /// list change is announced on [`UpstreamPool::list_changes`].
    pub async fn tools_now(&self, server: &str) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        self.upstream(server)?.listed().await
    }

    /// `server`'s tools if the cache holds a current list, without asking the server.
    pub fn current_tools(&self, server: &str) -> Option<Arc<Vec<Tool>>> {
        self.upstream(server).ok()?.catalog.current()
    }
}
