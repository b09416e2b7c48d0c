//! The `script` node: a JavaScript function run in `mcpflow_sandbox`, compiled once when the
//! engine is built, called with a fresh runtime per run. Its input is the context (or what its
//! `input.expr` makes of it), its output is what the function returns. A script is pure as far
//! as the engine is concerned (no I/O is reachable from it), so durable runs treat it like a
//! transform.
//!
//! That needs the clock and randomness to be pure too: a durable run that resumes re-runs the
//! script nodes it had not committed yet, and a script that made an idempotency key from
//! `Date.now()` or `Math.random()` must make the same key again, or the upstream sees the same
//! request twice under two keys. So in a durable run a script's `Date.now()`, `new Date()` and
//! `Date()` read the run's start time (the store's `startedAt`; the clock does not move during
//! the run) and `Math.random()` is a sequence seeded from the run id, the node id and the
//! script's input: the same in a resumed run as in the first, on any replica. Runs that are not
//! durable are never replayed and see the real clock.

use std::time::Duration;

use mcpflow_expr::{Jsonata, Scope, Value};
use mcpflow_model::{CompileError, ScriptLimits, ScriptNode, Within};
use mcpflow_sandbox::{
    Determinism, LogLevel, LogLine, Sandbox, SandboxError, SandboxOptions, Script, seed_from,
};
use serde_json::{Value as Json, json};

use crate::compile::Compiler;
use crate::error::{RunError, RunErrorKind};
use crate::graph::NodeSite;
use crate::run::{Done, Executor, Failure};

/// A compiled script node.
#[derive(Debug)]
pub(crate) struct ScriptStep {
    script: Script,
    /// `input.expr`; without it the function gets the whole context.
    input: Option<Jsonata>,
    pub(crate) next: usize,
}

/// The sandboxes of one engine, started when the first script node is compiled. The memory cap
/// belongs to a sandbox (the CPU budget to each script), so nodes share one sandbox per distinct
/// `limits.memoryBytes`: a config without custom limits has exactly one, whose worker threads
/// serve every script node of every tool.
#[derive(Default)]
pub(crate) struct Sandboxes {
    started: Vec<Sandbox>,
}

impl Sandboxes {
    fn for_options(&mut self, options: &SandboxOptions) -> Result<Sandbox, SandboxError> {
        let memory = options.memory_limit_bytes;
        if let Some(s) = self
            .started
            .iter()
            .find(|s| s.options().memory_limit_bytes == memory)
        {
            return Ok(s.clone());
        }
        let sandbox = Sandbox::new(options.clone())?;
        self.started.push(sandbox.clone());
        Ok(sandbox)
    }
}

/// The sandbox options a script runs under: the defaults with its node's limits.
fn sandbox_options(node: &ScriptNode) -> SandboxOptions {
    let mut options = SandboxOptions::default();
    let limits = node.limits.unwrap_or(ScriptLimits {
        memory_bytes: None,
        cpu_ms: None,
    });
    if let Some(bytes) = limits.memory_bytes {
        options.memory_limit_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    }
    if let Some(ms) = limits.cpu_ms {
        options.cpu_time = Duration::from_millis(ms);
    }
    options
}

