//! One script hook tried on a sample request before it is saved (the web UI's hook flow
//! editor): the context object a served hook gets and the same verdict rules ([`super::apply`],
//! `onHookError`), on a sandbox of the trials' own, started at the first trial. What the script
//! writes with `console.*` is handed back instead of logged.

use std::sync::OnceLock;
use std::time::Duration;

use mcpflow_model::proxy::{Hook, HookPhase, OnHookError};
use mcpflow_sandbox::{Fault, LogLine, Sandbox, SandboxError, SandboxOptions, Script};
use serde_json::Value;

use super::{Applied, Traffic, apply, context, script_name};

/// The request a hook is tried on: the upstream and tool it is sent to, its params
/// (`{name, arguments}` for `tools/call`, `{}` for `tools/list`) and, for a `post` hook, the
/// response.
#[derive(Debug, Clone)]
pub struct Sample {
    pub server: String,
    pub tool: Option<String>,
    pub params: Value,
    pub response: Option<Value>,
    /// `metadata.caller`: who tries it.
    pub caller: Option<Value>,
}

/// What the hook made of the sample.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It let the traffic through unchanged.
    Passed,
    /// It let it through changed (see [`Trial::params`] and [`Trial::response`]).
    Rewrote,
    /// It rejected it; the client would read this message.
    Rejected(String),
    /// It failed; `forgiven` when `onHookError: open` lets the request through anyway.
    Failed { message: String, forgiven: bool },
}

/// One trial's result.
#[derive(Debug, Clone)]
pub struct Trial {
    pub outcome: Outcome,
    /// The params after the hook (a `pre` hook's rewrite).
    pub params: Value,
    /// The response after the hook (a `post` hook's rewrite).
    pub response: Option<Value>,
    pub logs: Vec<LogLine>,
    pub cpu_time: Duration,
}

impl Trial {
    /// Whether the request would fail because of this hook. A fire-and-forget hook never
    /// fails one: what it answers is ignored.
    pub fn rejects(&self, hook: &Hook) -> bool {
        hook.is_blocking()
            && match &self.outcome {
                Outcome::Rejected(_) => true,
                Outcome::Failed { forgiven, .. } => !forgiven,
                Outcome::Passed | Outcome::Rewrote => false,
            }
    }
}

/// Why a hook could not be tried at all.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TrialError {
    /// A graph-tool hook: the trial runs scripts.
    #[error(
        "hook `{0}` runs a graph tool; only script hooks are tried here (run the tool itself to try it)"
    )]
    NotAScript(String),
    /// The script does not compile (a syntax error has its line and column).
    #[error("{0}")]
    Compile(SandboxError),
    #[error("the sandbox cannot run the trial: {0}")]
    Sandbox(String),
}

/// The most CPU time one trial's script gets, whatever its `timeoutMs`: a trial answers a
/// person waiting in the editor.
pub const MOST_CPU: Duration = Duration::from_secs(1);

/// Trials share one sandbox, started at the first.
#[derive(Default)]
pub struct Trials {
    sandbox: OnceLock<Sandbox>,
}

impl Trials {
    pub fn new() -> Self {
        Self::default()
    }

    fn sandbox(&self) -> Result<Sandbox, TrialError> {
        if let Some(sandbox) = self.sandbox.get() {
            return Ok(sandbox.clone());
        }
        let started = Sandbox::new(SandboxOptions::default())
            .map_err(|e| TrialError::Sandbox(e.to_string()))?;
        // Two first trials at once each start one; the second is dropped.
        Ok(self.sandbox.get_or_init(|| started).clone())
    }

