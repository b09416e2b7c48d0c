//! The one implementation of [`Store`](crate::Store), over sqlx's `Any` driver: the same SQL
//! (`$1` placeholders, `ON CONFLICT`, `RETURNING`) runs on SQLite and PostgreSQL, and only
//! opening, migrations and the footprint query differ per backend.

mod audit;
mod dyn_store;
mod fleet;
mod open;
mod queries;
mod rows;
mod runs;
mod sessions;

use sqlx::AnyPool;
use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};

use crate::StoreError;
use crate::target::Backend;

pub use fleet::MAX_MESSAGE_BYTES;
pub(crate) use open::open_sql;

/// A connection pool plus what messages need to name it.
#[derive(Debug)]
pub(crate) struct SqlStore {
    pool: AnyPool,
    backend: Backend,
    /// The URL without its password.
    url: String,
    /// PostgreSQL: the fleet's message channel.
    channel: Option<fleet::Channel>,
}

type Tx = Transaction<'static, Any>;

impl SqlStore {
    fn err(&self, e: sqlx::Error) -> StoreError {
        StoreError::from_sqlx(e, &self.url)
    }

    /// SQLite transactions take the write lock up front: a deferred transaction that reads and
    /// then writes fails at once with SQLITE_BUSY when another writer got in between, instead
    /// of waiting out busy_timeout.
    async fn begin(&self) -> Result<Tx, StoreError> {
        let tx = match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.pool.begin().await,
        };
        tx.map_err(|e| self.err(e))
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
