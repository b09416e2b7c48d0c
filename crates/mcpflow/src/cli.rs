//! The command line: every subcommand, flag and its documentation (clap).

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

/// The environment variables mcpflow reads itself (a config's `${VAR}` are the config's).
const ENVIRONMENT: &str = "\
Environment:
  MCPFLOW_LOG              what is logged to stderr, as a tracing filter (`debug`,
                           `mcpflow_engine=trace,warn`); default `info,rmcp=warn` when serving,
                           `warn` otherwise
  MCPFLOW_WORKER_THREADS   worker threads: N, or 0 for one thread everywhere; default one thread
                           when serving stdio, one per core otherwise
  MCPFLOW_REQUIRE_SHARED   scripts/test only: fail instead of skipping the tests that need
                           ../shared/";

/// mcpflow: an MCP server whose tools are graphs of calls to other MCP servers.
#[derive(Parser, Debug)]
#[command(
    name = "mcpflow",
    version,
    about,
    after_help = ENVIRONMENT,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Serve CONFIG over stdio (a drop-in for `mcpgraph -g CONFIG`).
    #[arg(short = 'g', long = "graph", value_name = "CONFIG")]
    graph: Option<PathBuf>,
    /// An `mcp.json` whose `mcpServers` are merged in (the config wins on a name clash).
    #[arg(short = 'm', long = "mcp", value_name = "MCP_JSON", requires = "graph")]
    mcp: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Sub>,
}

#[derive(Subcommand, Debug)]
enum Sub {
    /// Serve the config's tools over MCP (stdio).
    Serve(ServeArgs),
    /// Run one tool once and print its result as JSON.
    Run(RunArgs),
    /// Run one tool under a debugger: paused at its start, breakpoints, step, print, history.
    Debug(DebugArgs),
    /// Check a config; print a summary, or every error with file:line:col.
    Validate(ValidateArgs),
    /// Evaluate a JSONata expression (or a JSON Logic rule with --logic).
    Eval(EvalArgs),
    /// Print the JSON Schema of the config file format.
    Schema,
    /// Rewrite a config written for mcpGraph 0.1.23 (`npx mcpgraph`) in the current format,
    /// comments kept: to stdout, or `--in-place`.
    Migrate(crate::migrate::MigrateArgs),
    /// Talk to one MCP server (a URL, a server of a config, or a command line): list or call
    /// its tools.
    #[command(subcommand)]
    Upstream(crate::upstream_cmd::UpstreamCmd),
    /// Inspect stored runs: `list`, `show ID`, `stats`.
    Runs(crate::runs_cmd::RunsArgs),
    /// Inspect, continue or cancel waiting sessions: `list`, `show ID`, `continue ID`,
    /// `cancel ID`.
    Sessions(crate::runs_cmd::SessionsArgs),
    /// The audit log the store kept: who called which tool, the outcome, the run
    /// (`--since 1h`, `--limit N`, `--json`).
    Audit(crate::audit::AuditArgs),
    /// API keys for the config's `auth:` section: `new --name NAME [--scope S]… [--tool GLOB]…`.
    #[command(subcommand)]
    Keys(crate::keys_cmd::KeysCmd),
    /// Print a shell completion script: `mcpflow completions bash > ~/.local/share/bash-completion/completions/mcpflow`.
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Args, Debug, Clone)]
pub struct ConfigArgs {
    /// The graph config (YAML).
    pub config: PathBuf,
    /// An `mcp.json` whose `mcpServers` are merged in (the config wins on a name clash).
    #[arg(short = 'm', long = "mcp", value_name = "MCP_JSON")]
    pub mcp: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Also start (or connect to) every upstream a graph calls and check that each `mcp`
    /// node's tool is one of its tools (the error lists the ones it has).
    #[arg(long)]
    pub check_upstreams: bool,
}

/// `--stdio-write-timeout`'s default: the server library's own.
const STDIO_WRITE_TIMEOUT_SECS: u64 = 60;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Adds the built-in authoring tools (`mcpflow_*`: syntax reference, node catalog,
    /// discovery, search, expression tests, validation, inline runs), through which a model
    /// writes and tries graph tools itself. The config's `authoring:` section turns them on
    /// too and sets what they may do (`runInline`, `callUpstreams`, `search`).
    #[arg(long)]
    pub authoring: bool,
    /// Serve Streamable HTTP at `/mcp` on ADDR (e.g. `127.0.0.1:8080`; port 0 picks a free
    /// one) instead of stdio, with `/healthz` and `/readyz`.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// With --http: also accept this `Host` (repeatable). Only loopback names are accepted
    /// by default, against DNS rebinding.
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,
    /// Over stdio: how long answers may wait for a client that stopped reading them (stdin
    /// is not read meanwhile) before the connection is closed, in seconds.
    #[arg(
        long = "stdio-write-timeout",
        value_name = "SECS",
        default_value_t = STDIO_WRITE_TIMEOUT_SECS,
        conflicts_with = "http",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub stdio_write_timeout: u64,
    #[command(flatten)]
    pub state: crate::state::StateArgs,
    /// This replica's name in run leases (stable across restarts: its own interrupted runs
    /// are taken back at once). Default: host name and process id.
    #[arg(long, value_name = "NAME")]
    pub instance: Option<String>,
    /// How often the config's files (includes, `mcp.json` and scripts too) are read for
    /// changes, which are then served without a restart (as on SIGHUP), in milliseconds;
    /// 0 turns the watch off.
    #[arg(long = "watch-ms", value_name = "MS", default_value_t = WATCH_MS)]
    pub watch_ms: u64,
}

