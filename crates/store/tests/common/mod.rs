//! Databases for the tests: a SQLite file in a temporary directory, or a fresh schema on the
//! PostgreSQL server named by `MCPFLOW_TEST_PG` (default: the local test server), dropped when
//! the test ends, also on panic.

#![allow(dead_code)]

use std::sync::Arc;

use mcpflow_store::{Lease, NewRun, NewSession, Store, open};
use serde_json::json;
use sqlx::Connection;

/// One `#[tokio::test]` per backend for each named `scenario::NAME(&TestDb)`: in a module
/// `sqlite` and a module `postgres` of the test file that invokes it.
#[allow(unused_macros)]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = super::common::TestDb::sqlite();
                    super::scenario::$name(&db).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = super::common::TestDb::postgres().await;
                    super::scenario::$name(&db).await;
                }
            )*
        }
    };
}

pub const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A fixed clock: tests never read the wall clock.
pub const T0: i64 = 1_700_000_000_000;

pub fn pg_base_url() -> String {
    std::env::var("MCPFLOW_TEST_PG").unwrap_or_else(|_| DEFAULT_PG.to_owned())
}

pub struct TestDb {
    pub url: String,
    schema: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    pub fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("temporary directory");
        let url = format!("sqlite://{}/state/mcpflow.db", dir.path().display());
        TestDb {
            url,
            schema: None,
            _dir: Some(dir),
        }
    }

    /// Panics, saying why, when the server cannot be reached: these tests must not pass
    /// without having run.
    pub async fn postgres() -> TestDb {
        let base = pg_base_url();
        sqlx::any::install_default_drivers();
        if let Err(e) = sqlx::AnyConnection::connect(&base).await {
            panic!(
                "PostgreSQL is not reachable at {}: {e}. The store's PostgreSQL tests need a \
                 running server (CI has one); start it or set MCPFLOW_TEST_PG to its URL.",
                mcpflow_store::redact_url(&base)
            );
        }
        let schema = format!("t_{}", &mcpflow_store::new_session_id().unwrap()[..16]);
        let sep = if base.contains('?') { '&' } else { '?' };
        TestDb {
            url: format!("{base}{sep}schema={schema}"),
            schema: Some(schema),
            _dir: None,
        }
    }

    /// The PostgreSQL schema the test's tables are in (`None`: SQLite).
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    pub async fn open(&self) -> Arc<dyn Store> {
        open(&self.url)
            .await
            .unwrap_or_else(|e| panic!("open {}: {e}", self.url))
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some(schema) = self.schema.take() else {
            return;
        };
        let base = pg_base_url();
        // Drop runs outside any runtime guarantee (maybe while panicking): use a thread with
        // its own runtime.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if let Ok(mut conn) = sqlx::AnyConnection::connect(&base).await {
                    let sql =
                        format!("SET lock_timeout = '5s'; DROP SCHEMA IF EXISTS {schema} CASCADE");
                    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                        .execute(&mut conn)
                        .await;
                    let _ = conn.close().await;
                }
            });
        })
        .join();
    }
}

pub fn lease(owner: &str, until: i64) -> Lease {
    Lease::new(owner, until)
}

pub fn new_run(id: &str, tool: &str, started_at: i64) -> NewRun {
    NewRun {
        id: id.to_owned(),
        tool: tool.to_owned(),
        config_version: "cfg-1".to_owned(),
        args: json!({"n": 3, "b": {"z": 1, "a": 2}}),
        started_at,
        resumable: true,
        started_by: None,
        caller: None,
    }
}

pub fn new_session(run_id: &str, created_at: i64, expires_at: i64) -> NewSession {
    NewSession {
        run_id: run_id.to_owned(),
        node_id: "ask".to_owned(),
        state: json!({"context": {"price": 12}, "next": "ask"}),
        input_schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
        created_at,
        expires_at,
    }
}

/// A run of `owner` suspended at an await: returns its session.
pub async fn waiting_run(
    store: &dyn Store,
    run_id: &str,
    owner: &str,
    expires_at: i64,
) -> mcpflow_store::Session {
    store
        .create_run(&new_run(run_id, "order", T0), &lease(owner, T0 + 30_000))
        .await
        .unwrap();
    store
        .create_session(&new_session(run_id, T0 + 10, expires_at), owner, None)
        .await
        .unwrap()
}