impl ScriptStep {
    /// Compiles the script (its text is `source`, or the `file` its loader read) and its
    /// `input.expr`. A syntax error is placed at its line and column: inside `source`, or in the
    /// file.
    pub(crate) fn compile(
        node: &ScriptNode,
        site: &NodeSite<'_>,
        next: usize,
        c: &mut Compiler<'_>,
    ) -> Option<ScriptStep> {
        let ptr = &site.ptr;
        let input = node
            .input
            .as_ref()
            .map(|i| c.jsonata(&format!("{ptr}/input/expr"), &i.expr, &node.id));
        let (text, at) = match (&node.source, &node.file, node.text()) {
            (Some(source), None, _) => (source.as_str(), format!("{ptr}/source")),
            (None, Some(_), Some(text)) => (text, format!("{ptr}/file")),
            // Checking a broken config: its loader said why the file was not read.
            (None, Some(_), None) if c.sandboxes.is_none() => return None,
            (None, Some(file), None) => {
                c.push(CompileError::new(
                    format!("{ptr}/file"),
                    format!(
                        "the script file `{file}` of node \"{}\" was not read: configs with \
                         `file:` scripts must be loaded with mcpflow_config",
                        node.id
                    ),
                ));
                return None;
            }
            // Its loader reports a node with both or neither.
            _ => return None,
        };
        let options = sandbox_options(node);
        let name = node.script_name(site.tool);
        let compiled = match c.sandboxes.as_deref_mut() {
            Some(sandboxes) => sandboxes
                .for_options(&options)
                .and_then(|sandbox| Script::compile(&sandbox, &name, text))
                .map(Some),
            None => Script::check(&options, &name, text).map(|()| None),
        };
        let script = match compiled {
            Ok(script) => script?,
            Err(e) => {
                c.push(script_compile_error(node, at, text, &name, &e));
                return None;
            }
        };
        // A bad `input.expr` is reported, and the script still checked.
        let input = match input {
            Some(None) => return None,
            Some(Some(expr)) => Some(expr),
            None => None,
        };
        Some(ScriptStep {
            script: script.with_cpu_time(options.cpu_time),
            input,
            next,
        })
    }

    /// The function's argument, and whether it is worth recording: an `input.expr` result is;
    /// the whole context is not copied into the record, since `History::context_at` gives it.
    pub(crate) fn argument(&self, scope: &Scope<'_>, id: &str) -> Result<(Json, bool), RunError> {
        match &self.input {
            Some(expr) => {
                let v = expr
                    .evaluate(scope)
                    .map_err(|e| RunError::expression(id, e))?;
                Ok((v.map_or(Json::Null, Value::into_json), true))
            }
            None => Ok((scope.context.to_json(), false)),
        }
    }
}

impl Executor<'_> {
    /// Runs the script on `argument`. A stop or cancellation drops the call, which stops the
    /// script on its worker at its next interrupt check.
    pub(crate) async fn script(
        &self,
        id: &str,
        step: &ScriptStep,
        argument: &Json,
    ) -> Result<Done, Failure> {
        let fixed = match self.shared.durable {
            Some(durable) => Some(
                fixed_clock(durable, id, argument)
                    .await
                    .map_err(|e| RunError::new(RunErrorKind::Script, Some(id), e))?,
            ),
            None => None,
        };
        // Dropping the call (on stop or cancellation) stops the script on its worker.
        let call = async {
            match fixed {
                Some(fixed) => step.script.call_deterministic(argument, fixed).await,
                None => step.script.call_with_logs(argument).await,
            }
        };
        let outcome = tokio::select! {
            outcome = call => outcome,
            () = self.shared.control.cancelled().cancelled() => {
                return Err(self.stop_error(id).into());
            }
        };
        let logs = log_lines(id, outcome.logs);
        match outcome.result {
            Ok(out) => {
                let mut done = Done::plain(out.map(Value::from_json), Some(step.next));
                done.logs = logs;
                Ok(done)
            }
            Err(e) => Err(script_error(id, e, logs).into()),
        }
    }
}

/// The clock and seed of a script call in a durable run (see the module docs).
async fn fixed_clock(
    durable: &crate::durable::DurableRun,
    id: &str,
    argument: &Json,
) -> Result<Determinism, String> {
    let started_at = durable
        .started_at
        .get_or_try_init(|| async {
            let run = durable.durability.store.get_run(&durable.run_id).await;
            run.map(|run| run.summary.started_at as f64)
        })
        .await
        .map_err(|e| format!("cannot read the run's start time for the script's clock: {e}"))?;
    let input = serde_json::to_vec(argument).map_err(|e| e.to_string())?;
    Ok(Determinism {
        now_ms: *started_at,
        seed: seed_from(&[durable.run_id.as_bytes(), id.as_bytes(), &input]),
    })
}

const HINT: &str = "a script is an expression that evaluates to a function, like \
                    `(input) => ({total: input.entry.n * 2})`, or a module with \
                    `export default function (input) {...}`";

