//! Connecting, per-connection settings and migrations.

use std::borrow::Cow;
use std::str::FromStr;
use std::time::Duration;

use sqlx::AnyConnection;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyTransactionManager};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor, Row, SqlSafeStr};
use sqlx_core::transaction::TransactionManager;

use super::{SqlStore, fleet};
use crate::StoreError;
use crate::target::{self, Backend, Target};

/// Versioned migrations, embedded so that the binary carries its schema. A migration once
/// released is never edited (sqlx checks their checksums): changes go in a new file.
const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "runs_by_end",
        include_str!("../../migrations/sqlite/0002_runs_by_end.sql"),
    ),
    (
        3,
        "started_by",
        include_str!("../../migrations/sqlite/0003_started_by.sql"),
    ),
    (
        4,
        "audit",
        include_str!("../../migrations/sqlite/0004_audit.sql"),
    ),
    (
        5,
        "config_files",
        include_str!("../../migrations/sqlite/0005_config_files.sql"),
    ),
];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "runs_by_end",
        include_str!("../../migrations/postgres/0002_runs_by_end.sql"),
    ),
    (
        3,
        "started_by",
        include_str!("../../migrations/postgres/0003_started_by.sql"),
    ),
    (
        4,
        "audit",
        include_str!("../../migrations/postgres/0004_audit.sql"),
    ),
    (
        5,
        "config_files",
        include_str!("../../migrations/postgres/0005_config_files.sql"),
    ),
];

/// How long a call waits for a pooled connection before it fails as `Unavailable`: a database
/// that went away must fail calls promptly, not hang them.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long connecting may take (the first connection, the schema's preparation and the pool's
/// first connection; not migrations, which may build an index on a large table): a server that accepts the connection and never answers (a stopped process behind a live port,
/// a wrong port on a proxy) must fail `serve` and `runs list` with a message, not hang them.
/// The driver has no connect timeout of its own for that first connection.
pub(crate) const OPEN_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn open_sql(url: &str) -> Result<SqlStore, StoreError> {
    let target = target::parse(url)?;
    let redacted = target.redacted.clone();
    let store = match tokio::time::timeout(OPEN_TIMEOUT, connect(target)).await {
        Ok(connected) => connected?,
        Err(_) => {
            return Err(StoreError::Unavailable {
                url: redacted,
                reason: format!(
                    "no answer within {} s (something accepts connections there but does not \
                 speak to mcpflow: is it the database server, and is it running normally?)",
                    OPEN_TIMEOUT.as_secs()
                ),
            });
        }
    };
    store.migrate().await?;
    tracing::debug!(url = %store.db.url, "store opened");
    Ok(store)
}

async fn connect(target: Target) -> Result<SqlStore, StoreError> {
    sqlx::any::install_default_drivers();
    if let Some(file) = &target.sqlite_file
        && let Some(dir) = file.parent()
    {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Unavailable {
            url: target.redacted.clone(),
            reason: format!("cannot create directory {}: {e}", dir.display()),
        })?;
    }
    let options = AnyConnectOptions::from_str(&target.connect_url)
        .map_err(|e| StoreError::from_sqlx(e, &target.redacted))?
        .disable_statement_logging();
    // One direct connection first, to prepare the database: the pool retries failed
    // connects until its timeout and then reports only that it timed out, while this says
    // why (refused, not a database, …).
    let redacted = target.redacted.clone();
    let mut probe = sqlx::AnyConnection::connect_with(&options)
        .await
        .map_err(|e| StoreError::from_sqlx(e, &redacted))?;
    prepare(&mut probe, &target)
        .await
        .map_err(|e| e.into_store_error(&redacted))?;
    let _ = probe.close().await;
    let pool = pool_options(&target)
        .connect_with(options)
        .await
        .map_err(|e| StoreError::from_sqlx(e, &redacted))?;
    let channel = (target.backend == Backend::Postgres)
        .then(|| fleet::Channel::new(target.connect_url.clone(), target.schema.as_deref()));
    Ok(SqlStore::new(pool, target.backend, redacted, channel))
}

fn pool_options(target: &Target) -> AnyPoolOptions {
    let base = AnyPoolOptions::new()
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .before_acquire(|conn, _| Box::pin(repair(conn)));
    match (target.backend, &target.sqlite_file) {
        // Every connection to `:memory:` is a new, empty database: keep exactly one forever.
        (Backend::Sqlite, None) => base
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None),
        // No ping before each acquire: a connection to a local file does not go stale, and on
        // SQLite every statement, the ping too, is a round trip to the connection's thread.
        (Backend::Sqlite, Some(_)) => base
            .max_connections(4)
            .test_before_acquire(false)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    // synchronous=FULL: a commit is on disk before it returns, so a power cut
                    // (not only kill -9) loses no waiting session. sqlx already turns foreign
                    // keys on and sets a 5 s busy timeout; they are repeated so that the
                    // guarantees do not rest on a driver default.
                    conn.execute(
                        "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; \
                     PRAGMA busy_timeout = 5000;",
                    )
                    .await?;
                    Ok(())
                })
            }),
        (Backend::Postgres, _) => {
            let schema = target.schema.clone();
            base.max_connections(8).after_connect(move |conn, _| {
                let schema = schema.clone();
                Box::pin(async move {
                    if let Some(schema) = schema {
                        // `schema` is a checked plain identifier (see target::valid_schema).
                        conn.execute(AssertSqlSafe(format!("SET search_path TO {schema}")))
                            .await?;
                    }
                    Ok(())
                })
            })
        }
    }
}

