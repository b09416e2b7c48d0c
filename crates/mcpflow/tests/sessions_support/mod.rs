#![allow(dead_code)]
//! Shared by the sessions tests: a store per test (a SQLite file in a temp dir, or a fresh
//! schema on the PostgreSQL server, dropped afterwards), `mcpflow serve` processes on it, and
//! the workflow configs.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolResult, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;

use crate::common::{Client, call, mcpflow, write_config};

pub const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/test";

pub fn pg_base_url() -> String {
    std::env::var("MCPFLOW_TEST_PG").unwrap_or_else(|_| DEFAULT_PG.to_owned())
}

/// Where one test keeps its state; a PostgreSQL schema is dropped when this is dropped.
pub struct TestStore {
    pub url: String,
    schema: Option<String>,
    pub dir: tempfile::TempDir,
}

impl TestStore {
    pub fn sqlite() -> TestStore {
        let dir = tempfile::tempdir().expect("temporary directory");
        let url = format!("sqlite://{}/state/mcpflow.db", dir.path().display());
        TestStore {
            url,
            schema: None,
            dir,
        }
    }

    /// Panics, saying why, when the server cannot be reached: these tests must not pass
    /// without having run.
    pub async fn postgres() -> TestStore {
        let base = pg_base_url();
        sqlx::any::install_default_drivers();
        if let Err(e) = <sqlx::AnyConnection as sqlx::Connection>::connect(&base).await {
            panic!(
                "PostgreSQL is not reachable at {base}: {e}. The sessions tests need a running \
                 server (CI has one); start it or set MCPFLOW_TEST_PG to its URL."
            );
        }
        let schema = format!(
            "h3_{}",
            &mcpflow_store::new_session_id().expect("random")[..16]
        );
        let sep = if base.contains('?') { '&' } else { '?' };
        TestStore {
            url: format!("{base}{sep}schema={schema}"),
            schema: Some(schema),
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    /// The PostgreSQL schema this test's store lives in.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    pub fn config(&self, yaml: &str) -> PathBuf {
        write_config(self.dir.path(), yaml)
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        let Some(schema) = self.schema.take() else {
            return;
        };
        let base = pg_base_url();
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if let Ok(mut conn) =
                    <sqlx::AnyConnection as sqlx::Connection>::connect(&base).await
                {
                    let sql =
                        format!("SET lock_timeout = '5s'; DROP SCHEMA IF EXISTS {schema} CASCADE");
                    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                        .execute(&mut conn)
                        .await;
                    let _ = sqlx::Connection::close(conn).await;
                }
            });
        })
        .join();
    }
}

/// An `mcpflow serve CONFIG --store URL` process and an MCP client on its stdio.
pub struct Served {
    pub client: Client,
    pub pid: u32,
}

pub async fn serve(config: &Path, store: &str, instance: &str) -> Served {
    let mut cmd = tokio::process::Command::new(mcpflow());
    cmd.arg("serve")
        .arg(config)
        .args(["--store", store, "--instance", instance])
        .env("MCPFLOW_LOG", "warn");
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("mcpflow starts");
    let pid = transport.id().expect("mcpflow has a pid");
    let config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcpflow-sessions-tests", "0.0.0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25);
    let client = config.serve(transport).await.expect("initialize succeeds");
    Served { client, pid }
}

/// kill -9.
pub fn kill_hard(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -9 {pid} failed");
}

pub fn structured(r: &CallToolResult) -> Value {
    let v = serde_json::to_value(r).expect("serializes");
    assert_ne!(
        v["isError"],
        Value::Bool(true),
        "the call failed: {}",
        v["content"][0]["text"]
    );
    v["structuredContent"].clone()
}

pub fn error_text(r: &CallToolResult) -> String {
    let v = serde_json::to_value(r).expect("serializes");
    assert_eq!(
        v["isError"],
        Value::Bool(true),
        "expected a tool error, got {v}"
    );
    v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

pub async fn start(client: &Client, tool: &str, args: Value) -> Value {
    let w = structured(&call(client, tool, args).await);
    assert_eq!(w["status"], "waiting", "{w}");
    w
}

pub async fn cont(client: &Client, tool: &str, session: &str, input: Value) -> CallToolResult {
    call(
        client,
        &format!("{tool}_continue"),
        serde_json::json!({"sessionId": session, "input": input}),
    )
    .await
}

/// Two waits with an upstream call between them; the input of each is validated.
pub const ORDER: &str = r#"
version: "1.0"
server: {name: shop, version: "1.0.0"}
sessions: {ttlSeconds: TTL}
mcpServers:
  fx: {command: "{fixture}"}
tools:
  - name: order
    description: Orders an item in two confirmed steps.
    inputSchema: {type: object, properties: {item: {type: string}}, required: [item]}
    nodes:
      - {id: start, type: entry, next: quantity}
      - id: quantity
        type: await
        message: {expr: "'How many ' & $.start.item & '?'"}
        options: {expr: "[{'tool': 'order_continue', 'arguments': {'input': {'quantity': 1}}}]"}
        inputSchema:
          type: object
          properties: {quantity: {type: integer, minimum: 1}}
          required: [quantity]
          additionalProperties: false
        next: price
      - id: price
        type: mcp
        server: fx
        tool: echo
        args: {item: {expr: "$.start.item"}, total: {expr: "$.quantity.quantity * 3"}}
        next: address
      - id: address
        type: await
        message: {expr: "'Total ' & $string($.price.total) & ': where to?'"}
        inputSchema: {type: object, properties: {street: {type: string, minLength: 1}}, required: [street]}
        next: done
      - id: done
        type: transform
        transform: {expr: "{'item': $.start.item, 'quantity': $.quantity.quantity, 'total': $.price.total, 'street': $.address.street}"}
        next: finish
      - {id: finish, type: exit}
  - name: approve
    description: One wait, then done.
    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    nodes:
      - {id: start, type: entry, next: ask}
      - id: ask
        type: await
        message: "Approve?"
        inputSchema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
        next: done
      - id: done
        type: transform
        transform: {expr: "{'n': $.start.n, 'ok': $.ask.ok}"}
        next: finish
      - {id: finish, type: exit}
"#;

pub fn order_config(ttl_seconds: u64) -> String {
    ORDER.replace("TTL", &ttl_seconds.to_string())
}

/// A TCP relay to the PostgreSQL server that the test can cut: `cut()` closes the listener and
/// every relayed connection, as a database that went away would.
pub struct Relay {
    pub port: u16,
    tasks: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Relay {
    pub async fn start(target: &str) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the relay");
        let port = listener.local_addr().expect("relay address").port();
        let tasks = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let target = target.to_owned();
        let list = tasks.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let target = target.clone();
                let relay = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                if let Ok(mut l) = list.lock() {
                    l.push(relay.abort_handle());
                }
            }
        });
        if let Ok(mut l) = tasks.lock() {
            l.push(accept.abort_handle());
        }
        Relay { port, tasks }
    }

    pub fn cut(&self) {
        if let Ok(l) = self.tasks.lock() {
            for t in l.iter() {
                t.abort();
            }
        }
    }
}
