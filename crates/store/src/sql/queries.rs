//! Reading runs back (listings, statistics, sizes), purging them, and the config sources
//! runs are pinned to.

use sqlx::{AssertSqlSafe, Row};

use super::SqlStore;
use super::rows::{self, RECORD_COLUMNS, RUN_COLUMNS, RUN_SUMMARY_COLUMNS, get};
use crate::StoreError;
use crate::model::{
    Footprint, Purge, RecordRow, Run, RunFilter, RunStats, RunStatsRow, RunSummary,
};
use crate::target::Backend;

impl SqlStore {
    pub(super) async fn save_config(
        &self,
        version: &str,
        source: &str,
        files: Option<&str>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        // A version saved again (a restart, another replica) is pinned anew; the files of a row
        // stored before they were kept are filled in.
        sqlx::query(
            "INSERT INTO configs (version, source, files, created_at, pinned_at) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (version) DO UPDATE SET pinned_at = excluded.pinned_at, \
             files = COALESCE(configs.files, excluded.files)",
        )
        .bind(version)
        .bind(source)
        .bind(files)
        .bind(now_ms)
        .bind(now_ms)
        .execute(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub(super) async fn get_config(&self, version: &str) -> Result<String, StoreError> {
        let row = self
            .fetch_optional(
                sqlx::query("SELECT source FROM configs WHERE version = $1").bind(version),
            )
            .await?
            .ok_or_else(|| StoreError::not_found("config version", version))?;
        get(&row, "source")
    }

    pub(super) async fn get_config_files(
        &self,
        version: &str,
    ) -> Result<Option<String>, StoreError> {
        let row = self
            .fetch_optional(
                sqlx::query("SELECT files FROM configs WHERE version = $1").bind(version),
            )
            .await?
            .ok_or_else(|| StoreError::not_found("config version", version))?;
        get(&row, "files")
    }

    /// Pins `current` at `now_ms`, then deletes the versions no run references that nobody
    /// pinned since `idle_before_ms`, as one transaction.
    pub(super) async fn purge_configs(
        &self,
        current: &str,
        now_ms: i64,
        idle_before_ms: i64,
    ) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query("UPDATE configs SET pinned_at = $1 WHERE version = $2")
            .bind(now_ms)
            .bind(current)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let deleted = sqlx::query(
            "DELETE FROM configs WHERE version <> $1 \
             AND COALESCE(pinned_at, created_at) < $2 \
             AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.config_version = configs.version)",
        )
        .bind(current)
        .bind(idle_before_ms)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.err(e))?
        .rows_affected();
        self.commit(tx).await?;
        Ok(deleted)
    }