/// Hands out only connections outside any transaction. A commit that fails with "database or
/// disk is full" (or an I/O error) may be rolled back by SQLite itself; the driver still counts
/// the transaction open, its own ROLLBACK then fails ("no transaction is active"), and the
/// connection would come back with every later `BEGIN` refused ("attempted to call begin_with
/// at non-zero transaction depth") long after space is freed. Such a connection is given a
/// transaction to end and rolled back; one that cannot be repaired is closed (`false`) and the
/// pool opens a fresh one. (The ping on release has already run any rollback a dropped
/// transaction queued, so the depth read here is settled.)
async fn repair(conn: &mut AnyConnection) -> Result<bool, sqlx::Error> {
    if !conn.is_in_transaction() {
        return Ok(true);
    }
    tracing::warn!(
        "a store connection came back inside a transaction its failed commit left behind: \
         rolling it back"
    );
    // Fails with "cannot start a transaction within a transaction" when one is still open,
    // which is as good: either way the ROLLBACK below has a transaction to end.
    let _ = (&mut *conn).execute("BEGIN").await;
    while conn.is_in_transaction() {
        if let Err(e) = AnyTransactionManager::rollback(conn).await {
            tracing::warn!(error = %e, "could not roll the connection back; closing it");
            return Ok(false);
        }
    }
    Ok(true)
}

enum PrepareError {
    Sql(sqlx::Error),
    NoWal(String),
}

impl From<sqlx::Error> for PrepareError {
    fn from(e: sqlx::Error) -> Self {
        PrepareError::Sql(e)
    }
}

impl PrepareError {
    fn into_store_error(self, url: &str) -> StoreError {
        match self {
            PrepareError::Sql(e) => StoreError::from_sqlx(e, url),
            PrepareError::NoWal(mode) => StoreError::Unavailable {
                url: url.to_owned(),
                reason: format!(
                    "SQLite refused WAL mode (journal_mode is {mode:?}): the file may be on a \
                     file system without shared memory support"
                ),
            },
        }
    }
}

/// What must hold before migrations: the schema exists (PostgreSQL); the file is a database
/// in WAL mode (SQLite: the mode is stored in the file, so once is enough).
async fn prepare(conn: &mut sqlx::AnyConnection, target: &Target) -> Result<(), PrepareError> {
    match (target.backend, &target.schema, &target.sqlite_file) {
        (Backend::Postgres, Some(schema), _) => {
            let sql = format!("CREATE SCHEMA IF NOT EXISTS {schema}");
            match conn.execute(AssertSqlSafe(sql)).await {
                Ok(_) => {}
                // Two processes creating the same schema at once: the loser sees a unique
                // violation on the catalog, and the schema exists either way.
                Err(e) if super::is_unique_violation(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        (Backend::Sqlite, _, Some(_)) => {
            let row = sqlx::query("PRAGMA journal_mode = WAL")
                .fetch_optional(&mut *conn)
                .await?;
            let mode: String = match &row {
                Some(r) => r.try_get("journal_mode")?,
                None => String::new(),
            };
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(PrepareError::NoWal(mode));
            }
        }
        _ => {}
    }
    Ok(())
}

impl SqlStore {
    async fn migrate(&self) -> Result<(), StoreError> {
        let set = match self.db.backend {
            Backend::Sqlite => SQLITE_MIGRATIONS,
            Backend::Postgres => POSTGRES_MIGRATIONS,
        };
        let migrations = set
            .iter()
            .map(|&(version, description, sql)| {
                Migration::new(
                    version,
                    Cow::Borrowed(description),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect();
        Migrator::with_migrations(migrations)
            .run(&self.pool)
            .await
            .map_err(|e| {
                let reason = e.to_string();
                // A database that is down or damaged says so; anything else is the migration's.
                if let sqlx::migrate::MigrateError::Execute(inner) = e {
                    let err = self.err(inner);
                    if matches!(err, StoreError::Unavailable { .. } | StoreError::Corrupt(_)) {
                        return err;
                    }
                }
                StoreError::Migration {
                    url: self.db.url.clone(),
                    reason,
                }
            })
    }
}
