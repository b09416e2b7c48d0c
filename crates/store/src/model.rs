//! The values the store reads and writes. Times are milliseconds since the Unix epoch: `i64`
//! for runs, sessions and leases (they are compared in SQL), `f64` for history records (the
//! engine measures node timings below the millisecond).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::StoreError;

/// How long a session waits for its client unless the config says otherwise: one hour.
pub const DEFAULT_SESSION_TTL_MS: i64 = 3_600_000;

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// A process's claim on the runs it executes, renewed by every write it makes for them and by
/// [`Store::heartbeat`](crate::Store::heartbeat). A run whose lease has lapsed is taken to be
/// orphaned by a crashed process and is marked `interrupted` by the next sweep.
///
/// `owner` should be stable across restarts of one replica (a configured instance name, or the
/// host name plus the state path): a restarted replica then reclaims its own runs at once,
/// while other replicas' runs are only touched once their lease has lapsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub owner: String,
    pub until_ms: i64,
}

impl Lease {
    pub fn new(owner: impl Into<String>, until_ms: i64) -> Self {
        Self {
            owner: owner.into(),
            until_ms,
        }
    }
}

/// Where a run is in its life. `Running` and `Waiting` are live; the rest are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RunStatus {
    /// A process (the lease owner) is executing it.
    Running,
    /// Suspended at an await; its live session holds what is needed to resume it.
    Waiting,
    Succeeded,
    Failed,
    Cancelled,
    /// The process executing it stopped (crash, kill -9) before it finished; history is kept.
    Interrupted,
    /// Its session expired before the client continued it.
    Expired,
}

impl RunStatus {
    pub const ALL: [RunStatus; 7] = [
        RunStatus::Running,
        RunStatus::Waiting,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::Interrupted,
        RunStatus::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Expired => "expired",
        }
    }

    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Running | RunStatus::Waiting)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RunStatus {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, StoreError> {
        RunStatus::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown run status {s:?}")))
    }
}

/// A run as it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// Chosen by the caller; unique.
    pub id: String,
    pub tool: String,
    /// The hash of the config the run started on; a resumed run is executed against it.
    pub config_version: String,
    /// The arguments the run was called with (they cannot be recomputed).
    pub args: Value,
    pub started_at: i64,
    /// Whether the run can wait on its client and be resumed; informational for readers.
    pub resumable: bool,
    /// The subject of the principal that started it; `None` without access control.
    pub started_by: Option<String>,
    /// What its expressions read as `$caller`, kept so that a restarted run sees the same.
    pub caller: Option<Value>,
}

/// A run that could neither wait nor resume, whole, as it is recorded after it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedRun {
    pub run: NewRun,
    pub records: Vec<RecordRow>,
    pub end: RunEnd,
    pub ended_at: i64,
}

/// How a run ended, as its owner reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    Succeeded(Value),
    Failed(Value),
    Cancelled,
}

impl RunEnd {
    pub fn status(&self) -> RunStatus {
        match self {
            RunEnd::Succeeded(_) => RunStatus::Succeeded,
            RunEnd::Failed(_) => RunStatus::Failed,
            RunEnd::Cancelled => RunStatus::Cancelled,
        }
    }
}

/// A run without its (possibly large) JSON values, for listings.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub id: String,
    pub tool: String,
    pub config_version: String,
    pub status: RunStatus,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    /// The process executing it, while `Running`.
    pub owner: Option<String>,
    /// The subject of the principal that started it; `None` without access control (or
    /// before runs recorded it).
    pub started_by: Option<String>,
}

/// A run with everything stored about it except its history records.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    #[serde(flatten)]
    pub summary: RunSummary,
    pub args: Value,
    pub resumable: bool,
    pub lease_until: Option<i64>,
    /// Set when `Succeeded`.
    pub result: Option<Value>,
    /// Set when `Failed`, `Interrupted` or `Expired`.
    pub error: Option<Value>,
    /// What its expressions read as `$caller` (see [`NewRun::caller`]).
    pub caller: Option<Value>,
}

/// One executed node of a run's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordRow {
    /// Position in the run's history, from 0; unique per run.
    pub index: i64,
    pub node_id: String,
    pub node_type: String,
    pub start_ms: f64,
    pub end_ms: f64,
    pub input: Option<Value>,
    /// `None` is JSONata's undefined (also for a failed node).
    pub output: Option<Value>,
    pub error: Option<String>,
    /// The index of the record this one ran under (a sub-graph's `call`, a `foreach`).
    pub parent: Option<i64>,
}

/// Which runs [`Store::list_runs`](crate::Store::list_runs) returns, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFilter {
    pub status: Option<RunStatus>,
    pub tool: Option<String>,
    pub limit: u32,
    pub offset: u32,
}

impl Default for RunFilter {
    fn default() -> Self {
        Self {
            status: None,
            tool: None,
            limit: 100,
            offset: 0,
        }
    }
}

/// Which ended runs [`Store::purge_runs`](crate::Store::purge_runs) deletes, with their
/// records and session tombstones: those that ended before `ended_before_ms`, and those beyond
/// the `keep_latest` that ended last. Never a running or waiting run, a run with a live
/// session, or an interrupted run of a resumable tool that ended at or after
/// `restartable_since_ms` (it may still be restarted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Purge {
    pub ended_before_ms: i64,
    pub keep_latest: u64,
    pub restartable_since_ms: i64,
    /// At most this many runs per call, so that one call is a short transaction even on a
    /// large store; call again while it returns `batch`.
    pub batch: u32,
}

