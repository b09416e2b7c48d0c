//! The one implementation of [`Store`](crate::Store), over sqlx's `Any` driver: the same SQL
//! (`$1` placeholders, `ON CONFLICT`, `RETURNING`) runs on SQLite and PostgreSQL, and only
//! opening, migrations and the footprint query differ per backend.

mod audit;
mod dyn_store;
mod fleet;
mod group;
mod open;
mod queries;
mod rows;
mod runs;
mod sessions;

use std::sync::Arc;

use sqlx::AnyPool;
use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};

use crate::StoreError;
use crate::target::Backend;

pub use fleet::MAX_MESSAGE_BYTES;
pub(crate) use open::open_sql;

/// A connection pool plus what messages need to name it, and the writers that group the
/// hot path's writes into shared commits (see [`group`]).
#[derive(Debug)]
pub(crate) struct SqlStore {
    pool: AnyPool,
    db: Arc<Db>,
    /// PostgreSQL: the fleet's message channel.
    channel: Option<fleet::Channel>,
    group: group::Group,
}

/// What every query needs besides a connection: the backend and how to word errors.
#[derive(Debug)]
pub(crate) struct Db {
    backend: Backend,
    /// The URL without its password.
    url: String,
}

type Tx = Transaction<'static, Any>;

impl Db {
    fn err(&self, e: sqlx::Error) -> StoreError {
        StoreError::from_sqlx(e, &self.url)
    }

    fn closed(&self) -> StoreError {
        StoreError::Unavailable {
            url: self.url.clone(),
            reason: "the store has been closed".into(),
        }
    }

    /// SQLite transactions take the write lock up front: a deferred transaction that reads and
    /// then writes fails at once with SQLITE_BUSY when another writer got in between, instead
    /// of waiting out busy_timeout.
    async fn begin(&self, pool: &AnyPool) -> Result<Tx, StoreError> {
        let tx = match self.backend {
            Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => pool.begin().await,
        };
        tx.map_err(|e| self.err(e))
    }
}

impl SqlStore {
    fn new(pool: AnyPool, backend: Backend, url: String, channel: Option<fleet::Channel>) -> Self {
        let db = Arc::new(Db { backend, url });
        let group = group::Group::start(pool.clone(), db.clone());
        SqlStore {
            pool,
            db,
            channel,
            group,
        }
    }

    fn err(&self, e: sqlx::Error) -> StoreError {
        self.db.err(e)
    }

    async fn begin(&self) -> Result<Tx, StoreError> {
        self.db.begin(&self.pool).await
    }

    /// Runs `work` over `data` as one write of a group commit (see [`group`]): it runs on the
    /// writer's task, so `data` is owned (JSON already text), and its caller is answered once
    /// its batch is committed.
    async fn write<D, T, F>(&self, data: D, work: F) -> Result<T, StoreError>
    where
        D: Send + Sync + 'static,
        T: Send + 'static,
        F: for<'c> Fn(
                &'c D,
                &'c Db,
                &'c mut sqlx::AnyConnection,
            ) -> futures::future::BoxFuture<'c, Result<T, StoreError>>
            + Send
            + Sync
            + 'static,
    {
        self.group.write(&self.db, data, work).await
    }

    async fn commit(&self, tx: Tx) -> Result<(), StoreError> {
        tx.commit().await.map_err(|e| self.err(e))
    }

    async fn fetch_optional(
        &self,
        q: sqlx::query::Query<'_, Any, sqlx::any::AnyArguments>,
    ) -> Result<Option<AnyRow>, StoreError> {
        q.fetch_optional(&self.pool).await.map_err(|e| self.err(e))
    }
}

/// A listing's SQL: `head`, then `WHERE` over the `columns` whose filter is set (each
/// `= $n`, to be bound in this order), `ORDER BY order`, and the `LIMIT` and `OFFSET`
/// placeholders after them. Column names are ours, never a caller's.
fn page_sql(head: &str, columns: &[(&str, bool)], order: &str) -> String {
    let mut sql = head.to_owned();
    let mut n = 0;
    for (column, _) in columns.iter().filter(|(_, set)| *set) {
        n += 1;
        let joint = if n == 1 { "WHERE" } else { "AND" };
        sql.push_str(&format!(" {joint} {column} = ${n}"));
    }
    sql.push_str(&format!(
        " ORDER BY {order} LIMIT ${} OFFSET ${}",
        n + 1,
        n + 2
    ));
    sql
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.kind() == sqlx::error::ErrorKind::UniqueViolation)
}