    /// Runs `hook` (its script, its phase and method) once on `sample`.
    pub async fn run(&self, hook: &Hook, sample: Sample) -> Result<Trial, TrialError> {
        let Some(source) = hook.script.clone() else {
            return Err(TrialError::NotAScript(hook.id.clone()));
        };
        let sandbox = self.sandbox()?;
        let name = script_name(&hook.id);
        // Compiling blocks its thread (it runs on one of its own and joins it).
        let script = tokio::task::spawn_blocking(move || Script::compile(&sandbox, &name, &source))
            .await
            .map_err(|e| TrialError::Sandbox(format!("the compile did not finish: {e}")))?
            .map_err(TrialError::Compile)?;
        let budget = hook
            .timeout_ms
            .map_or(SandboxOptions::default().cpu_time, Duration::from_millis);
        let script = script.with_cpu_time(budget.min(MOST_CPU));
        let traffic = Traffic::proxied(
            hook.method,
            &sample.server,
            sample.tool.as_deref(),
            Some("mcpflow-ui"),
        )
        .sent_by(sample.caller.as_ref());
        let (mut params, mut response) = (sample.params.clone(), sample.response.clone());
        let phase = hook.phase;
        let ctx = context(&traffic, &hook.id, &params, response.as_ref());
        let called = script.call_with_logs(&ctx).await;
        let open = hook.on_hook_error.unwrap_or_default() == OnHookError::Open;
        let outcome = match called.result {
            Ok(answer) => match apply(phase, answer, &mut params, &mut response) {
                Ok(Applied::Passed) => Outcome::Passed,
                Ok(Applied::Rewrote) => Outcome::Rewrote,
                Ok(Applied::Rejected(message)) => Outcome::Rejected(message),
                Err(message) => Outcome::Failed {
                    message: format!("hook `{}` failed: {message}", hook.id),
                    forgiven: open,
                },
            },
            Err(e) => Outcome::Failed {
                forgiven: open && e.fault() == Fault::Script,
                message: format!("hook `{}` failed: {e}", hook.id),
            },
        };
        Ok(Trial {
            outcome,
            params,
            response: match phase {
                HookPhase::Pre => None,
                HookPhase::Post => response,
            },
            logs: called.logs,
            cpu_time: called.cpu_time,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpflow_model::proxy::HookMethod;
    use serde_json::json;

    fn hook(script: &str) -> Hook {
        serde_json::from_value(json!({
            "id": "guard", "method": "tools/call", "phase": "pre", "script": script,
        }))
        .expect("a hook")
    }

    fn sample(text: &str) -> Sample {
        Sample {
            server: "fixture".into(),
            tool: Some("echo_text".into()),
            params: json!({"name": "echo_text", "arguments": {"text": text}}),
            response: None,
            caller: None,
        }
    }

    #[tokio::test]
    async fn a_trial_gives_the_verdict_a_served_hook_would() {
        let trials = Trials::new();
        let guard = hook(
            "(ctx) => { console.log('saw', ctx.metadata.serverName); \
             return ctx.request.params.arguments.text === 'shout' ? {reject: 'no shouting'} : undefined }",
        );
        let trial = trials.run(&guard, sample("shout")).await.expect("tried");
        assert_eq!(trial.outcome, Outcome::Rejected("no shouting".into()));
        assert!(trial.rejects(&guard));
        assert_eq!(trial.logs[0].message, "saw fixture");
        let trial = trials.run(&guard, sample("calm")).await.expect("tried");
        assert_eq!(trial.outcome, Outcome::Passed);
        assert!(!trial.rejects(&guard));

        let rewrite = hook("(ctx) => { ctx.request.params.arguments.text = 'quiet'; return ctx }");
        let trial = trials.run(&rewrite, sample("LOUD")).await.expect("tried");
        assert_eq!(trial.outcome, Outcome::Rewrote);
        assert_eq!(trial.params["arguments"]["text"], "quiet");

        let mut thrower = hook("(ctx) => { throw new Error('boom') }");
        let trial = trials.run(&thrower, sample("x")).await.expect("tried");
        assert!(
            matches!(&trial.outcome, Outcome::Failed { forgiven: false, message } if message.contains("boom"))
        );
        assert!(trial.rejects(&thrower));
        thrower.on_hook_error = Some(OnHookError::Open);
        let trial = trials.run(&thrower, sample("x")).await.expect("tried");
        assert!(!trial.rejects(&thrower), "{trial:?}");
        thrower.blocking = Some(false);
        thrower.on_hook_error = None;
        assert!(
            !trials
                .run(&thrower, sample("x"))
                .await
                .expect("tried")
                .rejects(&thrower)
        );
        assert_eq!(thrower.method, HookMethod::ToolsCall);
    }

    #[tokio::test]
    async fn a_script_that_does_not_compile_says_where() {
        let broken = hook("(ctx) => {\n  return {reject: 'x'\n}");
        match Trials::new().run(&broken, sample("x")).await {
            Err(TrialError::Compile(SandboxError::Syntax { line, .. })) => assert!(line >= 2),
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }
}
