//! `mcpflow upstream list|call TARGET …`: talk to one MCP server through the same client the
//! graphs use, to see its tools and what they answer before writing a graph against them.
//! TARGET is a URL (Streamable HTTP, or legacy SSE with `--sse`), the name of a server of a
//! config (`--config`), or a command line that starts a stdio server.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use indexmap::IndexMap;
use mcpflow_config::model::McpServer;
use mcpflow_upstream::{PoolOptions, UpstreamPool};
use serde_json::{Value, json};

use crate::cli::json_arg;

/// The pool's name for a server given by URL or command line; it shows in error messages.
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
    /// A URL (`http(s)://…`), the name of a server under `mcpServers` of `--config`, or a
    /// command line that starts a stdio server, quoted as one argument
    /// (`"npx -y @modelcontextprotocol/server-filesystem ."`).
    #[arg(value_name = "URL|NAME|COMMAND")]
    pub target: String,
    /// The config whose `mcpServers` NAME is looked up in (its `${VAR}`s read, relative `cwd`s
    /// resolved against it).
    #[arg(long, short = 'c', value_name = "CONFIG")]
    pub config: Option<PathBuf>,
    /// With --config: an `mcp.json` whose `mcpServers` are merged in.
    #[arg(
        short = 'm',
        long = "mcp",
        value_name = "MCP_JSON",
        requires = "config"
    )]
    pub mcp: Option<PathBuf>,
    /// Speak legacy HTTP+SSE (2024-11-05) instead of Streamable HTTP (a URL only).
    #[arg(long)]
    pub sse: bool,
    /// An extra HTTP header, `Name: value` (repeatable), e.g. `-H "Authorization: Bearer …"`
    /// (a URL only).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// How long one request may take, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub timeout_ms: u64,
    /// How long connecting (or starting) plus the MCP handshake may take, in milliseconds.
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
    let (pool, name) = match pool(target) {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("mcpflow: {error}");
            return ExitCode::from(2);
        }
    };
    let code = match command {
        UpstreamCmd::List(_) => list(&pool, &name).await,
        UpstreamCmd::Call(call) => self::call(&pool, &name, &call).await,
    };
    pool.shutdown().await;
    code
}

async fn list(pool: &UpstreamPool, name: &str) -> ExitCode {
    let outcome = async {
        let server = pool.server_info(name).await?;
        let tools = pool.list_tools(name).await?;
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

async fn call(pool: &UpstreamPool, name: &str, call: &CallArgs) -> ExitCode {
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
    match pool.list_tools(name).await {
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
    match pool.call_tool(name, &call.tool, args).await {
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

/// A pool of the one server, described as a config entry would describe it, and its name.
fn pool(target: &Target) -> Result<(UpstreamPool, String), String> {
    let is_url = target.target.starts_with("http://") || target.target.starts_with("https://");
    if !is_url && (target.sse || !target.headers.is_empty()) {
        return Err("--sse and --header apply to a URL only".into());
    }
    let options = PoolOptions {
        connect_timeout: Duration::from_millis(target.connect_timeout_ms.max(1)),
        call_timeout: Duration::from_millis(target.timeout_ms.max(1)),
        ..PoolOptions::default()
    };
    if let Some(config) = &target.config {
        if is_url {
            return Err("give --config with the NAME of one of its servers, not a URL".into());
        }
        let loaded = mcpflow_config::load(config, target.mcp.as_deref())
            .map_err(|errors| errors.to_string())?;
        let name = target.target.clone();
        let Some(server) = loaded.config.mcp_servers.get(&name) else {
            let known: Vec<&str> = loaded
                .config
                .mcp_servers
                .keys()
                .map(String::as_str)
                .collect();
            return Err(format!(
                "{} has no server `{name}` under `mcpServers`; it has: {}",
                config.display(),
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            ));
        };
        let servers = IndexMap::from([(name.clone(), server.clone())]);
        let pool = UpstreamPool::with_options(servers, loaded.base_dir, options);
        return Ok((pool, name));
    }
    let entry = if is_url {
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
        json!({
            "type": if target.sse { "sse" } else { "streamableHttp" },
            "url": target.target,
            "headers": headers,
            "timeoutMs": target.timeout_ms.max(1),
            "connectTimeoutMs": target.connect_timeout_ms.max(1),
        })
    } else {
        let words = split_command(&target.target)?;
        let Some((command, args)) = words.split_first() else {
            return Err("give a URL, a server NAME with --config, or a command line".into());
        };
        json!({"command": command, "args": args, "timeoutMs": target.timeout_ms.max(1)})
    };
    let server: McpServer =
        serde_json::from_value(entry).map_err(|e| format!("invalid upstream: {e}"))?;
    let servers = IndexMap::from([(NAME.to_string(), server)]);
    let base_dir = std::env::current_dir().unwrap_or_default();
    Ok((
        UpstreamPool::with_options(servers, base_dir, options),
        NAME.to_string(),
    ))
}

/// Splits a command line into words as a shell would for the simple cases: blanks between
/// words, `'…'` and `"…"` quoting (with `\` escapes inside double quotes and outside).
fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("the command line has an unclosed ' quote".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => w.extend(chars.next()),
                        Some(c) => w.push(c),
                        None => return Err("the command line has an unclosed \" quote".into()),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

fn print(out: &Value, code: ExitCode) -> ExitCode {
    crate::output::json(out, code)
}
