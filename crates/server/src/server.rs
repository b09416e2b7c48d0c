//! [`GraphServer`]: the MCP server of one config. It lists the graph tools (and the session
//! companions and proxied tools), and answers `tools/call`: a graph tool's arguments are
//! checked, its run started with a `RunRequest`, and the run's `RunEnd` matched into the
//! answer ([`Called`]): a result, or the handle of a run that waits. How MCP requests reach it
//! is `handler.rs`; what a call brings besides its arguments, `call_options.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use mcpflow_authoring::Authoring;
use mcpflow_config::{Config, ServerMeta};
use mcpflow_engine::{
    Control, Engine, Graph, Run, RunEnd, RunErrorKind, RunRequest, SchemaValidator, Waiting,
};
use mcpflow_gateway::{Gateway, ToolRunner};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::Value;

use crate::call_options::CallOptions;
use crate::error::ServerError;
use crate::result::tool_result;

/// The MCP server of one config: its graph tools, listed with their schemas and run on call.
#[derive(Clone)]
pub struct GraphServer {
    inner: Arc<Inner>,
}

struct Inner {
    meta: ServerMeta,
    engine: Engine,
    tools: Vec<Tool>,
    by_name: HashMap<String, ToolEntry, crate::Fast>,
    /// `NAME_continue`, `NAME_cancel` and `NAME_status` of the tools that can wait.
    companions: HashMap<String, crate::session::Companion>,
    /// Upstream tools, resources and prompts passed through (`proxy:`), and every hook,
    /// those on graph tools (`appliesTo`) included.
    gateway: Arc<Gateway>,
    /// The built-in authoring tools (`mcpflow_*`), when `--authoring` or `authoring:` asks.
    authoring: Option<Authoring>,
}

struct ToolEntry {
    tool: Tool,
    /// The compiled tool, whose schemas the engine compiled once at load.
    graph: Arc<Graph>,
}

