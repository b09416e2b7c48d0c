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
//! traffic. A non-blocking hook runs after the fact on a spawned task: it can neither change
//! nor delay the traffic and its errors are only logged. A blocking hook that fails (throws,
//! times out, answers something unreadable) rejects the request when `onHookError` is `closed`
//! (the default) and is skipped when it is `open`.

use std::sync::Arc;
use std::time::Duration;

use mcpflow_config::proxy::{Hook, HookMethod, HookPhase, OnHookError};
use mcpflow_engine::Engine;
use mcpflow_sandbox::{Sandbox, Script};
use serde_json::{Map, Value, json};

use crate::error::ServerError;

pub(crate) mod graph;

/// Every configured hook, compiled, in config order.
#[derive(Clone, Default)]
pub struct Hooks {
    hooks: Arc<Vec<Compiled>>,
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
                    let script = Script::compile(&sandbox, &format!("hook:{}", hook.id), source)
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
                let (id, body) = (hook.config.id.clone(), hook.body.clone_handle());
                tokio::spawn(async move {
                    if let Err(e) = body.call(ctx).await {
                        tracing::warn!(hook = %id, error = %e, "non-blocking hook failed");
                    }
                });
                continue;
            }
            let outcome = hook
                .body
                .call(ctx)
                .await
                .and_then(|answer| apply(phase, answer, &mut params, &mut response));
            match outcome {
                Ok(None) => {}
                Ok(Some(message)) => return Verdict::Reject(message),
                Err(e) => match hook.config.on_hook_error.unwrap_or_default() {
                    OnHookError::Closed => {
                        tracing::warn!(hook = %hook.config.id, error = %e, "hook failed; rejecting (onHookError: closed)");
                        return Verdict::Reject(format!("hook `{}` failed: {e}", hook.config.id));
                    }
                    OnHookError::Open => {
                        tracing::warn!(hook = %hook.config.id, error = %e, "hook failed; letting the request through (onHookError: open)");
                    }
                },
            }
        }
        Verdict::Continue(match phase {
            HookPhase::Pre => params,
            HookPhase::Post => response.unwrap_or(Value::Null),
        })
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
    fn clone_handle(&self) -> Body {
        match self {
            Body::Script(s) => Body::Script(s.clone()),
            Body::GraphTool { engine, tool } => Body::GraphTool {
                engine: engine.clone(),
                tool: tool.clone(),
            },
        }
    }

    async fn call(&self, ctx: Value) -> Result<Option<Value>, String> {
        match self {
            Body::Script(script) => {
                let outcome = script.call_with_logs(&ctx).await;
                for line in &outcome.logs {
                    tracing::info!(target: "mcpflow_server::hook", hook = script.name(), level = ?line.level, "{}", line.message);
                }
                outcome.result.map_err(|e| e.to_string())
            }
            Body::GraphTool { engine, tool } => {
                let run = engine.run(tool, ctx).await;
                match run.result {
                    Ok(out) => Ok(Some(out.into_json())),
                    Err(e) => Err(format!("graph tool `{tool}` failed: {e}")),
                }
            }
        }
    }
}