/// Runs of one tool in one status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStatsRow {
    pub tool: String,
    pub status: RunStatus,
    pub count: u64,
    /// How many of them have ended (the ones the durations below cover).
    pub ended: u64,
    pub total_ms: i64,
    pub max_ms: i64,
}

impl RunStatsRow {
    pub fn mean_ms(&self) -> Option<f64> {
        (self.ended > 0).then(|| self.total_ms as f64 / self.ended as f64)
    }
}

/// Counts and durations of runs, per tool and status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunStats {
    pub rows: Vec<RunStatsRow>,
}

impl RunStats {
    pub fn count(&self, status: RunStatus) -> u64 {
        self.rows
            .iter()
            .filter(|r| r.status == status)
            .map(|r| r.count)
            .sum()
    }

    pub fn total(&self) -> u64 {
        self.rows.iter().map(|r| r.count).sum()
    }
}

/// Where a session is in its life. `Waiting` and `Claimed` are live; the rest are final and
/// keep only a tombstone (the state is dropped) so that a late continue gets a precise error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionStatus {
    /// Suspended, waiting for its client's input.
    Waiting,
    /// A continue won the claim and its run is executing again.
    Claimed,
    /// Its run ended (succeeded or failed).
    Completed,
    Cancelled,
    Expired,
    /// The process that claimed it stopped before the run ended.
    Interrupted,
}

impl SessionStatus {
    pub const ALL: [SessionStatus; 6] = [
        SessionStatus::Waiting,
        SessionStatus::Claimed,
        SessionStatus::Completed,
        SessionStatus::Cancelled,
        SessionStatus::Expired,
        SessionStatus::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Waiting => "waiting",
            SessionStatus::Claimed => "claimed",
            SessionStatus::Completed => "completed",
            SessionStatus::Cancelled => "cancelled",
            SessionStatus::Expired => "expired",
            SessionStatus::Interrupted => "interrupted",
        }
    }

    pub fn is_live(self) -> bool {
        matches!(self, SessionStatus::Waiting | SessionStatus::Claimed)
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SessionStatus {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, StoreError> {
        SessionStatus::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown session status {s:?}")))
    }
}

/// What the owner of a running run hands over when it suspends at an await.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    pub run_id: String,
    /// The await node the run is suspended at.
    pub node_id: String,
    /// Whatever the engine needs to resume (beyond the run's records).
    pub state: Value,
    /// What the client must send back.
    pub input_schema: Value,
    pub created_at: i64,
    pub expires_at: i64,
}

/// A resumed run suspending again at a (possibly different) await, under the same session id.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionUpdate {
    pub node_id: String,
    pub state: Value,
    pub input_schema: Value,
    pub updated_at: i64,
    pub expires_at: i64,
}

/// A session as stored, with its run's tool and config version.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// Unguessable: 128 bits from the OS RNG, hex.
    pub id: String,
    pub run_id: String,
    pub tool: String,
    pub config_version: String,
    pub node_id: String,
    pub status: SessionStatus,
    /// Bumped by every change; a claim names the version it read.
    pub version: i64,
    /// `Null` once the session has ended.
    pub state: Value,
    pub input_schema: Value,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: i64,
    /// The lease owner of the last claim.
    pub claimed_by: Option<String>,
    /// Who started its run (see [`RunSummary::started_by`]).
    pub started_by: Option<String>,
}

impl Session {
    /// Whether a continue sent at `now_ms` may claim it.
    pub fn is_waiting_at(&self, now_ms: i64) -> bool {
        self.status == SessionStatus::Waiting && now_ms < self.expires_at
    }
}

/// Which sessions [`Store::list_sessions`](crate::Store::list_sessions) returns, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFilter {
    pub status: Option<SessionStatus>,
    pub run_id: Option<String>,
    pub limit: u32,
    pub offset: u32,
}

impl Default for SessionFilter {
    fn default() -> Self {
        Self {
            status: None,
            run_id: None,
            limit: 100,
            offset: 0,
        }
    }
}

/// How many sessions are in each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SessionCounts {
    pub waiting: u64,
    pub claimed: u64,
    pub completed: u64,
    pub cancelled: u64,
    pub expired: u64,
    pub interrupted: u64,
}

impl SessionCounts {
    /// Waiting plus claimed: what a maximum session count limits.
    pub fn live(&self) -> u64 {
        self.waiting + self.claimed
    }

    pub(crate) fn add(&mut self, status: SessionStatus, n: u64) {
        let slot = match status {
            SessionStatus::Waiting => &mut self.waiting,
            SessionStatus::Claimed => &mut self.claimed,
            SessionStatus::Completed => &mut self.completed,
            SessionStatus::Cancelled => &mut self.cancelled,
            SessionStatus::Expired => &mut self.expired,
            SessionStatus::Interrupted => &mut self.interrupted,
        };
        *slot += n;
    }
}

/// Bytes the store occupies on disk (tables and their indexes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Footprint {
    pub runs_bytes: u64,
    pub records_bytes: u64,
    pub sessions_bytes: u64,
}

impl Footprint {
    pub fn total(&self) -> u64 {
        self.runs_bytes + self.records_bytes + self.sessions_bytes
    }
}