impl GraphServer {
    pub fn new(config: &Config, engine: Engine) -> Result<Self, ServerError> {
        let mut tools = Vec::new();
        let mut by_name = HashMap::default();
        for def in &config.tools {
            let object = |v: &Value, what| match v {
                Value::Object(m) => Ok(Arc::new(m.clone())),
                _ => Err(ServerError::SchemaNotObject {
                    tool: def.name.clone(),
                    what,
                }),
            };
            let mut tool = Tool::new(
                def.name.clone(),
                def.description.clone(),
                object(&def.input_schema, "inputSchema")?,
            );
            if let Some(title) = &def.title {
                tool = tool.with_title(title.clone());
            }
            let graph = engine
                .graph(&def.name)
                .cloned()
                .ok_or_else(|| ServerError::NotCompiled(def.name.clone()))?;
            if let Some(out) = &def.output_schema {
                let declared = object(out, "outputSchema")?;
                // A run that waits answers its handle, which the listed schema must admit.
                let listed = match engine.durability().is_some() && graph.can_wait() {
                    true => Arc::new(crate::session::admitting_handle(&declared)),
                    false => declared,
                };
                tool = tool.with_raw_output_schema(listed);
            }
            if let Some(ann) = &def.annotations {
                tool.annotations = serde_json::from_value(ann.clone()).ok();
            }
            tools.push(tool.clone());
            by_name.insert(def.name.clone(), ToolEntry { tool, graph });
        }
        let companions = crate::session::companions(&engine, &mut tools);
        let runner = Arc::new(EngineTools(engine.clone()));
        let gateway = Gateway::new(config, engine.pool().clone(), runner)?;
        Ok(GraphServer {
            inner: Arc::new(Inner {
                meta: config.server.clone(),
                engine,
                tools,
                by_name,
                companions,
                gateway,
                authoring: None,
            }),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    /// The pass-through side and the hooks (empty when the config proxies nothing).
    pub fn gateway(&self) -> &Gateway {
        &self.inner.gateway
    }

    /// Adds the built-in authoring tools. Fails when a tool of this config is named in their
    /// namespace (`mcpflow_…`), or when the server is already shared (add them first).
    pub fn with_authoring(self, authoring: Authoring) -> Result<Self, ServerError> {
        mcpflow_authoring::check_names(self.inner.tools.iter().map(|t| &*t.name))?;
        let mut inner = Arc::try_unwrap(self.inner).map_err(|_| ServerError::AlreadyShared)?;
        inner.authoring = Some(authoring);
        Ok(GraphServer {
            inner: Arc::new(inner),
        })
    }

    /// At start, once the upstreams answer: no two proxied tools under one name, and, with the
    /// authoring tools, no proxied tool in their namespace (graph tools were checked when they
    /// were added).
    pub async fn check_names(&self) -> Result<(), ServerError> {
        self.gateway().check_names().await?;
        if self.authoring().is_some() {
            let names = self.gateway().listed_names();
            mcpflow_authoring::check_names(names.iter().map(String::as_str))?;
        }
        Ok(())
    }

    pub(crate) fn authoring(&self) -> Option<&Authoring> {
        self.inner.authoring.as_ref()
    }

    pub(crate) fn meta(&self) -> &ServerMeta {
        &self.inner.meta
    }

    /// One of this server's own tools (a graph tool, a companion or a built-in) as listed.
    pub(crate) fn own_tool(&self, name: &str) -> Option<Tool> {
        if let Some(entry) = self.inner.by_name.get(name) {
            return Some(entry.tool.clone());
        }
        if self.inner.companions.contains_key(name) {
            return self.inner.tools.iter().find(|t| t.name == name).cloned();
        }
        self.authoring()?.tool(name)
    }

    /// Whether `name` is one of this server's own tools (a graph tool, a companion or a
    /// built-in authoring tool): never routed to the gateway.
    pub(crate) fn owns(&self, name: &str) -> bool {
        self.inner.by_name.contains_key(name)
            || self.inner.companions.contains_key(name)
            || self.authoring().is_some_and(|a| a.handles(name))
    }

    pub(crate) fn output_validator(&self, tool: &str) -> Option<&SchemaValidator> {
        self.inner
            .by_name
            .get(tool)
            .and_then(|e| e.graph.output_validator())
    }

    /// Validates the arguments and runs the tool: the whole of `tools/call`, without transport.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> Result<CallToolResult, McpError> {
        self.call_with(name, arguments, &CallOptions::default())
            .await
    }

    /// [`GraphServer::call`] with the request's cancellation and progress reporting.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<CallToolResult, McpError> {
        Ok(self
            .call_graph(name, arguments, options)
            .await?
            .into_result())
    }

    /// The error for a call of a tool no one here has: every tool a call can reach (graph
    /// tools, companions, built-ins, then the proxied ones by name), the list cut after
    /// [`NAMES_IN_ERROR`] since a model reads it and a gateway may pass through hundreds.
    /// Only the tools `principal` sees are named: a hidden tool is refused as this same error.
    pub(crate) fn unknown_tool(
        &self,
        name: &str,
        principal: Option<&mcpflow_auth::Principal>,
    ) -> McpError {
        let mut names: Vec<String> = self
            .inner
            .tools
            .iter()
            .map(|t| t.name.to_string())
            .filter(|n| crate::caller::sees(principal, n, false))
            .collect();
        if let Some(authoring) = self.authoring() {
            names.extend(
                authoring
                    .tools()
                    .into_iter()
                    .map(|t| t.name.to_string())
                    .filter(|n| crate::caller::sees(principal, n, true)),
            );
        }
        let mut proxied = self.gateway().listed_names();
        proxied.retain(|n| crate::caller::sees(principal, n, false));
        proxied.sort_unstable();
        names.extend(proxied);
        let mut seen = std::collections::HashSet::new();
        names.retain(|n| seen.insert(n.clone()));
        let message = match names.len() {
            0 => format!("unknown tool `{name}`; this server has no tools"),
            n if n <= NAMES_IN_ERROR => {
                format!(
                    "unknown tool `{name}`; this server has: {}",
                    names.join(", ")
                )
            }
            n => format!(
                "unknown tool `{name}`; this server has: {}, and {} more (`tools/list` lists them all)",
                names[..NAMES_IN_ERROR].join(", "),
                n - NAMES_IN_ERROR
            ),
        };
        McpError::invalid_params(message, None)
    }

    /// A call of a graph tool or a session companion: its answer, or the run that waits.
    pub(crate) async fn call_graph(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<Called, McpError> {
        let Some(entry) = self.inner.by_name.get(name) else {
            if let Some(c) = self.inner.companions.get(name) {
                // Boxed: a companion's future would otherwise size every call's.
                return Ok(Box::pin(self.call_companion(name, c, arguments, options)).await);
            }
            return Err(self.unknown_tool(name, options.principal.as_ref()));
        };
        let args = Value::Object(arguments.unwrap_or_default());
        if let Err(errors) = entry.graph.input_validator().check(&args) {
            // A tool-level error (not a protocol error) so the model reads what to fix.
            return Ok(Called::Answer(CallToolResult::error(vec![
                ContentBlock::text(format!(
                    "invalid arguments for `{name}`: {}",
                    errors.join("; ")
                )),
            ])));
        }
        let control = Control::new();
        let engine = &self.inner.engine;
        let ask = options.asker();
        let run = options
            .drive(&control, |tx| {
                let request = RunRequest::new(name, args)
                    .with_control(control.clone())
                    .with_events(tx)
                    .with_asker(ask)
                    .with_caller(options.caller());
                engine.run(request)
            })
            .await;
        if let Some(e) = run.error()
            && e.kind == RunErrorKind::TooManyRuns
        {
            // Refused before it started: a protocol error, as over HTTP (a 429 there), not
            // a tool result the model would read as the tool's failure.
            tracing::debug!(tool = name, "concurrent runs limit reached");
            return Err(McpError::new(TOO_MANY_RUNS, e.message.clone(), None));
        }
        options.note_run(&run.id);
        if let Some(e) = run.error() {
            tracing::warn!(run = %run.id, tool = name, error = %e, "run failed");
        } else {
            tracing::debug!(run = %run.id, tool = name, nodes = run.history.len(), "run ended");
        }
        Ok(Called::of(run, entry.graph.output_validator()))
    }
}

/// The JSON-RPC error code of a call refused for its caller's runs in flight: in the range
/// JSON-RPC leaves to servers, the one the HTTP refusals of access control use.
pub(crate) const TOO_MANY_RUNS: rmcp::model::ErrorCode = rmcp::model::ErrorCode(-32001);

/// Tool names an unknown tool's error lists before it says "and N more".
const NAMES_IN_ERROR: usize = 50;

/// What a call of a graph tool (or a session companion) produced.
pub(crate) enum Called {
    /// The answer to send: the run's result or error, or why the call was refused.
    Answer(CallToolResult),
    /// The run waits for its client: answered with the session handle, or, for a request that
    /// cannot be asked inline, with an "input required" result.
    Waiting(Box<Waiting>),
}

impl Called {
    /// How `run` is answered.
    pub(crate) fn of(run: Run, output_schema: Option<&SchemaValidator>) -> Called {
        match run.end {
            RunEnd::Waiting(w) => Called::Waiting(w),
            RunEnd::Finished(_) => Called::Answer(tool_result(&run, output_schema)),
        }
    }

    /// The plain tool result: a waiting run answers its session handle.
    pub(crate) fn into_result(self) -> CallToolResult {
        match self {
            Called::Answer(result) => result,
            Called::Waiting(w) => crate::session::waiting_result(&w),
        }
    }
}

/// Graph-tool hooks run on this server's engine.
struct EngineTools(Engine);

impl ToolRunner for EngineTools {
    fn run_tool(&self, tool: &str, input: Value) -> BoxFuture<'static, Result<Value, String>> {
        let (engine, request) = (self.0.clone(), RunRequest::new(tool, input));
        Box::pin(async move {
            match engine.run(request).await.into_result() {
                Ok(out) => Ok(out.into_json()),
                Err(e) => Err(e.to_string()),
            }
        })
    }
}
