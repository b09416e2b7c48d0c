//! The audit log's rows (issue #18): one per `tools/call`, as the server's audit writes them to
//! its file and to the store. Only names and numbers: never an argument value, a result, a key
//! or a token.

use serde::ser::{Serialize, SerializeStruct, Serializer};

/// One audited call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// When the call was answered (milliseconds since the Unix epoch).
    pub at: i64,
    /// The caller's subject (a key's name, a token's `sub`, `anonymous`); none when the
    /// credential proved nothing (a 401).
    pub subject: Option<String>,
    /// How the caller proved it: `apiKey`, `jwt`, `anonymous`, `open` (no access control).
    pub via: Option<String>,
    /// The API key's name (never the key).
    pub key: Option<String>,
    pub tool: String,
    /// `ok`, `tool_error`, `error`, `input_required`, `task`, `cancelled`, `unauthenticated`,
    /// `forbidden`, `rate_limited`, `too_many_runs`.
    pub outcome: String,
    pub duration_ms: i64,
    /// The graph run the call started or continued; none for proxied and built-in tools and
    /// for refused calls.
    pub run_id: Option<String>,
}

/// Which rows [`Store::list_audit`](crate::Store::list_audit) returns: the newest first, from
/// `since_ms` on, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditFilter {
    pub since_ms: Option<i64>,
    pub limit: u32,
}

impl Default for AuditFilter {
    fn default() -> Self {
        AuditFilter {
            since_ms: None,
            limit: 100,
        }
    }
}

/// A row as one JSON object: the file's line and `mcpflow audit --json` alike, its time both as
/// RFC 3339 (`time`, for people and log shippers) and in milliseconds (`at`).
impl Serialize for AuditRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut row = s.serialize_struct("AuditRow", 10)?;
        row.serialize_field("time", &rfc3339(self.at))?;
        row.serialize_field("at", &self.at)?;
        row.serialize_field("subject", &self.subject)?;
        row.serialize_field("via", &self.via)?;
        row.serialize_field("key", &self.key)?;
        row.serialize_field("tool", &self.tool)?;
        row.serialize_field("outcome", &self.outcome)?;
        row.serialize_field("durationMs", &self.duration_ms)?;
        row.serialize_field("runId", &self.run_id)?;
        row.end()
    }
}

/// `ms` since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC), without a date crate: days
/// to a civil date by Howard Hinnant's algorithm.
pub fn rfc3339(ms: i64) -> String {
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_rfc_3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(1_795_694_400_000), "2026-11-26T12:00:00.000Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
    }
}
