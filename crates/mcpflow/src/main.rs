//! The `mcpflow` binary: a thin shell that wires config, engine, upstream and server.
//!
//! Exit codes: 0 success, 1 a run or evaluation failed, 2 the config or the command line is
//! invalid. Logs go to stderr (`MCPFLOW_LOG`, e.g. `MCPFLOW_LOG=debug`); stdout carries only
//! results, or the MCP stdio transport.

// mimalloc rather than glibc's malloc: allocation was about a fifth of the instructions of a
// served call (bench/README.md, "2026-11-23: a third fewer instructions per call"), through
// its fast entry points (`alloc.rs`). Metered: an expression's evaluation is charged to its
// memory budget (jlens-core has no allocation hook; see mcpflow_expr's `memory` module).
#[global_allocator]
static ALLOCATOR: mcpflow_expr::Metered<alloc::Mimalloc> =
    mcpflow_expr::Metered::new(alloc::Mimalloc);

mod alloc;
mod audit;
mod cli;
mod debug;
mod eval;
mod keys_cmd;
mod load;
mod migrate;
mod output;
mod reload;
mod run;
mod runs_cmd;
mod serve;
mod state;
mod telemetry;
mod upstream_cmd;
mod versions;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    // rustls is built without a default crypto provider (no aws-lc C library): ring is
    // installed before anything (remote upstreams, the JWKS fetch, the OTLP exporter) builds
    // an HTTP client, which would otherwise panic. Err means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    let command = match cli.into_command() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return ExitCode::from(2);
        }
    };
    init_logging(&command);
    let runtime = match runtime_builder(&command).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcpflow: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        match command {
            Command::Serve(args) => serve::serve(args).await,
            Command::Run(args) => run::run(args).await,
            Command::Debug(args) => debug::debug(args).await,
            Command::Validate(args) => load::validate(args).await,
            Command::Eval(args) => eval::eval(args),
            Command::Migrate(args) => migrate::migrate(args),
            Command::Upstream(command) => upstream_cmd::upstream(command).await,
            Command::Runs(args) => runs_cmd::runs(args).await,
            Command::Sessions(args) => runs_cmd::sessions(args).await,
            Command::Audit(args) => audit::audit(args).await,
            Command::Keys(command) => keys_cmd::keys(command),
            Command::Schema => output::json(&mcpflow_config::schema(), ExitCode::SUCCESS),
            Command::Completions(shell) => match output::raw(&cli::completions(shell)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("mcpflow: cannot write to stdout: {e}");
                    ExitCode::FAILURE
                }
            },
        }
    })
}

fn init_logging(command: &Command) {
    // Serving is long-lived, so say more by default; one-shot commands stay quiet.
    // rmcp logs at info every service it starts and ends: over HTTP in the 2026-07-28 era
    // that is two stderr lines per request, a measurable share of each call.
    let default = match command {
        Command::Serve(_) => "info,rmcp=warn",
        _ => "warn",
    };
    telemetry::init_logging(default);
}

/// `MCPFLOW_WORKER_THREADS=0`: everything on the main thread; `N`: N workers; unset: the main
/// thread when serving one client over stdio, one worker per core otherwise (HTTP serves many
/// clients at once). Over stdio every call is a chain of pipe reads and writes with little CPU
/// in between, and each hop between worker threads is a wake-up: measured with
/// `bench/gateway.sh` (2026-11-22), the main thread alone cut mcpflow's CPU per pass-through
/// call by about a third and raised calls/s at 16 in flight from about 6,600 to 8,900.
/// Scripts and hooks run on the sandbox's own threads either way.
fn runtime_builder(command: &Command) -> tokio::runtime::Builder {
    let stdio_serve = matches!(command, Command::Serve(args) if args.http.is_none());
    match std::env::var("MCPFLOW_WORKER_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        Some(0) => tokio::runtime::Builder::new_current_thread(),
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
        None if stdio_serve => tokio::runtime::Builder::new_current_thread(),
        None => tokio::runtime::Builder::new_multi_thread(),
    }
}