/// `--watch-ms`'s default: a saved config is served within about two intervals.
pub const WATCH_MS: u64 = 1000;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The graph config (YAML).
    pub config: PathBuf,
    /// The tool to run.
    pub tool: String,
    /// The tool's arguments as a JSON object (`@file.json` reads a file).
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// An `mcp.json` whose `mcpServers` are merged in.
    #[arg(short = 'm', long = "mcp", value_name = "MCP_JSON")]
    pub mcp: Option<PathBuf>,
    #[command(flatten)]
    pub state: crate::state::StateArgs,
    /// Print `{"result": …, "history": […]}` instead of the result alone.
    #[arg(long)]
    pub history: bool,
}

#[derive(Args, Debug)]
pub struct DebugArgs {
    /// The graph config (YAML).
    pub config: PathBuf,
    /// The tool to run.
    pub tool: String,
    /// The tool's arguments as a JSON object (`@file.json` reads a file).
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// A breakpoint: `NODE`, or `NODE:CONDITION` (JSONata over the context). Repeatable.
    #[arg(long = "break", value_name = "NODE[:CONDITION]")]
    pub breaks: Vec<String>,
    /// An `mcp.json` whose `mcpServers` are merged in.
    #[arg(short = 'm', long = "mcp", value_name = "MCP_JSON")]
    pub mcp: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// A JSONata expression, or with --logic a JSON Logic rule (JSON).
    pub expr: String,
    /// Evaluate a JSON Logic rule; `{"var": "…"}` strings are JSONata, as in switch nodes.
    #[arg(long)]
    pub logic: bool,
    /// With --logic: standard jsonlogic.com semantics (`var` is a dotted path).
    #[arg(long, requires = "logic")]
    pub classic: bool,
    /// The input document as JSON (`@file.json` reads a file).
    #[arg(long, value_name = "JSON")]
    pub input: Option<String>,
    /// Variables bound as `$name`, as a JSON object.
    #[arg(long, value_name = "JSON", conflicts_with = "logic")]
    pub bindings: Option<String>,
}

pub enum Command {
    Serve(ServeArgs),
    Run(RunArgs),
    Debug(DebugArgs),
    Validate(ValidateArgs),
    Eval(EvalArgs),
    Migrate(crate::migrate::MigrateArgs),
    Schema,
    Upstream(crate::upstream_cmd::UpstreamCmd),
    Runs(crate::runs_cmd::RunsArgs),
    Sessions(crate::runs_cmd::SessionsArgs),
    Audit(crate::audit::AuditArgs),
    Keys(crate::keys_cmd::KeysCmd),
    Completions(clap_complete::Shell),
}

impl Cli {
    pub fn into_command(self) -> Result<Command, String> {
        match (self.command, self.graph) {
            (Some(Sub::Serve(a)), _) => Ok(Command::Serve(a)),
            (Some(Sub::Run(a)), _) => Ok(Command::Run(a)),
            (Some(Sub::Debug(a)), _) => Ok(Command::Debug(a)),
            (Some(Sub::Validate(a)), _) => Ok(Command::Validate(a)),
            (Some(Sub::Eval(a)), _) => Ok(Command::Eval(a)),
            (Some(Sub::Schema), _) => Ok(Command::Schema),
            (Some(Sub::Migrate(a)), _) => Ok(Command::Migrate(a)),
            (Some(Sub::Upstream(a)), _) => Ok(Command::Upstream(a)),
            (Some(Sub::Runs(a)), _) => Ok(Command::Runs(a)),
            (Some(Sub::Sessions(a)), _) => Ok(Command::Sessions(a)),
            (Some(Sub::Audit(a)), _) => Ok(Command::Audit(a)),
            (Some(Sub::Keys(a)), _) => Ok(Command::Keys(a)),
            (Some(Sub::Completions { shell }), _) => Ok(Command::Completions(shell)),
            (None, Some(config)) => Ok(Command::Serve(ServeArgs {
                config: ConfigArgs {
                    config,
                    mcp: self.mcp,
                },
                authoring: false,
                http: None,
                allowed_hosts: Vec::new(),
                stdio_write_timeout: STDIO_WRITE_TIMEOUT_SECS,
                state: Default::default(),
                instance: None,
                watch_ms: WATCH_MS,
            })),
            (None, None) => {
                Err("nothing to do: give a command (see `mcpflow --help`) or `-g CONFIG`".into())
            }
        }
    }
}

/// Reads a JSON argument given inline or as `@path`.
pub fn json_arg(what: &str, text: &str) -> Result<serde_json::Value, String> {
    let owned;
    let text = match text.strip_prefix('@') {
        Some(path) => {
            // A JSON argument is no bigger than a config file may be.
            owned = mcpflow_config::read_text(
                std::path::Path::new(path),
                mcpflow_config::MAX_FILE_BYTES as u64,
            )
            .map_err(|e| format!("{what}: {path}: {e}"))?;
            owned.as_str()
        }
        None => text,
    };
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON: {e}"))
}

/// The completion script of `shell` for every command and flag.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "mcpflow", &mut script);
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `path ARG` of every argument, flag and subcommand below `cmd` that has no help text.
    fn undocumented(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_hide_set() || id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                out.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            let path = format!("{path} {}", sub.get_name());
            if sub.get_about().is_none() && sub.get_long_about().is_none() {
                out.push(path.clone());
            }
            undocumented(sub, &path, out);
        }
    }

    #[test]
    fn every_command_flag_and_argument_has_help() {
        let mut missing = Vec::new();
        undocumented(&Cli::command(), "mcpflow", &mut missing);
        assert!(missing.is_empty(), "without help text: {missing:#?}");
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
