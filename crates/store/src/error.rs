//! What a store operation can fail with, worded for the person who must fix it.

use sqlx::error::ErrorKind;

/// Everything a store operation can fail with. Messages name the object and say what to do;
/// database URLs in them never carry a password.
/// `Clone`: one failed group commit answers every write of its batch with the same error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("no {what} with id {id:?}: check the id (it may also have been purged)")]
    NotFound { what: &'static str, id: String },

    /// The object exists but is not in a state that allows the operation: another request got
    /// there first, the session has ended, or the caller's lease on a run was lost.
    #[error("{what} {id:?}: {reason}")]
    Conflict {
        what: &'static str,
        id: String,
        reason: String,
    },

    #[error(
        "session {id:?} expired at {expired_at_ms} ms since the epoch: its run was not continued \
         in time; call the tool again to start a new run"
    )]
    Expired { id: String, expired_at_ms: i64 },

    #[error(
        "the store already holds {limit} live sessions, the configured maximum: continue or \
         cancel waiting sessions, or raise the limit"
    )]
    LimitReached { limit: u64 },

    #[error("store URL {url:?} is not usable: {reason}")]
    InvalidUrl { url: String, reason: String },

    #[error(
        "the store at {url} is unavailable: {reason}; check that the database is running and \
         reachable, then retry"
    )]
    Unavailable { url: String, reason: String },

    #[error(
        "could not bring the store at {url} to this version's schema: {reason}; the database may \
         have been written by a newer mcpflow"
    )]
    Migration { url: String, reason: String },

    #[error(
        "stored data is not what this mcpflow expects: {0}; the database may be damaged or \
         written by another program"
    )]
    Corrupt(String),

    #[error("the store at {url} failed: {reason}")]
    Backend { url: String, reason: String },

    #[error("the OS random number generator failed ({0}): session ids cannot be made safely")]
    Random(String),
}

impl StoreError {
    pub(crate) fn conflict(what: &'static str, id: &str, reason: impl Into<String>) -> Self {
        StoreError::Conflict {
            what,
            id: id.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn not_found(what: &'static str, id: &str) -> Self {
        StoreError::NotFound {
            what,
            id: id.to_owned(),
        }
    }

    /// Sorts a driver error into what the caller can act on. `url` is already redacted.
    pub(crate) fn from_sqlx(err: sqlx::Error, url: &str) -> Self {
        let url = url.to_owned();
        match err {
            sqlx::Error::Io(e) => StoreError::Unavailable {
                url,
                reason: e.to_string(),
            },
            sqlx::Error::Tls(e) => StoreError::Unavailable {
                url,
                reason: format!("TLS: {e}"),
            },
            sqlx::Error::PoolTimedOut => StoreError::Unavailable {
                url,
                reason: "no connection could be had within the 5 s acquire timeout".into(),
            },
            sqlx::Error::PoolClosed => StoreError::Unavailable {
                url,
                reason: "the store has been closed".into(),
            },
            sqlx::Error::WorkerCrashed => StoreError::Unavailable {
                url,
                reason: "the SQLite worker thread stopped".into(),
            },
            sqlx::Error::Protocol(m) => StoreError::Unavailable {
                url,
                reason: format!("protocol error: {m}"),
            },
            sqlx::Error::Configuration(e) => StoreError::InvalidUrl {
                url,
                reason: e.to_string(),
            },
            sqlx::Error::ColumnDecode { .. }
            | sqlx::Error::Decode(_)
            | sqlx::Error::ColumnNotFound(_)
            | sqlx::Error::TypeNotFound { .. } => StoreError::Corrupt(err.to_string()),
            sqlx::Error::Database(db) => from_database(&*db, url),
            other => StoreError::Backend {
                url,
                reason: other.to_string(),
            },
        }
    }
}

fn from_database(db: &dyn sqlx::error::DatabaseError, url: String) -> StoreError {
    let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
    let message = db.message().to_owned();
    // PostgreSQL: class 08 is connection trouble, 57P0x a server shutting down or starting,
    // 53xxx resources. SQLite: BUSY/LOCKED after busy_timeout, CANTOPEN, IOERR, FULL,
    // READONLY (extended codes keep the primary code in their low byte).
    let sqlite_primary = code.parse::<i64>().ok().map(|c| c & 0xff);
    // 28xxx is a refused login, 3D000 a database that does not exist: both are "cannot use
    // the database at this URL", which is what Unavailable tells the operator.
    let unavailable = code.starts_with("08")
        || code.starts_with("57P")
        || code.starts_with("53")
        || code.starts_with("28")
        || code == "3D000"
        || matches!(sqlite_primary, Some(5 | 6 | 8 | 10 | 13 | 14));
    // SQLITE_FULL, PostgreSQL's disk_full: what the operator must do is free space, and
    // nothing needs restarting afterwards.
    if sqlite_primary == Some(13) || code == "53100" {
        return StoreError::Unavailable {
            url,
            reason: format!(
                "{message}: free space on the file system that holds it (the store goes on by \
                 itself once there is room)"
            ),
        };
    }
    if unavailable {
        return StoreError::Unavailable {
            url,
            reason: message,
        };
    }
    if matches!(sqlite_primary, Some(11 | 26)) || code == "XX001" || code == "XX002" {
        return StoreError::Corrupt(message);
    }
    let kind = match db.kind() {
        ErrorKind::UniqueViolation => "unique constraint",
        ErrorKind::ForeignKeyViolation => "foreign key",
        ErrorKind::CheckViolation => "check constraint",
        ErrorKind::NotNullViolation => "not-null constraint",
        _ => "",
    };
    let reason = if kind.is_empty() {
        format!("{message} (code {code})")
    } else {
        format!("{kind} violated: {message}")
    };
    StoreError::Backend { url, reason }
}
