//! Hooks: sandboxed JavaScript functions or graph tools run before (`pre`) and after (`post`)
//! proxied `tools/list` and `tools/call` requests, and on this config's own graph tools for
//! hooks that opt in (`appliesTo: graph` or `all`, see [`graph`]).
//!
//! A hook is called with `{request: {method, params}, response?, metadata: {clientId,
//! serverName, toolName, hookId}}` and answers with one of:
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcpflow_config::proxy::{Hook, HookMethod, HookPhase, OnHookError};
use mcpflow_engine::Engine;
use mcpflow_sandbox::{Fault, Sandbox, SandboxError, Script};
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use crate::error::ServerError;

pub(crate) mod graph;

/// Non-blocking graph-tool hooks running at once; more are dropped (and counted).
pub const BACKGROUND_GRAPH_HOOKS: usize = 64;

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

/// What bounds the non-blocking hooks, and what they dropped.
struct Background {
    sandbox: Option<Sandbox>,
    graph_slots: Arc<Semaphore>,
    graph_dropped: AtomicU64,
}

impl Background {
    fn new(sandbox: Option<Sandbox>) -> Self {
        Background {
            sandbox,
            graph_slots: Arc::new(Semaphore::new(BACKGROUND_GRAPH_HOOKS)),
            graph_dropped: AtomicU64::new(0),
        }
    }

    /// Non-blocking hook calls dropped so far because their queue was full.
    fn dropped(&self) -> u64 {
        let scripts = self.sandbox.as_ref().map_or(0, Sandbox::background_dropped);
        scripts + self.graph_dropped.load(Ordering::Relaxed)
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

struct Compiled {
    config: Hook,
    body: Body,
}

enum Body {
    Script(Script),
    GraphTool { engine: Engine, tool: String },
}

/// Where proxied traffic a hook sees is going.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub method: HookMethod,
    /// The upstream's name.
    pub server: &'a str,
    /// The tool's name as the upstream knows it (`tools/call` only).
    pub tool: Option<&'a str>,
    /// The calling client's name from its `initialize`, when it gave one.
    pub client: Option<&'a str>,
}

/// Traffic as the matcher and the context see it: proxied (with its upstream) or to a graph
/// tool (no upstream).
#[derive(Debug, Clone, Copy)]
pub struct Traffic<'a> {
    method: HookMethod,
    server: Option<&'a str>,
    tool: Option<&'a str>,
    client: Option<&'a str>,
}

impl<'a> From<&Target<'a>> for Traffic<'a> {
    fn from(t: &Target<'a>) -> Self {
        Traffic {
            method: t.method,
            server: Some(t.server),
            tool: t.tool,
            client: t.client,
        }
    }
}

