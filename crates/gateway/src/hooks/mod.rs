//! Hooks: sandboxed JavaScript functions or graph tools run before (`pre`) and after (`post`)
//! proxied `tools/list` and `tools/call` requests, and on this config's own graph tools for
//! hooks that opt in (`appliesTo: graph` or `all`, see [`graph`]).
//!
//! A hook is called with `{request: {method, params}, response?, metadata: {clientId,
//! serverName, toolName, hookId, caller}}` (`caller`: who sent the request, as a graph's
//! expressions read `$caller`; see [`CallerMetadata`]) and answers with one of:
//! - nothing (`undefined` or `null`): the traffic goes on unchanged;
//! - `{reject: "message"}`: the request fails and the client reads the message;
//! - the object it was given, changed: a `pre` hook's `request.params` replace the request's
//!   params, a `post` hook's `response` replaces the response.
//!
//! Hooks that match run in config order, each seeing what the previous one made of the
//! traffic. A non-blocking hook runs after the fact: it can neither change nor delay the traffic
//! and its errors are only logged. Script hooks of that kind run on the sandbox's background
//! worker, apart from the blocking hooks' workers, through a bounded queue; graph-tool hooks of
//! that kind are bounded by [`BACKGROUND_GRAPH_HOOKS`] in flight. When either is full the call
//! is dropped, counted and logged, never queued without limit.
//!
//! # What `onHookError: open` forgives
//! A blocking hook that fails rejects the request when `onHookError` is `closed` (the default).
//! With `open` it is skipped, but only when the failure is the hook's own fault
//! ([`mcpflow_sandbox::Fault::Script`]): it threw, it ran out of its CPU time on a request within
//! the limits, it answered something that is not a verdict, it returned a promise that never
//! settles; for a graph-tool hook, its run failed. Whatever the policy, the request is rejected
//! when the failure is one the request can cause ([`mcpflow_sandbox::Fault::Input`]: the
//! request is too large or too deeply nested to hand to the hook, holds an integer JavaScript
//! cannot hold exactly, or drove the hook out of memory or stack, or its answer past the output
//! cap) or when the sandbox could not run the hook at all ([`mcpflow_sandbox::Fault::Sandbox`]).
//! Otherwise a client could switch a guard off by padding its request.
//!
//! What a script hook writes with `console.*` is logged escaped (`\n`, `\u{1b}`, quotes), so a
//! hook's output cannot start a forged log line; so are its error messages.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use mcpflow_model::proxy::{Hook, HookMethod, HookPhase, OnHookError};
use mcpflow_sandbox::{Fault, Sandbox, SandboxError, Script};
use mcpflow_telemetry::metrics::{self, HookOutcome};
use serde_json::{Map, Value, json};

use crate::error::GatewayError;

mod background;
mod sequence;
pub mod trial;

pub use background::BACKGROUND_GRAPH_HOOKS;
use background::Background;

/// Runs a graph tool of this config for a hook whose body is one (`graphTool:`): the server
/// supplies it over its engine, so the gateway needs no engine of its own.
pub trait ToolRunner: Send + Sync {
    /// Runs `tool` with `input` (the hook's context object) and answers its result, or why
    /// the run failed.
    fn run_tool(&self, tool: &str, input: Value) -> BoxFuture<'static, Result<Value, String>>;
}

/// Every configured hook, compiled, in config order.
#[derive(Clone)]
pub struct Hooks {
    hooks: Arc<Vec<Compiled>>,
    background: Arc<Background>,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks {
            hooks: Arc::default(),
            background: Arc::new(Background::new(None)),
        }
    }
}

/// Why a hook gave no verdict, and whether `onHookError: open` may forgive it.
#[derive(Debug)]
struct Failure {
    message: String,
    fault: Fault,
}

impl Failure {
    fn hook(message: String) -> Self {
        Failure {
            message,
            fault: Fault::Script,
        }
    }
}

impl From<SandboxError> for Failure {
    fn from(e: SandboxError) -> Self {
        Failure {
            fault: e.fault(),
            message: e.to_string(),
        }
    }
}

pub(super) struct Compiled {
    pub(super) config: Hook,
    pub(super) body: Body,
}

pub(super) enum Body {
    Script(Script),
    GraphTool {
        runner: Arc<dyn ToolRunner>,
        tool: String,
    },
}

/// Who sent a request, as hooks read it in `metadata.caller`: the principal's subject, how it
/// was established, key name, scopes and chosen claims (`mcpflow_auth::Principal::to_json`;
/// never a key or a token). The server puts it in the request's extensions; the gateway knows
/// no credentials.
#[derive(Debug, Clone)]
pub struct CallerMetadata(pub Arc<Value>);

/// The caller the server put in `context`'s extensions, if any.
pub(crate) fn caller_in(
    context: &rmcp::service::RequestContext<rmcp::RoleServer>,
) -> Option<&Value> {
    context.extensions.get::<CallerMetadata>().map(|c| &*c.0)
}

