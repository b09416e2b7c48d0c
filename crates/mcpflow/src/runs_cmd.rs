//! `mcpflow runs list|show ID|stats` and `mcpflow sessions list|show ID|cancel ID|continue ID`:
//! read (and for a cancel, change) the store, as JSON with `--json` or as a table; a continue
//! runs the rest of the session's run with the config's graph, as `NAME_continue` would.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use mcpflow_store::{RunFilter, RunStatus, SessionFilter, SessionStatus, Store, now_ms};
use serde_json::json;

use crate::state::{StateArgs, store_url};

/// Which store to read: `--store`, `--state`, or the one of a config (`--config`).
#[derive(Args, Debug)]
pub struct StoreArgs {
    #[command(flatten)]
    pub state: StateArgs,
    /// The config whose store to read (its `store:`, or `.mcpflow/state.db` next to it).
    #[arg(long, short = 'c', value_name = "CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: RunsCmd,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Subcommand, Debug)]
pub enum RunsCmd {
    /// The newest runs first.
    List {
        /// Only runs in this status (running, waiting, succeeded, failed, cancelled,
        /// interrupted, expired).
        #[arg(long)]
        status: Option<String>,
        /// Only runs of this tool.
        #[arg(long)]
        tool: Option<String>,
        /// At most this many runs.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// One run with its history.
    Show {
        /// The run's id, or enough of its start to name one run.
        id: String,
    },
    /// Counts and durations per tool and status.
    Stats,
}

#[derive(Args, Debug)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub command: SessionsCmd,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Subcommand, Debug)]
pub enum SessionsCmd {
    /// The newest sessions first.
    List {
        /// Only sessions in this status (waiting, claimed, completed, cancelled, expired,
        /// interrupted).
        #[arg(long)]
        status: Option<String>,
        /// At most this many sessions.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// One session.
    Show {
        /// The session's id (`sessionId` of its waiting handle).
        id: String,
    },
    /// Cancels a waiting session and its run.
    Cancel {
        /// The session's id (`sessionId` of its waiting handle).
        id: String,
    },
    /// Continues a waiting session with INPUT (needs --config: the rest of the run is that
    /// config's graph) and prints the result, or the next waiting handle, as `run` does.
    Continue {
        /// The session's id: `sessionId` of the waiting handle `run` or a tool call printed.
        id: String,
        /// The input the await node asks for, as a JSON object (`@file.json` reads a file).
        #[arg(long, value_name = "JSON")]
        input: String,
        /// An `mcp.json` whose `mcpServers` are merged in.
        #[arg(short = 'm', long = "mcp", value_name = "MCP_JSON")]
        mcp: Option<PathBuf>,
        /// Print `{"result": …, "history": […]}` instead of the result alone.
        #[arg(long)]
        history: bool,
    },
}

pub(crate) async fn open(args: &StoreArgs) -> Result<Arc<dyn Store>, String> {
    let base = match &args.config {
        Some(c) => std::path::absolute(c)
            .map_err(|e| format!("{}: {e}", c.display()))?
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default(),
        None => std::env::current_dir().map_err(|e| e.to_string())?,
    };
    let config_store = match &args.config {
        Some(c) => mcpflow_config::load(c, None)
            .map_err(|e| e.to_string())?
            .config
            .store
            .and_then(|s| s.url().map(str::to_owned)),
        None => None,
    };
    let url = store_url(&args.state, config_store.as_deref(), &base, true)
        .ok_or("no store: give --store, --state or --config")?;
    if let Some(file) = url.strip_prefix("sqlite://")
        && !std::path::Path::new(file).exists()
    {
        return Err(format!(
            "no state at {file}: nothing has run with a store there (give --store, --state or \
             --config)"
        ));
    }
    crate::state::open(&url).await
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("mcpflow: {e}");
    ExitCode::FAILURE
}

fn print_json(v: &impl serde::Serialize) -> ExitCode {
    crate::output::json(v, ExitCode::SUCCESS)
}

/// Prints lines built whole first, so a reader that goes away stops one write, not many.
fn print_lines(text: &str) -> ExitCode {
    crate::output::emit(text.trim_end_matches('\n'), ExitCode::SUCCESS)
}

/// Left-aligned columns, two spaces apart, one line each (the last ends with a newline).
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<String>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(header.iter().map(|h| (*h).to_owned()).collect());
    for row in rows {
        line(row.clone());
    }
    out
}

fn time(ms: Option<i64>) -> String {
    ms.map_or_else(
        || "-".into(),
        |ms| format!("{:.1}s ago", (now_ms() - ms) as f64 / 1000.0),
    )
}

pub async fn runs(args: RunsArgs) -> ExitCode {
    let store = match open(&args.store).await {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let json = args.store.json;
    let code = match args.command {
        RunsCmd::List {
            status,
            tool,
            limit,
        } => {
            let status = match status.map(|s| s.parse::<RunStatus>()).transpose() {
                Ok(s) => s,
                Err(e) => return fail(e),
            };
            let filter = RunFilter {
                status,
                tool,
                limit,
                offset: 0,
            };
            match store.list_runs(&filter).await {
                Ok(runs) if json => print_json(&runs),
                Ok(runs) => {
                    let rows: Vec<Vec<String>> = runs
                        .iter()
                        .map(|r| {
                            vec![
                                r.id.clone(),
                                r.tool.clone(),
                                r.status.to_string(),
                                time(Some(r.started_at)),
                                r.ended_at
                                    .map_or("-".into(), |e| format!("{} ms", e - r.started_at)),
                            ]
                        })
                        .collect();
                    print_lines(&table(&["ID", "TOOL", "STATUS", "STARTED", "TOOK"], &rows))
                }
                Err(e) => fail(e),
            }
        }
        RunsCmd::Show { id } => {
            let id = match run_id(store.as_ref(), &id).await {
                Ok(id) => id,
                Err(e) => return fail(e),
            };
            let run = match store.get_run(&id).await {
                Ok(r) => r,
                Err(e) => return fail(e),
            };
            let records = match store.get_records(&id).await {
                Ok(r) => r,
                Err(e) => return fail(e),
            };
            if json {
                print_json(&json!({"run": run, "history": records}))
            } else {
                let mut out = format!(
                    "run {}  tool {}  status {}  config {}\nargs: {}\n",
                    run.summary.id,
                    run.summary.tool,
                    run.summary.status,
                    run.summary.config_version,
                    run.args
                );
                if let Some(by) = &run.summary.started_by {
                    out.push_str(&format!("started by: {by}\n"));
                }
                if let Some(r) = &run.result {
                    out.push_str(&format!("result: {r}\n"));
                }
                if let Some(e) = &run.error {
                    out.push_str(&format!("error: {e}\n"));
                }
                let rows: Vec<Vec<String>> = records
                    .iter()
                    .map(|r| {
                        vec![
                            r.index.to_string(),
                            r.node_id.clone(),
                            r.node_type.clone(),
                            format!("{:.2}", r.end_ms - r.start_ms),
                            r.error.clone().unwrap_or_else(|| {
                                r.output
                                    .as_ref()
                                    .map_or("-".into(), |o| short(&o.to_string()))
                            }),
                        ]
                    })
                    .collect();
                out.push_str(&table(
                    &["#", "NODE", "TYPE", "MS", "OUTPUT / ERROR"],
                    &rows,
                ));
                print_lines(&out)
            }
        }
        RunsCmd::Stats => match store.run_stats().await {
            Ok(stats) if json => {
                let footprint = store.footprint().await.ok();
                let sessions = store.count_sessions().await.ok();
                print_json(
                    &json!({"runs": stats.rows, "sessions": sessions, "footprint": footprint}),
                )
            }
            Ok(stats) => {
                let rows: Vec<Vec<String>> = stats
                    .rows
                    .iter()
                    .map(|r| {
                        vec![
                            r.tool.clone(),
                            r.status.to_string(),
                            r.count.to_string(),
                            r.mean_ms().map_or("-".into(), |m| format!("{m:.1}")),
                            r.max_ms.to_string(),
                        ]
                    })
                    .collect();
                let mut out = table(&["TOOL", "STATUS", "COUNT", "MEAN MS", "MAX MS"], &rows);
                if let Ok(f) = store.footprint().await {
                    out.push_str(&format!(
                        "store: {} bytes (runs {}, records {}, sessions {})",
                        f.total(),
                        f.runs_bytes,
                        f.records_bytes,
                        f.sessions_bytes
                    ));
                }
                print_lines(&out)
            }
            Err(e) => fail(e),
        },
    };
    store.close().await;
    code
}

/// A session as `--json` prints it: the store's fields, and its id also as `sessionId`, the
/// name the waiting handle gives it (over MCP and from `run`).
fn session_json(session: &mcpflow_store::Session) -> serde_json::Value {
    let mut v = serde_json::to_value(session).unwrap_or(serde_json::Value::Null);
    if let Some(map) = v.as_object_mut() {
        map.insert("sessionId".into(), session.id.clone().into());
    }
    v
}

/// The run `typed` names: its whole id, or the start of exactly one run's id.
async fn run_id(store: &dyn Store, typed: &str) -> Result<String, String> {
    const SHOWN: u32 = 5;
    if typed.is_empty() {
        return Err("give a run id (`mcpflow runs list` shows them)".into());
    }
    let ids = store
        .run_ids_with_prefix(typed, SHOWN + 1)
        .await
        .map_err(|e| e.to_string())?;
    match ids.as_slice() {
        [] => Err(format!(
            "no run with id {typed:?}, nor one whose id starts so (`mcpflow runs list` shows them)"
        )),
        [one] => Ok(one.clone()),
        _ if ids.iter().any(|id| id == typed) => Ok(typed.to_owned()),
        many => Err(format!(
            "{typed:?} starts the ids of {} runs ({}{}): give more of the id",
            if many.len() > SHOWN as usize {
                "more than 5".to_owned()
            } else {
                many.len().to_string()
            },
            many.iter()
                .take(SHOWN as usize)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            if many.len() > SHOWN as usize {
                ", …"
            } else {
                ""
            },
        )),
    }
}

fn short(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(59).collect::<String>())
    } else {
        s.to_owned()
    }
}

pub async fn sessions(args: SessionsArgs) -> ExitCode {
    if let SessionsCmd::Continue {
        id,
        input,
        mcp,
        history,
    } = &args.command
    {
        return continue_session(&args.store, id, input, mcp.clone(), *history).await;
    }
    let store = match open(&args.store).await {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let json = args.store.json;
    let code = match args.command {
        SessionsCmd::List { status, limit } => {
            let status = match status.map(|s| s.parse::<SessionStatus>()).transpose() {
                Ok(s) => s,
                Err(e) => return fail(e),
            };
            let filter = SessionFilter {
                status,
                run_id: None,
                limit,
                offset: 0,
            };
            match store.list_sessions(&filter).await {
                Ok(list) if json => print_json(&list.iter().map(session_json).collect::<Vec<_>>()),
                Ok(list) => {
                    let rows: Vec<Vec<String>> = list
                        .iter()
                        .map(|s| {
                            vec![
                                s.id.clone(),
                                s.tool.clone(),
                                s.status.to_string(),
                                s.node_id.clone(),
                                time(Some(s.created_at)),
                                format!("{:.0}s", (s.expires_at - now_ms()) as f64 / 1000.0),
                            ]
                        })
                        .collect();
                    print_lines(&table(
                        &["ID", "TOOL", "STATUS", "AT NODE", "CREATED", "EXPIRES IN"],
                        &rows,
                    ))
                }
                Err(e) => fail(e),
            }
        }
        SessionsCmd::Show { id } => match store.get_session(&id).await {
            Ok(s) if json => print_json(&session_json(&s)),
            Ok(s) => print_lines(&format!(
                "session {}  tool {}  run {}  status {}  at node {}\nstate: {}\ninputSchema: {}",
                s.id, s.tool, s.run_id, s.status, s.node_id, s.state, s.input_schema
            )),
            Err(e) => fail(e),
        },
        SessionsCmd::Cancel { id } => match store.cancel_session(&id, now_ms()).await {
            Ok(s) if json => print_json(&session_json(&s)),
            Ok(s) => print_lines(&format!("session {} cancelled (run {})", s.id, s.run_id)),
            Err(e) => fail(e),
        },
        SessionsCmd::Continue { .. } => ExitCode::from(2),
    };
    store.close().await;
    code
}

/// `mcpflow sessions continue ID --input JSON --config CONFIG`.
async fn continue_session(
    args: &StoreArgs,
    id: &str,
    input: &str,
    mcp: Option<PathBuf>,
    history: bool,
) -> ExitCode {
    let Some(config) = &args.config else {
        eprintln!(
            "mcpflow: sessions continue needs --config CONFIG: the rest of the run is that \
             config's graph"
        );
        return ExitCode::from(2);
    };
    let input = match crate::cli::json_arg("--input", input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return ExitCode::from(2);
        }
    };
    let config = crate::cli::ConfigArgs {
        config: config.clone(),
        mcp,
    };
    let (loaded, engine) = match crate::load::load(&config) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let owner = crate::state::owner(None);
    let mcp_json = config.mcp.as_deref();
    let store = match crate::state::attach(&engine, &loaded, &args.state, mcp_json, owner).await {
        Ok(Some(store)) => store,
        Ok(None) => return fail("no store: give --store or --state, or a config whose tools wait"),
        Err(e) => return fail(e),
    };
    let tool = match store.get_session(id).await {
        Ok(session) => session.tool,
        Err(e) => {
            store.close().await;
            return fail(e);
        }
    };
    // The engine compiled every tool's schemas at load.
    let graph = engine.graph(&tool).cloned();
    let output = graph.as_ref().and_then(|g| g.output_validator());
    let request = mcpflow_engine::RunRequest::new(tool.as_str(), input);
    match engine.continue_session(request, id).await {
        Ok(run) => {
            crate::run::settle(&engine, Some(store), &run).await;
            crate::run::report(&run, output, history)
        }
        Err(e) => {
            engine.pool().shutdown().await;
            store.close().await;
            fail(e)
        }
    }
}
