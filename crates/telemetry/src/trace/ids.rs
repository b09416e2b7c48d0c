//! Trace and span ids: random, from a generator per thread seeded by the operating system.
//!
//! Why not the SDK's generator: it draws from a cryptographic generator behind a thread-local
//! handle for every id; an id needs to be unique and unpredictable enough not to collide, not
//! secret (it travels in clear in `traceparent`). SplitMix64 from an OS seed gives that for a
//! few instructions.

use std::cell::Cell;

use opentelemetry::trace::{SpanId, TraceId};

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_ok() {
        return u64::from_ne_bytes(bytes);
    }
    // No OS randomness (a locked-down sandbox): the time and this thread's stack address
    // still differ between threads and processes.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    now ^ (std::ptr::addr_of!(bytes) as u64).rotate_left(32)
}

fn next() -> u64 {
    STATE.with(|state| {
        let s = state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        state.set(s);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

/// A new span id, never the invalid (all-zero) one.
pub(crate) fn span_id() -> SpanId {
    loop {
        let id = next();
        if id != 0 {
            return SpanId::from(id);
        }
    }
}

/// A new trace id, never the invalid (all-zero) one.
pub(crate) fn trace_id() -> TraceId {
    loop {
        let id = (u128::from(next()) << 64) | u128::from(next());
        if id != 0 {
            return TraceId::from(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_valid_and_do_not_repeat() {
        let spans: HashSet<SpanId> = (0..10_000).map(|_| span_id()).collect();
        assert_eq!(spans.len(), 10_000);
        assert!(!spans.contains(&SpanId::INVALID));
        let traces: HashSet<TraceId> = (0..10_000).map(|_| trace_id()).collect();
        assert_eq!(traces.len(), 10_000);
        // Another thread starts from another seed.
        let there = std::thread::spawn(span_id).join().expect("thread");
        assert!(!spans.contains(&there));
    }
}
