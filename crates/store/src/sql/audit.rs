//! The audit log's table: rows appended in batches, listed newest first, deleted by age.

use sqlx::AssertSqlSafe;

use super::SqlStore;
use super::rows::get;
use crate::StoreError;
use crate::audit::{AuditFilter, AuditRow};

/// Rows per INSERT statement: 8 parameters each stays far below both backends' limits.
const ROWS_PER_INSERT: usize = 500;

impl SqlStore {
    pub(super) async fn append_audit(&self, rows: &[AuditRow]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin().await?;
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            let values: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let n = i * 8;
                    format!(
                        "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                        n + 1,
                        n + 2,
                        n + 3,
                        n + 4,
                        n + 5,
                        n + 6,
                        n + 7,
                        n + 8
                    )
                })
                .collect();
            let sql = format!(
                "INSERT INTO audit (at, subject, via, key_name, tool, outcome, duration_ms, \
                 run_id) VALUES {}",
                values.join(", ")
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
            for row in chunk {
                q = q
                    .bind(row.at)
                    .bind(row.subject.as_deref())
                    .bind(row.via.as_deref())
                    .bind(row.key.as_deref())
                    .bind(row.tool.as_str())
                    .bind(row.outcome.as_str())
                    .bind(row.duration_ms)
                    .bind(row.run_id.as_deref());
            }
            q.execute(&mut *tx).await.map_err(|e| self.err(e))?;
        }
        self.commit(tx).await
    }

    pub(super) async fn list_audit(
        &self,
        filter: &AuditFilter,
    ) -> Result<Vec<AuditRow>, StoreError> {
        let found = sqlx::query(
            "SELECT at, subject, via, key_name, tool, outcome, duration_ms, run_id FROM audit \
             WHERE at >= $1 ORDER BY at DESC, id DESC LIMIT $2",
        )
        .bind(filter.since_ms.unwrap_or(i64::MIN))
        .bind(i64::from(filter.limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        found
            .iter()
            .map(|row| {
                Ok(AuditRow {
                    at: get(row, "at")?,
                    subject: get(row, "subject")?,
                    via: get(row, "via")?,
                    key: get(row, "key_name")?,
                    tool: get(row, "tool")?,
                    outcome: get(row, "outcome")?,
                    duration_ms: get(row, "duration_ms")?,
                    run_id: get(row, "run_id")?,
                })
            })
            .collect()
    }

    /// The oldest first, through `audit_by_time`, at most `batch` in one short transaction.
    pub(super) async fn purge_audit(&self, before_ms: i64, batch: u32) -> Result<u64, StoreError> {
        let deleted = sqlx::query(
            "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < $1 \
             ORDER BY at, id LIMIT $2)",
        )
        .bind(before_ms)
        .bind(i64::from(batch))
        .execute(&self.pool)
        .await
        .map_err(|e| self.err(e))?
        .rows_affected();
        Ok(deleted)
    }
}
