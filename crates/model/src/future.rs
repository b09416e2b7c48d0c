//! Boxing a future where it is built, for the crates that run requests (`server`, `gateway`).
//!
//! Not config data: it lives here because every async crate depends on this one and on
//! nothing lower, and it needs nothing but `std`.

use std::pin::Pin;

/// `Box::pin(make())` without copying the future into its box.
///
/// A future is as large as its largest state: kilobytes for a graph run or a request's
/// handler, most of it unwritten until polled. `Box::pin(fut)` builds it on the stack and then
/// copies all of it into the allocation; allocating first lets the compiler build it in place
/// (only what it captured is written), which callgrind showed saving ~8 k instructions per
/// graph call where the handler boxes the run. What tokio or rmcp spawn is copied again, so
/// the futures handed to them are kept small by boxing this way below them.
#[inline(always)]
pub fn boxed<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

#[cfg(test)]
mod tests {
    use std::task::{Context, Poll, Waker};

    #[test]
    fn the_boxed_future_runs_as_built() {
        let captured = String::from("built");
        let mut future = super::boxed(|| async move { captured.len() });
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(future.as_mut().poll(&mut cx), Poll::Ready(5));
    }
}
