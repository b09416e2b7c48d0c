//! `mcpflow upstream list|call URL …`: talk to one remote MCP server through the same client
//! the graphs use, to check a URL, its headers and its tools before putting it in a config.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use indexmap::IndexMap;
use mcpflow_config::model::McpServer;
use mcpflow_upstream::{PoolOptions, UpstreamPool};
use serde_json::{Value, json};

use crate::cli::json_arg;

/// The pool's name for the one server; it shows in error messages.
const NAME: &str = "upstream";

#[derive(Subcommand, Debug)]
pub enum UpstreamCmd {
    /// Connect, print what the server says about itself and its tools as JSON.
    List(Target),
    /// Connect, list the tools, call TOOL once and print its result as JSON (exit 1 when it
    /// reports an error).
    Call(CallArgs),
}

#[derive(Args, Debug)]
pub struct Target {
    /// The server's URL (Streamable HTTP endpoint, or with --sse the SSE endpoint).
    pub url: String,
    /// Speak legacy HTTP+SSE (2024-11-05) instead of Streamable HTTP.
    #[arg(long)]
    pub sse: bool,
    /// An extra HTTP header, `Name: value` (repeatable), e.g. `-H "Authorization: Bearer …"`.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// How long one request may take, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub timeout_ms: u64,
    /// How long connecting plus the MCP handshake may take, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub connect_timeout_ms: u64,
}

#[derive(Args, Debug)]
pub struct CallArgs {
    #[command(flatten)]
    pub target: Target,
    /// The tool to call.
    pub tool: String,
    /// Its arguments as a JSON object (`@file.json` reads a file).
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
}

pub async fn upstream(command: UpstreamCmd) -> ExitCode {
    let target = match &command {
        UpstreamCmd::List(target) => target,
        UpstreamCmd::Call(call) => &call.target,
    };
    let pool = match pool(target) {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("mcpflow: {error}");
            return ExitCode::from(2);
        }
    };
    let code = match command {
        UpstreamCmd::List(_) => list(&pool).await,
        UpstreamCmd::Call(call) => self::call(&pool, &call).await,
    };
    pool.shutdown().await;
    code
}

async fn list(pool: &UpstreamPool) -> ExitCode {
    let outcome = async {
        let server = pool.server_info(NAME).await?;
        let tools = pool.list_tools(NAME).await?;
        Ok::<_, mcpflow_upstream::UpstreamError>(json!({"server": server, "tools": tools}))
    };
    match outcome.await {
        Ok(out) => print(&out, ExitCode::SUCCESS),
        Err(error) => {
            eprintln!("mcpflow: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn call(pool: &UpstreamPool, call: &CallArgs) -> ExitCode {
    let args = match json_arg("--args", &call.args) {
        Ok(Value::Object(args)) => args,
        Ok(_) => {
            eprintln!("mcpflow: --args must be a JSON object");
            return ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("mcpflow: {error}");
            return ExitCode::from(2);
        }
    };
    // Listing first names the tools when TOOL is not one of them, and lets the client learn
    // the tool's schema (2026-07-28 mirrors some arguments into headers from it).
    match pool.list_tools(NAME).await {
        Ok(tools) if !tools.iter().any(|t| t.name == call.tool) => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            eprintln!(
                "mcpflow: the server has no tool `{}`; it has: {}",
                call.tool,
                names.join(", ")
            );
            return ExitCode::FAILURE;
        }
        Ok(_) => {}
        Err(error) => {
            eprintln!("mcpflow: {error}");
            return ExitCode::FAILURE;
        }
    }
    match pool.call_tool(NAME, &call.tool, args).await {
        Ok(result) => {
            let code = if result.is_error {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
            match serde_json::to_value(&result) {
                Ok(out) => print(&out, code),
                Err(error) => {
                    eprintln!("mcpflow: cannot print the result: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(error) => {
            eprintln!("mcpflow: {error}");
            ExitCode::FAILURE
        }
    }
}

/// A pool of the one server, described as a config entry would describe it.
fn pool(target: &Target) -> Result<UpstreamPool, String> {
    let mut headers = serde_json::Map::new();
    for header in &target.headers {
        let Some((name, value)) = header.split_once(':') else {
            return Err(format!(
                "header `{}` is not `Name: value`",
                header.split(' ').next().unwrap_or_default()
            ));
        };
        headers.insert(name.trim().to_string(), value.trim().into());
    }
    let entry = json!({
        "type": if target.sse { "sse" } else { "streamableHttp" },
        "url": target.url,
        "headers": headers,
        "timeoutMs": target.timeout_ms.max(1),
        "connectTimeoutMs": target.connect_timeout_ms.max(1),
    });
    let server: McpServer =
        serde_json::from_value(entry).map_err(|e| format!("invalid upstream: {e}"))?;
    let servers = IndexMap::from([(NAME.to_string(), server)]);
    let options = PoolOptions {
        connect_timeout: Duration::from_millis(target.connect_timeout_ms.max(1)),
        call_timeout: Duration::from_millis(target.timeout_ms.max(1)),
        ..PoolOptions::default()
    };
    let base_dir = std::env::current_dir().unwrap_or_default();
    Ok(UpstreamPool::with_options(servers, base_dir, options))
}

fn print(out: &Value, code: ExitCode) -> ExitCode {
    match serde_json::to_string_pretty(out) {
        Ok(text) => {
            println!("{text}");
            code
        }
        Err(error) => {
            eprintln!("mcpflow: cannot print the result: {error}");
            ExitCode::FAILURE
        }
    }
}
