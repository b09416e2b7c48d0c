//! The audit log of `mcpflow serve` (issue #18): which sinks the config asks for, and
//! `mcpflow audit`, which lists what the store kept.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use mcpflow_config::Loaded;
use mcpflow_server::{Audit, AuditOptions};
use mcpflow_store::{AuditFilter, Store, now_ms};

use crate::runs_cmd::StoreArgs;

/// The audit of `serve`: under `auth:`, or when the config has an `audit:` section (which then
/// audits calls without access control too, as the open caller's); `None` otherwise, and then
/// a call costs nothing for it. `store` is the store attached to the engine, if any.
pub fn start(
    loaded: &Loaded,
    enforced: bool,
    store: Option<Arc<dyn Store>>,
) -> Result<Option<Audit>, String> {
    let settings = loaded.config.audit.clone();
    if !enforced && settings.is_none() {
        return Ok(None);
    }
    let settings = settings.unwrap_or_default();
    let options = AuditOptions {
        stderr: settings.to_stderr(),
        file: settings.file.as_ref().map(|f| loaded.base_dir.join(f)),
        store: store.filter(|_| settings.to_store()),
    };
    if !options.stderr && options.file.is_none() && options.store.is_none() {
        return Ok(None);
    }
    Audit::start(options).map(Some).map_err(|e| e.to_string())
}

/// The audit file is opened anew on SIGHUP (after a rotation moved it away), for as long as the
/// process lives.
pub fn reopen_on_hangup(audit: Audit) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot listen for SIGHUP ({e}): the audit file is never reopened");
            return;
        }
    };
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            audit.reopen();
        }
    });
}

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// Only calls of the last DURATION (`90s`, `15m`, `2h`, `7d`) or since a time
    /// (`2026-11-26T09:00:00Z`, UTC).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// At most this many calls, the newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `mcpflow audit`: the calls the store kept, the newest first.
pub async fn audit(args: AuditArgs) -> ExitCode {
    let since_ms = match args
        .since
        .as_deref()
        .map(|s| since(s, now_ms()))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mcpflow: --since: {e}");
            return ExitCode::from(2);
        }
    };
    let store = match crate::runs_cmd::open(&args.store).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return ExitCode::FAILURE;
        }
    };
    let filter = AuditFilter {
        since_ms,
        limit: args.limit,
    };
    let code = match store.list_audit(&filter).await {
        Ok(rows) if args.store.json => crate::output::json(&rows, ExitCode::SUCCESS),
        Ok(rows) => {
            let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
            let table: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    vec![
                        mcpflow_store::rfc3339(r.at),
                        dash(&r.subject),
                        dash(&r.key),
                        r.tool.clone(),
                        r.outcome.clone(),
                        r.duration_ms.to_string(),
                        dash(&r.run_id),
                    ]
                })
                .collect();
            let header = ["TIME", "SUBJECT", "KEY", "TOOL", "OUTCOME", "MS", "RUN"];
            let text = crate::runs_cmd::table(&header, &table);
            crate::output::emit(text.trim_end_matches('\n'), ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("mcpflow: {e}");
            ExitCode::FAILURE
        }
    };
    store.close().await;
    code
}

/// `--since`: a duration back from `now` or an RFC 3339 time in UTC, as milliseconds.
fn since(text: &str, now: i64) -> Result<i64, String> {
    let text = text.trim();
    if let Some(at) = utc_time(text) {
        return Ok(at);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{text}` needs a unit: 90s, 15m, 2h, 7d"))?;
    let (n, unit) = text.split_at(split);
    let n: i64 = n
        .parse()
        .map_err(|_| format!("`{text}` is neither a duration (90s, 15m, 2h, 7d) nor a UTC time"))?;
    let ms = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "`{text}` is neither a duration (90s, 15m, 2h, 7d) nor a UTC time \
                 (2026-11-26T09:00:00Z)"
            ));
        }
    };
    Ok(now.saturating_sub(n.saturating_mul(ms)))
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z` (or the date alone) as milliseconds since the Unix epoch.
fn utc_time(text: &str) -> Option<i64> {
    let (date, time) = match text.split_once('T') {
        Some((d, t)) => (d, Some(t.strip_suffix('Z')?)),
        None => (text, None),
    };
    let mut d = date.splitn(3, '-');
    let (y, m, day): (i64, i64, i64) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    if date.len() != 10 || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let (mut secs, mut millis) = (0i64, 0i64);
    if let Some(time) = time {
        let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
        let mut t = hms.splitn(3, ':');
        let (h, mi, s): (i64, i64, i64) = (
            t.next()?.parse().ok()?,
            t.next()?.parse().ok()?,
            t.next()?.parse().ok()?,
        );
        if h > 23 || mi > 59 || s > 60 {
            return None;
        }
        secs = h * 3600 + mi * 60 + s;
        if !frac.is_empty() {
            let digits: String = frac.chars().chain("000".chars()).take(3).collect();
            millis = digits.parse().ok()?;
        }
    }
    // Days from the civil date (Howard Hinnant's algorithm), the inverse of the store's.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + secs) * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_durations_and_utc_times() {
        let now = 1_795_694_400_000;
        assert_eq!(since("90s", now), Ok(now - 90_000));
        assert_eq!(since("2h", now), Ok(now - 7_200_000));
        assert_eq!(since("7d", now), Ok(now - 7 * 86_400_000));
        assert_eq!(since("2026-11-26T12:00:00Z", 0), Ok(1_795_694_400_000));
        assert_eq!(since("2000-02-29T00:00:00.123Z", 0), Ok(951_782_400_123));
        assert_eq!(since("1970-01-01", 0), Ok(0));
        for bad in [
            "",
            "12",
            "3w",
            "yesterday",
            "2026-13-01",
            "2026-11-26T12:00:00",
        ] {
            assert!(since(bad, now).is_err(), "{bad}");
        }
        for ms in [0, 951_782_400_123, 1_795_694_400_000] {
            assert_eq!(utc_time(&mcpflow_store::rfc3339(ms)), Some(ms));
        }
    }
}
