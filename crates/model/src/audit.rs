//! The `audit:` section: where the audit log of tool calls goes (issue #18).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where each `tools/call` leaves its audit line: who called, which tool, the outcome, how long
/// it took and the run it started; never an argument value, a result, a key or a token.
/// Calls are audited under `auth:` (to stderr, and to the store when one is attached) or when
/// this section is present (then calls without access control are audited too, as the open
/// caller's). Read at start: a reload does not change it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditConfig {
    /// Log each line at info under the target `mcpflow::audit` on stderr (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<bool>,
    /// A file the lines are appended to, one JSON object a line (relative to the config's
    /// directory). Opened at start, created if missing; reopened on SIGHUP, so it can be
    /// rotated by moving it away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub file: Option<String>,
    /// Keep the lines in the store's `audit` table too, when a store is attached (default
    /// `true`); `mcpflow audit` lists them, and `store.retention.maxAgeSeconds` deletes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
}

impl AuditConfig {
    pub fn to_stderr(&self) -> bool {
        self.stderr.unwrap_or(true)
    }

    pub fn to_store(&self) -> bool {
        self.store.unwrap_or(true)
    }
}
