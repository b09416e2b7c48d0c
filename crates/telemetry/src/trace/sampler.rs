//! Which traces are recorded: the OpenTelemetry SDK's samplers, with their names in
//! `OTEL_TRACES_SAMPLER` and their decisions (a ratio compares the trace id's low 63 bits
//! with the ratio's share of 2^63, so every service of a trace decides alike).

use opentelemetry::trace::TraceId;

/// How a trace with no sampled-or-not parent is decided.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Root {
    On,
    Off,
    /// Sampled when the trace id's low 63 bits are below this bound.
    Ratio(u64),
}

/// A sampler: `parentbased_*` follows the parent's decision when there is a parent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    root: Root,
    parent_based: bool,
}

impl Default for Sampler {
    /// The SDK's default: parent-based, always on.
    fn default() -> Self {
        Sampler {
            root: Root::On,
            parent_based: true,
        }
    }
}

impl Sampler {
    /// Parent-based, sampling `ratio` (clamped to 0..=1) of new traces.
    pub fn parent_based_ratio(ratio: f64) -> Sampler {
        Sampler {
            root: ratio_root(ratio),
            parent_based: true,
        }
    }

    /// The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name, as the SDK reads
    /// them; a value it cannot use gives the default and the reason, for the caller to log.
    pub fn from_env(name: Option<&str>, arg: Option<&str>) -> (Sampler, Option<String>) {
        let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
            return (Sampler::default(), None);
        };
        let ratio = || -> (Root, Option<String>) {
            match arg.and_then(|a| a.trim().parse::<f64>().ok()) {
                Some(r) if !r.is_nan() => (ratio_root(r), None),
                _ => (
                    Root::On,
                    Some(format!(
                        "OTEL_TRACES_SAMPLER={name} needs OTEL_TRACES_SAMPLER_ARG, a ratio from 0 \
                         to 1: every trace is sampled"
                    )),
                ),
            }
        };
        let (root, parent_based, warning) = match name {
            "always_on" => (Root::On, false, None),
            "always_off" => (Root::Off, false, None),
            "traceidratio" => {
                let (root, warning) = ratio();
                (root, false, warning)
            }
            "parentbased_always_on" => (Root::On, true, None),
            "parentbased_always_off" => (Root::Off, true, None),
            "parentbased_traceidratio" => {
                let (root, warning) = ratio();
                (root, true, warning)
            }
            other => (
                Root::On,
                true,
                Some(format!(
                    "OTEL_TRACES_SAMPLER={other} is not a sampler mcpflow has (always_on, \
                     always_off, traceidratio, parentbased_always_on, parentbased_always_off, \
                     parentbased_traceidratio): parentbased_always_on is used"
                )),
            ),
        };
        (Sampler { root, parent_based }, warning)
    }

    /// Whether a span of `trace` is sampled, given its parent's decision when it has a parent.
    pub fn sample(&self, parent_sampled: Option<bool>, trace: TraceId) -> bool {
        if self.parent_based
            && let Some(sampled) = parent_sampled
        {
            return sampled;
        }
        match self.root {
            Root::On => true,
            Root::Off => false,
            Root::Ratio(bound) => {
                let low = u64::from_be_bytes(low_half(trace));
                (low >> 1) < bound
            }
        }
    }
}

fn low_half(trace: TraceId) -> [u8; 8] {
    let bytes = trace.to_bytes();
    let mut low = [0u8; 8];
    low.copy_from_slice(&bytes[8..]);
    low
}

fn ratio_root(ratio: f64) -> Root {
    if ratio >= 1.0 {
        Root::On
    } else if ratio.is_nan() || ratio <= 0.0 {
        Root::Off
    } else {
        Root::Ratio((ratio * (1u64 << 63) as f64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(low: u64) -> TraceId {
        TraceId::from((0xabcd_u128 << 64) | u128::from(low))
    }

    #[test]
    fn a_ratio_keeps_its_share_of_traces_and_decides_by_the_trace_id() {
        let half = Sampler::parent_based_ratio(0.5);
        // The low 63 bits against 2^62.
        assert!(half.sample(None, trace(0)));
        assert!(half.sample(None, trace((1 << 63) - 2)));
        assert!(!half.sample(None, trace(1 << 63)));
        assert!(!half.sample(None, trace(u64::MAX)));
        let tenth = Sampler::parent_based_ratio(0.1);
        let kept = (0..100_000u64)
            .filter(|n| tenth.sample(None, trace(n.wrapping_mul(0x9e37_79b9_7f4a_7c15))))
            .count();
        assert!((9_000..11_000).contains(&kept), "{kept} of 100,000 kept");
        assert!(!Sampler::parent_based_ratio(0.0).sample(None, trace(0)));
        assert!(Sampler::parent_based_ratio(1.5).sample(None, trace(u64::MAX)));
    }

    #[test]
    fn parent_based_samplers_follow_the_parent_and_the_others_do_not() {
        let never = Sampler::parent_based_ratio(0.0);
        assert!(never.sample(Some(true), trace(1)));
        assert!(!Sampler::default().sample(Some(false), trace(1)));
        let (always_off, _) = Sampler::from_env(Some("always_off"), None);
        assert!(!always_off.sample(Some(true), trace(1)));
        let (always_on, _) = Sampler::from_env(Some("always_on"), None);
        assert!(always_on.sample(Some(false), trace(1)));
    }

    #[test]
    fn the_environment_names_the_samplers_as_the_sdk_does() {
        assert_eq!(Sampler::from_env(None, None), (Sampler::default(), None));
        let (s, warning) = Sampler::from_env(Some("parentbased_traceidratio"), Some("0.25"));
        assert_eq!(s, Sampler::parent_based_ratio(0.25));
        assert!(warning.is_none());
        let (s, warning) = Sampler::from_env(Some("traceidratio"), Some("lots"));
        assert!(s.sample(None, trace(u64::MAX)) && !s.parent_based);
        assert!(warning.is_some_and(|w| w.contains("OTEL_TRACES_SAMPLER_ARG")));
        let (s, warning) = Sampler::from_env(Some("xray"), None);
        assert_eq!(s, Sampler::default());
        assert!(warning.is_some_and(|w| w.contains("xray")));
        let (s, _) = Sampler::from_env(Some("parentbased_always_off"), None);
        assert!(!s.sample(None, trace(0)) && s.sample(Some(true), trace(0)));
    }
}