/// Traffic as the matcher and the context see it: proxied (with its upstream) or to a graph
/// tool (no upstream).
#[derive(Debug, Clone, Copy)]
pub struct Traffic<'a> {
    method: HookMethod,
    server: Option<&'a str>,
    tool: Option<&'a str>,
    client: Option<&'a str>,
    caller: Option<&'a Value>,
}

impl<'a> Traffic<'a> {
    /// A `tools/list` of upstream `server` (`tool: None`) or a `tools/call` of its tool
    /// `tool` (under the upstream's own name); `client` is the caller's name from its
    /// `initialize`, when it gave one.
    pub fn proxied(
        method: HookMethod,
        server: &'a str,
        tool: Option<&'a str>,
        client: Option<&'a str>,
    ) -> Self {
        Traffic {
            method,
            server: Some(server),
            tool,
            client,
            caller: None,
        }
    }

    /// A `tools/list` of the graph tools (`tool: None`) or a `tools/call` of graph tool `tool`.
    pub fn graph(method: HookMethod, tool: Option<&'a str>, client: Option<&'a str>) -> Self {
        Traffic {
            method,
            server: None,
            tool,
            client,
            caller: None,
        }
    }

    /// The same traffic, sent by `caller` (`metadata.caller`; `null` when `None`).
    pub fn sent_by(self, caller: Option<&'a Value>) -> Self {
        Traffic { caller, ..self }
    }
}

/// What the blocking hooks decided.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Go on with this (possibly rewritten) value: the params for `pre`, the response for `post`.
    Continue(Value),
    /// Stop: the client reads this message.
    Reject(String),
}

