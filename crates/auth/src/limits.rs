//! Per-principal rate limits: a token bucket per caller, refilled continuously. A request
//! past the bucket gets 429 and `Retry-After` (whole seconds until a token is back).

use std::collections::HashMap;
use std::sync::Mutex;
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

#[cfg(test)]
mod tests {
    use super::*;

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
