//! Latency summaries: nearest-rank percentiles over a run's per-call durations.

use std::time::Duration;

/// What one measured run of calls comes to.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub calls: usize,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Calls completed per second of wall time (sequential, so 1 / mean plus client overhead).
    pub calls_per_s: f64,
}

impl Summary {
    /// Summarises `samples` (one per call) taken over `wall` of elapsed time.
    /// Returns `None` when there are no samples: a percentile of nothing is meaningless.
    pub fn of(samples: &[Duration], wall: Duration) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        us.sort_by(f64::total_cmp);
        let mean_us = us.iter().sum::<f64>() / us.len() as f64;
        let wall_s = wall.as_secs_f64();
        Some(Summary {
            calls: us.len(),
            p50_us: percentile(&us, 50.0),
            p90_us: percentile(&us, 90.0),
            p99_us: percentile(&us, 99.0),
            mean_us,
            min_us: us[0],
            max_us: us[us.len() - 1],
            calls_per_s: if wall_s > 0.0 {
                us.len() as f64 / wall_s
            } else {
                f64::INFINITY
            },
        })
    }
}

/// Nearest-rank percentile of an ascending, non-empty slice: the smallest sample such that at
/// least `p` percent of the samples are at or below it (so p99 of 100 samples is the 99th).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_on_one_to_hundred() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 90.0), 90.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
    }

    #[test]
    fn single_sample_is_every_percentile() {
        assert_eq!(percentile(&[7.0], 50.0), 7.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
    }

    #[test]
    fn summary_sorts_and_averages() {
        let samples = [30, 10, 20].map(Duration::from_micros);
        let s = Summary::of(&samples, Duration::from_millis(3)).expect("three samples");
        assert_eq!(s.calls, 3);
        assert_eq!(s.p50_us, 20.0);
        assert_eq!(s.p99_us, 30.0);
        assert_eq!(s.min_us, 10.0);
        assert_eq!(s.max_us, 30.0);
        assert!((s.mean_us - 20.0).abs() < 1e-9);
        assert!((s.calls_per_s - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn no_samples_no_summary() {
        assert_eq!(Summary::of(&[], Duration::from_secs(1)), None);
    }
}
