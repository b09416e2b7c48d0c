//! rmcp's service behind this layer, cloned only for the requests that reach it.

use std::sync::Arc;
use std::task::{Context, Poll};

/// axum clones a route's service for every request, and rmcp's `StreamableHttpService` clones
/// its config (the allowed hosts among it) with itself; most `tools/call`s are answered in
/// front of it and never reach it. rmcp's service is always ready, so this is too.
pub(crate) struct Behind<S>(Arc<S>);

impl<S> Behind<S> {
    pub(crate) fn new(service: S) -> Behind<S> {
        Behind(Arc::new(service))
    }
}

impl<S> Clone for Behind<S> {
    fn clone(&self) -> Self {
        Behind(self.0.clone())
    }
}

impl<S, R> tower::Service<R> for Behind<S>
where
    S: tower::Service<R> + Clone,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: R) -> S::Future {
        let mut service = (*self.0).clone();
        service.call(request)
    }
}
