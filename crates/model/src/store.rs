//! Where runs and sessions are kept (`store:`, an mcpflow extension), how long finished runs
//! stay there, and how long a replica's claim on the runs it executes lasts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `store:` is a URL (`sqlite://path`, relative to the config, or `postgres://…`), or an
/// object with the URL, the retention of finished runs and the run lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum StoreSetting {
    /// Where runs and sessions are kept: `sqlite://path` (relative to the config) or
    /// `postgres://…`.
    Url(String),
    Settings(StoreConfig),
}

impl StoreSetting {
    /// The URL as written, if the config names one.
    pub fn url(&self) -> Option<&str> {
        match self {
            StoreSetting::Url(url) => Some(url),
            StoreSetting::Settings(s) => s.url.as_deref(),
        }
    }

    /// The retention policy, defaults filled in.
    pub fn retention(&self) -> Retention {
        match self {
            StoreSetting::Url(_) => Retention::default(),
            StoreSetting::Settings(s) => s.retention.unwrap_or_default(),
        }
    }

    /// The run lease in seconds, the default filled in and kept within its bounds.
    pub fn lease_seconds(&self) -> u64 {
        match self {
            StoreSetting::Url(_) => StoreConfig::DEFAULT_LEASE_SECONDS,
            StoreSetting::Settings(s) => s.lease_seconds(),
        }
    }
}

/// The store with its settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoreConfig {
    /// Where runs and sessions are kept: `sqlite://path` (relative to the config) or
    /// `postgres://…`. Without it, `--store`/`--state` or `.mcpflow/state.db` next to the
    /// config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub url: Option<String>,
    /// How long finished runs (and their history) are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
    /// Seconds a process's claim on the runs it executes lasts without being renewed (default
    /// 30, at least 2). A live process renews it about three times per lease. Once a process
    /// dies, the runs it was executing (and the sessions it was continuing) stay its own this
    /// long; then a replica on the same store marks them `interrupted` and restarts the
    /// `resumable` ones. Shorter recovers sooner, for more frequent renewals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 2, max = 3600))]
    pub lease_seconds: Option<u64>,
}

impl StoreConfig {
    pub const DEFAULT_LEASE_SECONDS: u64 = 30;
    /// Below this, one slow round trip to the database could let a live process's lease lapse
    /// and a peer restart a run that is still executing.
    pub const MIN_LEASE_SECONDS: u64 = 2;
    pub const MAX_LEASE_SECONDS: u64 = 3600;

    pub fn lease_seconds(&self) -> u64 {
        self.lease_seconds
            .unwrap_or(Self::DEFAULT_LEASE_SECONDS)
            .clamp(Self::MIN_LEASE_SECONDS, Self::MAX_LEASE_SECONDS)
    }
}

/// Which finished runs the store keeps: those younger than `maxAgeSeconds`, and of them at most
/// the `maxRuns` that ended last. Older or further ones are deleted with their history by the
/// serving process's upkeep. Runs that are running or waiting on a session are never
/// deleted, nor an interrupted run of a resumable tool that may still be restarted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retention {
    /// Seconds a finished run is kept after it ended (default 604800: 7 days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_age_seconds: Option<u64>,
    /// Finished runs kept at most, the most recently ended first (default 10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_runs: Option<u64>,
}

impl Retention {
    pub const DEFAULT_MAX_AGE_SECONDS: u64 = 7 * 24 * 3600;
    pub const DEFAULT_MAX_RUNS: u64 = 10_000;

    pub fn max_age_seconds(&self) -> u64 {
        self.max_age_seconds
            .unwrap_or(Self::DEFAULT_MAX_AGE_SECONDS)
            .max(1)
    }

    pub fn max_runs(&self) -> u64 {
        self.max_runs.unwrap_or(Self::DEFAULT_MAX_RUNS).max(1)
    }
}