/// A script that does not compile, at its place: a syntax error inside an inline `source`
/// (`at` ends in `/source`) or at its line of the `file`.
fn script_compile_error(
    node: &ScriptNode,
    at: String,
    text: &str,
    name: &str,
    e: &SandboxError,
) -> CompileError {
    let id = &node.id;
    let in_file = node.source.is_none();
    if node.loaded.as_ref().is_some_and(|f| !f.inside_config_dir) {
        // A file outside the config's directory (`fileOutsideConfigDir`) is named, never
        // quoted: neither its lines nor the parser's message (which quotes tokens) are shown.
        let message = match e {
            SandboxError::Syntax { line, column, .. } => {
                format!("syntax error in the script of node \"{id}\" at {name}:{line}:{column}")
            }
            _ => format!("the script of node \"{id}\" in {name} cannot be used"),
        };
        return CompileError::new(at, message).hint(HINT);
    }
    let error = match e {
        SandboxError::Syntax {
            message,
            line,
            column,
            ..
        } => CompileError::new(
            at,
            format!("syntax error in the script of node \"{id}\": {message}"),
        )
        .within(if in_file {
            Within::FileLine {
                line: *line,
                col: *column,
            }
        } else {
            Within::Offset(char_offset(text, *line, *column))
        }),
        other if in_file => CompileError::new(
            at,
            format!("the script of node \"{id}\" cannot be used: {other} (in {name})"),
        ),
        other => CompileError::new(
            at,
            format!("the script of node \"{id}\" cannot be used: {other}"),
        ),
    };
    error.hint(HINT)
}

/// The character offset of 1-based `line`:`column` (counted in characters) in `text`.
pub(crate) fn char_offset(text: &str, line: u32, column: u32) -> usize {
    let before: usize = text
        .split('\n')
        .take(line.saturating_sub(1) as usize)
        .map(|l| l.chars().count() + 1)
        .sum();
    before + column.saturating_sub(1) as usize
}

/// The console lines as the record keeps them (`warn: …` for levels other than `log`), each
/// also logged at debug level.
fn log_lines(id: &str, lines: Vec<LogLine>) -> Option<Vec<String>> {
    if lines.is_empty() {
        return None;
    }
    Some(
        lines
            .into_iter()
            .map(|line| {
                // Escaped: a newline in a script's output cannot forge a log line.
                let message = line.message.escape_debug();
                tracing::debug!(node = id, level = ?line.level, "script console: {message}");
                let level = match line.level {
                    LogLevel::Log => return line.message,
                    LogLevel::Debug => "debug",
                    LogLevel::Info => "info",
                    LogLevel::Warn => "warn",
                    LogLevel::Error => "error",
                };
                format!("{level}: {}", line.message)
            })
            .collect(),
    )
}

/// A failed call as a node failure: the sandbox's message, and as details what the script
/// threw (when it is data), its stack and its console lines, which `onError` handlers see.
fn script_error(id: &str, e: SandboxError, logs: Option<Vec<String>>) -> RunError {
    let mut details = serde_json::Map::new();
    if let SandboxError::Thrown { value, stack, .. } = &e {
        if let Some(v) = value {
            details.insert("thrown".into(), v.clone());
        }
        if let Some(s) = stack {
            details.insert("stack".into(), json!(s));
        }
    }
    if let Some(logs) = logs {
        details.insert("logs".into(), json!(logs));
    }
    let mut err = RunError::new(RunErrorKind::Script, Some(id), e.to_string());
    if !details.is_empty() {
        err.details = Some(Box::new(Json::Object(details)));
    }
    err
}

#[cfg(test)]
mod tests {
    use super::char_offset;

    #[test]
    fn offsets_count_characters_across_lines() {
        let text = "é => {\n  x y\n}";
        assert_eq!(char_offset(text, 1, 1), 0);
        assert_eq!(char_offset(text, 2, 5), 11);
        assert_eq!(text.chars().nth(11), Some('y'));
    }
}
