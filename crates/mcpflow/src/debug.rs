//! `mcpflow debug CONFIG TOOL --args … [--break NODE[:CONDITION]]…`: one run under the debug
//! control the HTTP run API uses, driven from a terminal. The run starts paused before its
//! first node; at each pause a prompt reads `next`, `continue`, `print EXPR` (JSONata over the
//! context the paused node reads), `history`, `break NODE [CONDITION]`, `clear NODE`, `quit`.

use std::process::ExitCode;

use mcpflow_engine::{Breakpoint, Control, Event, Record, RunRequest};
use serde_json::{Map, Value as Json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::broadcast::{Receiver, error::RecvError};

use crate::cli::{ConfigArgs, DebugArgs, json_arg};
use crate::load::load;
use crate::output::line;

const HELP: &str = "commands: n|next (one node), c|continue (to the next breakpoint), \
p|print EXPR (JSONata over the context), h|history, b|break NODE [CONDITION], clear NODE, \
q|quit (stop the run)";

fn say(text: &str) {
    if line(text).is_err() {
        std::process::exit(1);
    }
}

/// Where the run is after it went on: paused somewhere, or over.
enum Halt {
    Paused(Json),
    Over(String),
}

/// Events until the run pauses or ends; finished nodes are kept for `history`.
async fn next_halt(rx: &mut Receiver<Event>, history: &mut Vec<Record>) -> Halt {
    loop {
        match rx.recv().await {
            Ok(Event::NodeFinished { record }) => history.push(*record),
            Ok(e @ Event::Paused { .. }) => {
                return Halt::Paused(serde_json::to_value(&e).unwrap_or_default());
            }
            Ok(Event::RunFinished { status }) => {
                return Halt::Over(serde_json::to_value(status).unwrap_or_default().to_string());
            }
            Ok(_) => {}
            Err(RecvError::Lagged(n)) => say(&format!("({n} events were missed)")),
            Err(RecvError::Closed) => return Halt::Over("\"ended\"".to_owned()),
        }
    }
}

fn breakpoint(control: &Control, node_ids: &[&str], node: &str, cond: Option<&str>) {
    if !node_ids.contains(&node) {
        say(&format!(
            "no node `{node}`; the tool's nodes: {}",
            node_ids.join(", ")
        ));
        return;
    }
    match Breakpoint::new(cond) {
        Ok(b) => {
            control.set_breakpoint(node, b);
            say(&format!("breakpoint on {node}"));
        }
        Err(e) => say(&format!("not a valid JSONata condition: {e}")),
    }
}

pub async fn debug(args: DebugArgs) -> ExitCode {
    let config = ConfigArgs {
        config: args.config.clone(),
        mcp: args.mcp.clone(),
    };
    let (_, engine) = match load(&config) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let input = match json_arg("--args", &args.args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(graph) = engine.graph(&args.tool) else {
        eprintln!("mcpflow: no tool named `{}`", args.tool);
        return ExitCode::from(2);
    };
    if let Err(errors) = graph.input_validator().check(&input) {
        eprintln!("mcpflow: invalid arguments: {}", errors.join("; "));
        return ExitCode::from(2);
    }
    let node_ids: Vec<&str> = graph.node_ids().collect();
    let control = Control::new();
    control.pause();
    for b in &args.breaks {
        let (node, cond) = match b.split_once(':') {
            Some((n, c)) => (n, Some(c)),
            None => (b.as_str(), None),
        };
        if !node_ids.contains(&node) {
            eprintln!("mcpflow: --break {b}: no node `{node}` in `{}`", args.tool);
            return ExitCode::from(2);
        }
        match Breakpoint::new(cond) {
            Ok(bp) => control.set_breakpoint(node, bp),
            Err(e) => {
                eprintln!("mcpflow: --break {b}: not a valid JSONata condition: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let mut handle =
        engine.spawn(RunRequest::new(args.tool.as_str(), input).with_control(control.clone()));
    let mut rx = handle.events();
    let mut history = Vec::new();
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    say(HELP);
    'run: loop {
        let paused = match next_halt(&mut rx, &mut history).await {
            Halt::Over(status) => {
                say(&format!("run finished: {}", status.trim_matches('"')));
                break;
            }
            Halt::Paused(p) => p,
        };
        let mut at = format!(
            "paused before {} ({})",
            p_str(&paused, "nodeId"),
            p_str(&paused, "reason")
        );
        if let Some(i) = paused.get("item") {
            at.push_str(&format!(" in item {i}"));
        }
        if let Some(b) = paused.get("branch").and_then(Json::as_str) {
            at.push_str(&format!(" in branch {b}"));
        }
        say(&at);
        loop {
            say("(mcpflow)");
            let Ok(Some(input)) = stdin.next_line().await else {
                control.stop();
                break 'run;
            };
            let (cmd, rest) = input.trim().split_once(' ').unwrap_or((input.trim(), ""));
            let rest = rest.trim();
            match cmd {
                "n" | "next" => {
                    control.step();
                    break;
                }
                "c" | "continue" => {
                    control.resume();
                    break;
                }
                "p" | "print" => say(&print(&control, rest)),
                "h" | "history" => {
                    for r in &history {
                        let out = r.output.as_ref().map(|v| v.to_json().to_string());
                        say(&format!(
                            "#{} {} ({}) {:.3} ms → {}",
                            r.index,
                            r.node_id,
                            r.node_type,
                            r.duration_ms,
                            out.unwrap_or_else(|| "undefined".to_owned())
                        ));
                    }
                }
                "b" | "break" => {
                    let (node, cond) = match rest.split_once(' ') {
                        Some((n, c)) => (n, Some(c.trim())),
                        None => (rest, None),
                    };
                    breakpoint(&control, &node_ids, node, cond);
                }
                "clear" => {
                    if control.remove_breakpoint(rest) {
                        say(&format!("cleared {rest}"));
                    } else {
                        say(&format!("no breakpoint on `{rest}`"));
                    }
                }
                "q" | "quit" => {
                    control.stop();
                    break 'run;
                }
                "" => {}
                _ => say(HELP),
            }
        }
    }
    let run = handle.wait().await;
    engine.pool().shutdown().await;
    say(&format!(
        "status: {}",
        serde_json::to_value(run.status).unwrap_or_default()
    ));
    if let Some(out) = run.output() {
        say(&out.to_json().to_string());
    }
    match run.error() {
        Some(e) if run.status != mcpflow_engine::RunStatus::Stopped => {
            eprintln!("mcpflow: {e}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}

fn p_str<'a>(v: &'a Json, key: &str) -> &'a str {
    v.get(key).and_then(Json::as_str).unwrap_or("?")
}

/// `print EXPR`: JSONata over the context the paused node reads (`$` alone: all of it).
fn print(control: &Control, expr: &str) -> String {
    let state = control.state();
    let Some(paused) = state.paused.first() else {
        return "not paused".to_owned();
    };
    let expr = if expr.is_empty() { "$" } else { expr };
    let compiled = match mcpflow_expr::Jsonata::compile(expr) {
        Ok(c) => c,
        Err(e) => return format!("not valid JSONata: {e}"),
    };
    match compiled.evaluate_json(Some(&paused.context), &Map::new(), &Default::default()) {
        Ok(Some(v)) => v.to_string(),
        Ok(None) => "undefined".to_owned(),
        Err(e) => format!("error: {e}"),
    }
}
