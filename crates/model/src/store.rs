//! Where runs and sessions are kept (`store:`, an mcpflow extension), and how long finished
//! runs stay there.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `store:` is a URL (`sqlite://path`, relative to the config, or `postgres://…`), or an
/// object with the URL and the retention of finished runs.
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