impl Hooks {
    /// Compiles every hook's script (once, at load); the ones with `enabled: false` do not run.
    /// `runner` runs graph-tool hooks.
    pub fn new(config: &[Hook], runner: Arc<dyn ToolRunner>) -> Result<Hooks, GatewayError> {
        if config.is_empty() {
            return Ok(Hooks::default());
        }
        let sandbox = Sandbox::new(mcpflow_sandbox::SandboxOptions::default())
            .map_err(|e| GatewayError::Hook(format!("starting the sandbox: {e}")))?;
        let mut hooks = Vec::with_capacity(config.len());
        for hook in config {
            let body = match (&hook.script, &hook.graph_tool) {
                (Some(source), _) => {
                    let script = Script::compile(&sandbox, &script_name(&hook.id), source)
                        .map_err(|e| GatewayError::Hook(format!("hook `{}`: {e}", hook.id)))?;
                    let script = match hook.timeout_ms {
                        Some(ms) => script.with_cpu_time(Duration::from_millis(ms)),
                        None => script,
                    };
                    Body::Script(script)
                }
                (None, Some(tool)) => Body::GraphTool {
                    runner: Arc::clone(&runner),
                    tool: tool.clone(),
                },
                (None, None) => {
                    return Err(GatewayError::Hook(format!(
                        "hook `{}` has neither `script` nor `graphTool`",
                        hook.id
                    )));
                }
            };
            // A disabled hook is compiled all the same (its errors are load errors), then left out.
            if hook.is_enabled() {
                hooks.push(Compiled {
                    config: hook.clone(),
                    body,
                });
            }
        }
        Ok(Hooks {
            hooks: Arc::new(hooks),
            background: Arc::new(Background::new(Some(sandbox))),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether any hook would run for `target` in `phase`: lets callers skip building contexts.
    pub fn any(&self, phase: HookPhase, target: Traffic<'_>) -> bool {
        self.matching(phase, target).next().is_some()
    }

    /// Runs the `pre` hooks on a request's `params`.
    pub async fn pre(&self, target: Traffic<'_>, params: Value) -> Verdict {
        self.run(HookPhase::Pre, target, params, None).await
    }

    /// Runs the `post` hooks on a response, with the request's `params` for context.
    pub async fn post(&self, target: Traffic<'_>, params: &Value, response: Value) -> Verdict {
        self.run(HookPhase::Post, target, params.clone(), Some(response))
            .await
    }

    fn matching<'s, 't>(
        &'s self,
        phase: HookPhase,
        target: Traffic<'t>,
    ) -> impl Iterator<Item = &'s Compiled> + use<'s, 't> {
        self.hooks.iter().filter(move |h| {
            h.config.phase == phase
                && match target.server {
                    Some(server) => h.config.matches(target.method, server, target.tool),
                    None => h.config.matches_graph(target.method, target.tool),
                }
        })
    }

    async fn run(
        &self,
        phase: HookPhase,
        target: Traffic<'_>,
        mut params: Value,
        mut response: Option<Value>,
    ) -> Verdict {
        for hook in self.matching(phase, target) {
            let ctx = context(&target, &hook.config.id, &params, response.as_ref());
            if !hook.config.is_blocking() {
                self.in_background(hook, ctx, stage(phase));
                continue;
            }
            let started = Instant::now();
            let outcome = hook.body.call(ctx).await.and_then(|answer| {
                apply(phase, answer, &mut params, &mut response).map_err(Failure::hook)
            });
            let id = &hook.config.id;
            let counted = match &outcome {
                Ok(Applied::Passed) => HookOutcome::Passed,
                Ok(Applied::Rewrote) => HookOutcome::Rewrote,
                Ok(Applied::Rejected(_)) => HookOutcome::Rejected,
                Err(_) => HookOutcome::Failed,
            };
            metrics::hook(id, stage(phase), counted, Some(started.elapsed()));
            match outcome {
                Ok(Applied::Passed | Applied::Rewrote) => {}
                Ok(Applied::Rejected(message)) => return Verdict::Reject(message),
                Err(e) => {
                    let policy = hook.config.on_hook_error.unwrap_or_default();
                    let error = e.message.escape_debug().to_string();
                    match (policy, e.fault) {
                        (OnHookError::Open, Fault::Script) => {
                            tracing::warn!(hook = %id, %error, "hook failed; letting the request through (onHookError: open)");
                        }
                        (OnHookError::Closed, _) => {
                            tracing::warn!(hook = %id, %error, "hook failed; rejecting (onHookError: closed)");
                            return Verdict::Reject(format!("hook `{id}` failed: {}", e.message));
                        }
                        (OnHookError::Open, fault) => {
                            tracing::warn!(hook = %id, %error, ?fault, "hook failed for a reason the request can cause; rejecting whatever onHookError says");
                            return Verdict::Reject(format!("hook `{id}` failed: {}", e.message));
                        }
                    }
                }
            }
        }
        Verdict::Continue(match phase {
            HookPhase::Pre => params,
            HookPhase::Post => response.unwrap_or(Value::Null),
        })
    }
}

pub(super) fn script_name(id: &str) -> String {
    format!("hook:{id}")
}

/// A script hook's console lines, escaped: a newline in them cannot start a log line of its
/// own, nor an escape sequence reach a terminal.
pub(super) fn log_console(hook: String, lines: &[mcpflow_sandbox::LogLine]) {
    for line in lines {
        let message = line.message.escape_debug();
        tracing::info!(target: "mcpflow_gateway::hook", hook = %hook, level = ?line.level, "console: {message}");
    }
}

/// What a blocking hook's answer did to the traffic.
enum Applied {
    Passed,
    Rewrote,
    Rejected(String),
}

pub(super) fn stage(phase: HookPhase) -> &'static str {
    match phase {
        HookPhase::Pre => "pre",
        HookPhase::Post => "post",
    }
}

/// Takes a blocking hook's answer into the traffic.
fn apply(
    phase: HookPhase,
    answer: Option<Value>,
    params: &mut Value,
    response: &mut Option<Value>,
) -> Result<Applied, String> {
    let answer = match answer {
        None | Some(Value::Null) => return Ok(Applied::Passed),
        Some(Value::Object(answer)) => answer,
        Some(other) => {
            return Err(format!(
                "it returned {}; expected nothing, `{{reject: \"…\"}}` or the context object",
                kind(&other)
            ));
        }
    };
    if let Some(reject) = answer.get("reject") {
        return Ok(Applied::Rejected(match reject {
            Value::String(message) => message.clone(),
            other => other.to_string(),
        }));
    }
    let mut applied = Applied::Passed;
    match phase {
        HookPhase::Pre => {
            if let Some(new) = answer.get("request").and_then(|r| r.get("params")) {
                if !new.is_object() {
                    return Err(format!(
                        "its request.params is {}, not an object",
                        kind(new)
                    ));
                }
                if params != new {
                    *params = new.clone();
                    applied = Applied::Rewrote;
                }
            }
        }
        HookPhase::Post => {
            if let Some(new) = answer.get("response") {
                if !new.is_object() {
                    return Err(format!("its response is {}, not an object", kind(new)));
                }
                if response.as_ref() != Some(new) {
                    *response = Some(new.clone());
                    applied = Applied::Rewrote;
                }
            }
        }
    }
    Ok(applied)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn context(target: &Traffic<'_>, hook: &str, params: &Value, response: Option<&Value>) -> Value {
    let method = match target.method {
        HookMethod::ToolsCall => "tools/call",
        HookMethod::ToolsList => "tools/list",
    };
    let mut ctx = Map::new();
    ctx.insert(
        "request".into(),
        json!({"method": method, "params": params}),
    );
    if let Some(response) = response {
        ctx.insert("response".into(), response.clone());
    }
    ctx.insert(
        "metadata".into(),
        json!({
            "clientId": target.client,
            "serverName": target.server,
            "toolName": target.tool,
            "hookId": hook,
            "caller": target.caller,
        }),
    );
    Value::Object(ctx)
}

impl Body {
    async fn call(&self, ctx: Value) -> Result<Option<Value>, Failure> {
        match self {
            Body::Script(script) => {
                let outcome = script.call_with_logs(&ctx).await;
                log_console(script.name().to_owned(), &outcome.logs);
                outcome.result.map_err(Failure::from)
            }
            Body::GraphTool { runner, tool } => match runner.run_tool(tool, ctx).await {
                Ok(out) => Ok(Some(out)),
                Err(e) => Err(Failure::hook(format!("graph tool `{tool}` failed: {e}"))),
            },
        }
    }
}
