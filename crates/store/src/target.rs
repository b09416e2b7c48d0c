//! Store URLs: which backend, what to hand the driver, and how to name it in messages.

use std::path::PathBuf;

use crate::StoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub backend: Backend,
    /// The URL the driver connects to (the `schema` parameter removed).
    pub connect_url: String,
    /// The URL for messages and logs: no password.
    pub redacted: String,
    /// PostgreSQL: the schema every connection's `search_path` is set to.
    pub schema: Option<String>,
    /// SQLite: the database file; `None` for `sqlite::memory:`.
    pub sqlite_file: Option<PathBuf>,
}

pub(crate) fn parse(url: &str) -> Result<Target, StoreError> {
    let invalid = |reason: &str| StoreError::InvalidUrl {
        url: redact(url),
        reason: reason.to_owned(),
    };
    if let Some(rest) = url.strip_prefix("sqlite:") {
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        if rest.contains('?') {
            return Err(invalid(
                "SQLite URLs take no parameters (WAL, busy timeout and foreign keys are always on)",
            ));
        }
        if rest == ":memory:" {
            return Ok(Target {
                backend: Backend::Sqlite,
                connect_url: "sqlite::memory:".into(),
                redacted: url.to_owned(),
                schema: None,
                sqlite_file: None,
            });
        }
        if rest.is_empty() {
            return Err(invalid(
                "no file path: use sqlite://relative/path.db or sqlite:///absolute/path.db",
            ));
        }
        let file = std::path::absolute(rest).map_err(|e| invalid(&e.to_string()))?;
        let path = file
            .to_str()
            .ok_or_else(|| invalid("the file path is not valid UTF-8"))?;
        return Ok(Target {
            backend: Backend::Sqlite,
            connect_url: format!("sqlite://{}?mode=rwc", percent_encode_path(path)),
            redacted: url.to_owned(),
            schema: None,
            sqlite_file: Some(file),
        });
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut schema = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("schema", name)) => {
                    schema = Some(valid_schema(name).map_err(|r| invalid(&r))?)
                }
                _ => kept.push(pair),
            }
        }
        let connect_url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return Ok(Target {
            backend: Backend::Postgres,
            connect_url,
            redacted: redact(url),
            schema,
            sqlite_file: None,
        });
    }
    Err(invalid(
        "unknown scheme: use sqlite://PATH, sqlite::memory: or postgres://USER@HOST/DB[?schema=NAME]",
    ))
}

/// Schema names go into `SET search_path` and `CREATE SCHEMA` unquoted, so only plain
/// identifiers are accepted.
fn valid_schema(name: &str) -> Result<String, String> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(name.to_ascii_lowercase())
    } else {
        Err(format!(
            "schema {name:?} must be letters, digits and underscores, starting with a letter, \
             at most 63 characters"
        ))
    }
}

/// The URL with any password (in the authority or a `password=` parameter) replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let after = scheme_end + 3;
    let authority_end = url[after..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| after + i);
    let authority = &url[after..authority_end];
    let mut out = url[..after].to_owned();
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push_str(":***");
                }
                None => out.push_str(userinfo),
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let rest = &url[authority_end..];
    match rest.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let pairs: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            out.push_str(&pairs.join("&"));
        }
        None => out.push_str(rest),
    }
    out
}

/// sqlx percent-decodes SQLite paths, so anything outside the unreserved set is encoded.
fn percent_encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/flows?schema=a"),
            "postgres://app:***@db:5432/flows?schema=a"
        );
        assert_eq!(
            redact("postgres://app@db/flows?sslmode=disable&password=s3cret"),
            "postgres://app@db/flows?sslmode=disable&password=***"
        );
        assert_eq!(redact("postgres://db/flows"), "postgres://db/flows");
    }

    #[test]
    fn schema_parameter_is_taken_out() {
        let t = parse("postgres://u:p@h/db?schema=Tenant_1&sslmode=disable").unwrap();
        assert_eq!(t.schema.as_deref(), Some("tenant_1"));
        assert_eq!(t.connect_url, "postgres://u:p@h/db?sslmode=disable");
        assert!(parse("postgres://h/db?schema=a;drop").is_err());
    }

    #[test]
    fn sqlite_paths_become_absolute_and_encoded() {
        let t = parse("sqlite:///tmp/a b/x.db").unwrap();
        assert_eq!(t.connect_url, "sqlite:///tmp/a%20b/x.db?mode=rwc");
        let rel = parse("sqlite://state/x.db").unwrap();
        assert!(rel.sqlite_file.unwrap().is_absolute());
        assert!(parse("sqlite::memory:").unwrap().sqlite_file.is_none());
        assert!(parse("mysql://h/db").is_err());
        assert!(parse("sqlite://").is_err());
    }
}
