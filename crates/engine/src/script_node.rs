//! The `script` node: a JavaScript function run in `mcpflow_sandbox`, compiled once when the
//! engine is built, called with a fresh runtime per run. Its input is the context (or what its
//! `input.expr` makes of it), its output is what the function returns. A script is pure as far
//! as the engine is concerned (no I/O is reachable from it), so durable runs treat it like a
//! transform.

use mcpflow_config::ScriptNode;
use mcpflow_expr::{Jsonata, Scope, Value};
use mcpflow_sandbox::{LogLevel, LogLine, Sandbox, SandboxError, SandboxOptions, Script};
use serde_json::{Value as Json, json};

use crate::error::{RunError, RunErrorKind};
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

impl ScriptStep {
    pub(crate) fn compile(
        node: &ScriptNode,
        tool: &str,
        next: usize,
        sandboxes: &mut Sandboxes,
    ) -> Result<ScriptStep, String> {
        let text = match (node.text(), &node.file) {
            (Some(text), _) => text,
            (None, Some(file)) => {
                return Err(format!(
                    "the script file `{file}` was not read: configs with `file:` scripts must \
                     be loaded with mcpflow_config::load"
                ));
            }
            (None, None) => return Err("the node has neither `source` nor `file`".into()),
        };
        let options = node.sandbox_options();
        let sandbox = sandboxes
            .for_options(&options)
            .map_err(|e| format!("starting the sandbox: {e}"))?;
        let script = Script::compile(&sandbox, &node.script_name(tool), text)
            .map_err(|e| format!("script: {e}"))?
            .with_cpu_time(options.cpu_time);
        let input = node
            .input
            .as_ref()
            .map(|i| Jsonata::compile(&i.expr).map_err(|e| format!("input.expr: {e}")))
            .transpose()?;
        Ok(ScriptStep {
            script,
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
    /// Runs the script on `argument`. A stop or cancellation abandons the call (the sandbox's
    /// CPU budget ends it on the worker).
    pub(crate) async fn script(
        &self,
        id: &str,
        step: &ScriptStep,
        argument: &Json,
    ) -> Result<Done, Failure> {
        let call = step.script.call_with_logs(argument);
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
                tracing::debug!(node = id, level = ?line.level, "script console: {}", line.message);
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
