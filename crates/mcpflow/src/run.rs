//! `mcpflow run` and `mcpflow sessions continue`: one run (or the rest of a waiting one), its
//! result (and history) as JSON on stdout, judged as `serve` judges it: arguments against the
//! tool's `inputSchema`, the result against its `outputSchema`, runs kept in the store.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcpflow_engine::{Engine, Run, SchemaValidator};
use mcpflow_store::Store;
use serde_json::json;

use crate::cli::{ConfigArgs, RunArgs, json_arg};
use crate::load::load;

/// `mcpflow run`: one run, its result (and history) as JSON on stdout.
pub async fn run(args: RunArgs) -> ExitCode {
    let config = ConfigArgs {
        config: args.config.clone(),
        mcp: args.mcp.clone(),
    };
    let (loaded, engine) = match load(&config) {
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
        let names: Vec<&str> = loaded
            .config
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        eprintln!(
            "mcpflow: no tool named `{}`; the config has: {}",
            args.tool,
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    if let Err(errors) = graph.input_validator().check(&input) {
        eprintln!(
            "mcpflow: invalid arguments for `{}`: {}",
            args.tool,
            errors.join("; ")
        );
        return ExitCode::FAILURE;
    }
    let store = match crate::state::attach(
        &engine,
        &loaded,
        &args.state,
        args.mcp.as_deref(),
        crate::state::owner(None),
    )
    .await
    {
        Ok(store) => store,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A one-shot run exports its spans too, when a collector is named (no metrics: nobody
    // could scrape them).
    let telemetry = match crate::telemetry::start(
        loaded.config.telemetry.as_ref(),
        &loaded.config.server.name,
        false,
    ) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", args.config.display());
            return ExitCode::from(2);
        }
    };
    let run = engine
        .run(mcpflow_engine::RunRequest::new(args.tool.as_str(), input))
        .await;
    settle(&engine, store, &run).await;
    telemetry.shutdown().await;
    report(&run, graph.output_validator(), args.history)
}

/// Ends a one-shot command's engine: the upstreams stopped (the `notifications/cancelled` of
/// calls the run abandoned sent first, see `UpstreamPool::shutdown`), and the run's record in
/// the store.
///
/// The engine records a run of a tool that cannot wait in the background, after the run
/// returns (`Durability::save_plain`); a process that exits at once would drop the record with
/// it. So wait, boundedly, until it is written (`Durability::settle_records`).
pub async fn settle(engine: &Engine, store: Option<Arc<dyn Store>>, run: &Run) {
    engine.pool().shutdown().await;
    let Some(store) = store else { return };
    if let Some(durability) = engine.durability()
        && !durability.settle_records(Duration::from_secs(10)).await
    {
        eprintln!(
            "mcpflow: warning: run {} was not recorded in the store within 10 s",
            run.id
        );
    }
    store.close().await;
}

/// Prints a run as `serve` would answer it and gives its exit code: 0 for a result (or a
/// waiting handle: the run is not over), 1 for a failure or a result that breaks the tool's
/// `outputSchema` (over MCP that is an error too).
pub fn report(run: &Run, output: Option<&SchemaValidator>, history: bool) -> ExitCode {
    let mut message = run
        .error()
        .map(|e| format!("tool `{}` failed: {e}", run.tool));
    let mut error = run.error().map(|e| json!(e));
    // A run that waits prints its session handle, as a tool call would answer it; the handle
    // is not the tool's result, so the outputSchema does not judge it.
    let result = match run.waiting() {
        Some(w) => Some(w.to_json()),
        None => run.output().map(|v| v.to_json()),
    };
    if run.waiting().is_none()
        && let (Some(validator), Some(value)) = (output, &result)
        && let Err(errors) = validator.check(value)
    {
        let text = format!(
            "tool `{}` produced a result that does not match its outputSchema: {}",
            run.tool,
            errors.join("; ")
        );
        error = Some(json!(text));
        message = Some(text);
    }
    let code = match &message {
        None => ExitCode::SUCCESS,
        Some(e) => {
            eprintln!("mcpflow: {e}");
            ExitCode::FAILURE
        }
    };
    let out = if history {
        let mut o = json!({"result": result, "history": run.history});
        if let Some(e) = &error {
            o["error"] = e.clone();
        }
        o
    } else {
        match result {
            // A result the outputSchema refuses is not printed as if it were the answer.
            Some(v) if error.is_none() => v,
            _ => return code,
        }
    };
    crate::output::json(&out, code)
}
