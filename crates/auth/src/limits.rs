//! Per-principal limits. Rate: a token bucket per caller, refilled continuously; a request
//! past the bucket gets 429 and `Retry-After` (whole seconds until a token is back). Runs in
//! flight: a count per caller, a [`RunSlot`] held by each run; past the caller's
//! `maxConcurrentRuns` a new run gets 429 and `Retry-After: 1` ([`RUNS_RETRY_AFTER_SECONDS`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpflow_model::auth::RateLimit;

/// Past this many callers, buckets that are full again are forgotten (they hold nothing a
/// new bucket would not).
const PRUNE_AT: usize = 10_000;

#[derive(Default)]
pub(crate) struct Limiter {
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

fn burst(limit: RateLimit) -> f64 {
    f64::from(limit.burst.unwrap_or(limit.requests_per_second).max(1))
}

impl Limiter {
    /// Takes one token of `who`'s bucket, or says how long until one is back.
    pub(crate) fn take(&self, who: &str, limit: RateLimit) -> Result<(), Duration> {
        let now = Instant::now();
        let rate = f64::from(limit.requests_per_second.max(1));
        let capacity = burst(limit);
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() > PRUNE_AT {
            buckets
                .retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < capacity);
        }
        let bucket = buckets.entry(who.to_owned()).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let refilled = bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate;
        bucket.tokens = refilled.min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / rate))
        }
    }
}

/// What `Retry-After` says to a caller refused for its runs in flight: when one ends is
/// unknown, and a second is short next to a run that waits on anything slow.
pub const RUNS_RETRY_AFTER_SECONDS: u64 = 1;

/// Runs in flight per caller, shared by every principal of one [`crate::Auth`]. Only callers
/// with a run in flight have an entry, so its size is bounded by the runs, not by the callers
/// ever seen.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    counts: Mutex<HashMap<Arc<str>, u32>>,
}

/// A principal's limit of runs in flight: what it may take a [`RunSlot`] of.
#[derive(Debug, Clone)]
pub struct RunQuota {
    runs: Arc<Runs>,
    who: Arc<str>,
    max: u32,
}

/// One run in flight, counted until dropped (whatever way the run ends, the future holding
/// it dropped included), so a count can never leak.
#[derive(Debug)]
pub struct RunSlot {
    runs: Arc<Runs>,
    who: Arc<str>,
}

impl RunQuota {
    pub(crate) fn new(runs: Arc<Runs>, who: &str, max: u32) -> RunQuota {
        RunQuota {
            runs,
            who: who.into(),
            max: max.max(1),
        }
    }

    /// A slot for one more run, or `None` when the caller has `max` in flight.
    pub fn take(&self) -> Option<RunSlot> {
        let mut counts = self.runs.counts.lock().unwrap_or_else(|e| e.into_inner());
        let n = counts.entry(self.who.clone()).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(RunSlot {
            runs: self.runs.clone(),
            who: self.who.clone(),
        })
    }

    /// Whether a run started now would be refused (a hint: another request may end or take
    /// one in between; [`RunQuota::take`] decides).
    pub fn is_full(&self) -> bool {
        self.in_flight() >= self.max
    }

    pub fn in_flight(&self) -> u32 {
        let counts = self.runs.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.get(&self.who).copied().unwrap_or(0)
    }

    pub fn max(&self) -> u32 {
        self.max
    }
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        let mut counts = self.runs.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = counts.get_mut(&self.who) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.who);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_slots_count_until_dropped_and_callers_apart() {
        let runs = Arc::new(Runs::default());
        let a = RunQuota::new(runs.clone(), "a", 2);
        let b = RunQuota::new(runs.clone(), "b", 1);
        let first = a.take().expect("a's first");
        let second = a.take().expect("a's second");
        assert!(a.is_full() && a.take().is_none(), "a's third is refused");
        let b1 = b.take().expect("b has its own count");
        assert!(b.take().is_none());
        drop(first);
        assert_eq!(a.in_flight(), 1);
        let third = a.take().expect("a slot given back is taken again");
        drop((second, third, b1));
        // Callers with nothing in flight hold no memory.
        assert!(runs.counts.lock().expect("lock").is_empty());
        // A slot dropped on a task that is aborted (a run whose client went away) is given back.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let slot = a.take().expect("slot");
            let task = tokio::spawn(async move {
                let _slot = slot;
                tokio::time::sleep(Duration::from_secs(3600)).await;
            });
            tokio::task::yield_now().await;
            assert_eq!(a.in_flight(), 1);
            task.abort();
            let _ = task.await;
        });
        assert_eq!(a.in_flight(), 0);
        assert!(runs.counts.lock().expect("lock").is_empty());
    }

    #[test]
    fn a_burst_then_refusals_then_refill_and_callers_apart() {
        let limiter = Limiter::default();
        let limit = RateLimit {
            requests_per_second: 1,
            burst: Some(2),
        };
        assert!(limiter.take("a", limit).is_ok());
        assert!(limiter.take("a", limit).is_ok());
        let wait = limiter.take("a", limit).expect_err("past the burst");
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        // Another caller has a bucket of its own.
        assert!(limiter.take("b", limit).is_ok());
        std::thread::sleep(Duration::from_millis(1050));
        assert!(limiter.take("a", limit).is_ok());
    }
}