impl<'a> Traffic<'a> {
    /// A `tools/list` of the graph tools (`tool: None`) or a `tools/call` of graph tool `tool`.
    pub(crate) fn graph(
        method: HookMethod,
        tool: Option<&'a str>,
        client: Option<&'a str>,
    ) -> Self {
        Traffic {
            method,
            server: None,
            tool,
            client,
        }
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
    /// Compiles every hook's script (once, at load). `engine` runs graph-tool hooks.
    pub fn new(config: &[Hook], engine: &Engine) -> Result<Hooks, ServerError> {
        if config.is_empty() {
            return Ok(Hooks::default());
        }
        let sandbox = Sandbox::new(mcpflow_sandbox::SandboxOptions::default())
            .map_err(|e| ServerError::Hook(format!("starting the sandbox: {e}")))?;
        let mut hooks = Vec::with_capacity(config.len());
        for hook in config {
            let body = match (&hook.script, &hook.graph_tool) {
                (Some(source), _) => {
                    let script = Script::compile(&sandbox, &script_name(&hook.id), source)
                        .map_err(|e| ServerError::Hook(format!("hook `{}`: {e}", hook.id)))?;
                    let script = match hook.timeout_ms {
                        Some(ms) => script.with_cpu_time(Duration::from_millis(ms)),
                        None => script,
                    };
                    Body::Script(script)
                }
                (None, Some(tool)) => Body::GraphTool {
                    engine: engine.clone(),
                    tool: tool.clone(),
                },
                (None, None) => {
                    return Err(ServerError::Hook(format!(
                        "hook `{}` has neither `script` nor `graphTool`",
                        hook.id
                    )));
                }
            };
            hooks.push(Compiled {
                config: hook.clone(),
                body,
            });
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
    pub fn any<'a>(&self, phase: HookPhase, target: impl Into<Traffic<'a>>) -> bool {
        self.matching(phase, target.into()).next().is_some()
    }

    /// Runs the `pre` hooks on a request's `params`.
    pub async fn pre<'a>(&self, target: impl Into<Traffic<'a>>, params: Value) -> Verdict {
        self.run(HookPhase::Pre, target.into(), params, None).await
    }

    /// Runs the `post` hooks on a response, with the request's `params` for context.
    pub async fn post<'a>(
        &self,
        target: impl Into<Traffic<'a>>,
        params: &Value,
        response: Value,
    ) -> Verdict {
        self.run(
            HookPhase::Post,
            target.into(),
            params.clone(),
            Some(response),
        )
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
                self.in_background(hook, ctx);
                continue;
            }
            let outcome = hook.body.call(ctx).await.and_then(|answer| {
                apply(phase, answer, &mut params, &mut response).map_err(Failure::hook)
            });
            let id = &hook.config.id;
            match outcome {
                Ok(None) => {}
                Ok(Some(message)) => return Verdict::Reject(message),
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

impl Hooks {
    /// Starts a non-blocking hook on its bounded queue, or drops it (counted, logged) when the
    /// queue is full. Its answer is ignored and its failure only logged.
    fn in_background(&self, hook: &Compiled, ctx: Value) {
        let id = hook.config.id.clone();
        match &hook.body {
            Body::Script(script) => {
                let call = script.call_in_background(&ctx);
                let background = Arc::clone(&self.background);
                tokio::spawn(async move {
                    let outcome = call.await;
                    log_console(script_name(&id), &outcome.logs);
                    match outcome.result {
                        Err(SandboxError::Busy { queued }) => {
                            let dropped = background.dropped();
                            tracing::warn!(hook = %id, queued, dropped, "non-blocking hook dropped: its background queue is full");
                        }
                        Err(e) => {
                            let error = e.to_string().escape_debug().to_string();
                            tracing::warn!(hook = %id, %error, "non-blocking hook failed");
                        }
                        Ok(_) => {}
                    }
                });
            }
            Body::GraphTool { engine, tool } => {
                let Ok(slot) = Arc::clone(&self.background.graph_slots).try_acquire_owned() else {
                    self.background
                        .graph_dropped
                        .fetch_add(1, Ordering::Relaxed);
                    let dropped = self.background.dropped();
                    tracing::warn!(hook = %id, in_flight = BACKGROUND_GRAPH_HOOKS, dropped, "non-blocking hook dropped: too many running");
                    return;
                };
                let (engine, tool) = (engine.clone(), tool.clone());
                tokio::spawn(async move {
                    let run = engine
                        .run(mcpflow_engine::RunRequest::new(tool.as_str(), ctx))
                        .await;
                    drop(slot);
                    if let Err(e) = run.into_result() {
                        let error = e.to_string().escape_debug().to_string();
                        tracing::warn!(hook = %id, %error, "non-blocking hook failed");
                    }
                });
            }
        }
    }
}

fn script_name(id: &str) -> String {
    format!("hook:{id}")
}

/// A script hook's console lines, escaped: a newline in them cannot start a log line of its
/// own, nor an escape sequence reach a terminal.
fn log_console(hook: String, lines: &[mcpflow_sandbox::LogLine]) {
    for line in lines {
        let message = line.message.escape_debug();
        tracing::info!(target: "mcpflow_server::hook", hook = %hook, level = ?line.level, "console: {message}");
    }
}

/// Takes a blocking hook's answer into the traffic; `Some(message)` when it rejects.
fn apply(
    phase: HookPhase,
    answer: Option<Value>,
    params: &mut Value,
    response: &mut Option<Value>,
) -> Result<Option<String>, String> {
    let answer = match answer {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(answer)) => answer,
        Some(other) => {
            return Err(format!(
                "it returned {}; expected nothing, `{{reject: \"…\"}}` or the context object",
                kind(&other)
            ));
        }
    };
    if let Some(reject) = answer.get("reject") {
        return Ok(Some(match reject {
            Value::String(message) => message.clone(),
            other => other.to_string(),
        }));
    }
    match phase {
        HookPhase::Pre => {
            if let Some(new) = answer.get("request").and_then(|r| r.get("params")) {
                if !new.is_object() {
                    return Err(format!(
                        "its request.params is {}, not an object",
                        kind(new)
                    ));
                }
                *params = new.clone();
            }
        }
        HookPhase::Post => {
            if let Some(new) = answer.get("response") {
                if !new.is_object() {
                    return Err(format!("its response is {}, not an object", kind(new)));
                }
                *response = Some(new.clone());
            }
        }
    }
    Ok(None)
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
            Body::GraphTool { engine, tool } => {
                let run = engine
                    .run(mcpflow_engine::RunRequest::new(tool.as_str(), ctx))
                    .await;
                match run.into_result() {
                    Ok(out) => Ok(Some(out.into_json())),
                    Err(e) => Err(Failure::hook(format!("graph tool `{tool}` failed: {e}"))),
                }
            }
        }
    }
}