    pub(super) async fn get_run(&self, id: &str) -> Result<Run, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1");
        let row = self
            .fetch_optional(sqlx::query(AssertSqlSafe(sql)).bind(id))
            .await?
            .ok_or_else(|| StoreError::not_found("run", id))?;
        rows::run(&row)
    }

    pub(super) async fn get_records(&self, run_id: &str) -> Result<Vec<RecordRow>, StoreError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM records WHERE run_id = $1 ORDER BY idx");
        let found = sqlx::query(AssertSqlSafe(sql))
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        if found.is_empty() {
            // No records and no run are different answers.
            self.get_run(run_id).await?;
        }
        found.iter().map(rows::record).collect()
    }

    pub(super) async fn list_runs(
        &self,
        filter: &RunFilter,
    ) -> Result<Vec<RunSummary>, StoreError> {
        let sql = super::page_sql(
            &format!("SELECT {RUN_SUMMARY_COLUMNS} FROM runs"),
            &[
                ("status", filter.status.is_some()),
                ("tool", filter.tool.is_some()),
            ],
            "started_at DESC, id DESC",
        );
        let mut q = sqlx::query(AssertSqlSafe(sql));
        if let Some(status) = filter.status {
            q = q.bind(status.as_str());
        }
        if let Some(tool) = &filter.tool {
            q = q.bind(tool.as_str());
        }
        let found = q
            .bind(i64::from(filter.limit))
            .bind(i64::from(filter.offset))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        found.iter().map(rows::run_summary).collect()
    }

    pub(super) async fn run_ids_with_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        // `substr` rather than LIKE: nothing in the prefix is a pattern; the cast because
        // PostgreSQL has no substr(text, bigint, bigint).
        let found = sqlx::query(
            "SELECT id FROM runs WHERE substr(id, 1, CAST($1 AS INTEGER)) = $2 ORDER BY id LIMIT $3",
        )
        .bind(prefix.chars().count() as i64)
        .bind(prefix)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        found
            .iter()
            .map(|row| row.try_get::<String, _>("id").map_err(|e| self.err(e)))
            .collect()
    }

    pub(super) async fn run_stats(&self) -> Result<RunStats, StoreError> {
        let found = sqlx::query(
            "SELECT tool, status, COUNT(*) AS n, COUNT(ended_at) AS ended, \
             CAST(COALESCE(SUM(ended_at - started_at), 0) AS BIGINT) AS total_ms, \
             CAST(COALESCE(MAX(ended_at - started_at), 0) AS BIGINT) AS max_ms \
             FROM runs GROUP BY tool, status ORDER BY tool, status",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        let rows = found
            .iter()
            .map(|row| {
                Ok(RunStatsRow {
                    tool: get(row, "tool")?,
                    status: get::<String>(row, "status")?.parse()?,
                    count: count(get(row, "n")?),
                    ended: count(get(row, "ended")?),
                    total_ms: get(row, "total_ms")?,
                    max_ms: get(row, "max_ms")?,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(RunStats { rows })
    }

    /// Two bounded deletes in one transaction: by age (oldest first), then what lies beyond
    /// the newest `keep_latest`. Both select through `runs_by_end`.
    pub(super) async fn purge_runs(&self, purge: &Purge) -> Result<u64, StoreError> {
        const PURGEABLE: &str = "status NOT IN ('running', 'waiting') \
             AND NOT (status = 'interrupted' AND resumable <> 0 AND ended_at >= $1) \
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.run_id = runs.id \
             AND s.status IN ('waiting', 'claimed'))";
        let keep = i64::try_from(purge.keep_latest).unwrap_or(i64::MAX);
        let mut tx = self.begin().await?;
        let by_age = sqlx::query(AssertSqlSafe(format!(
            "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE {PURGEABLE} \
             AND ended_at < $2 ORDER BY ended_at LIMIT $3)"
        )))
        .bind(purge.restartable_since_ms)
        .bind(purge.ended_before_ms)
        .bind(i64::from(purge.batch))
        .execute(&mut *tx)
        .await
        .map_err(|e| self.err(e))?
        .rows_affected();
        let room = u64::from(purge.batch).saturating_sub(by_age);
        let by_count = if room == 0 {
            0
        } else {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE {PURGEABLE} \
                 ORDER BY ended_at DESC, id DESC LIMIT $2 OFFSET $3)"
            )))
            .bind(purge.restartable_since_ms)
            .bind(i64::try_from(room).unwrap_or(i64::MAX))
            .bind(keep)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?
            .rows_affected()
        };
        self.commit(tx).await?;
        Ok(by_age + by_count)
    }

    pub(super) async fn footprint(&self) -> Result<Footprint, StoreError> {
        let sql = match self.db.backend {
            Backend::Postgres => {
                "SELECT t.name AS name, CAST(pg_total_relation_size(CAST(t.name AS regclass)) AS BIGINT) AS bytes \
                 FROM (VALUES ('runs'), ('records'), ('sessions')) AS t(name)"
            }
            // dbstat (compiled into the bundled SQLite) sizes every b-tree: a table and its
            // indexes are summed under the table's name.
            Backend::Sqlite => {
                "SELECT m.tbl_name AS name, CAST(SUM(d.pgsize) AS BIGINT) AS bytes \
                 FROM dbstat d JOIN sqlite_master m ON m.name = d.name \
                 WHERE m.tbl_name IN ('runs', 'records', 'sessions') GROUP BY m.tbl_name"
            }
        };
        let found = sqlx::query(sql)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let mut out = Footprint::default();
        for row in &found {
            let bytes = count(
                row.try_get::<Option<i64>, _>("bytes")
                    .ok()
                    .flatten()
                    .unwrap_or(0),
            );
            match get::<String>(row, "name")?.as_str() {
                "runs" => out.runs_bytes = bytes,
                "records" => out.records_bytes = bytes,
                "sessions" => out.sessions_bytes = bytes,
                _ => {}
            }
        }
        Ok(out)
    }
}

pub(super) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
