//! [`GraphServer`]: the MCP server of one config. It lists the graph tools (and the session
//! companions and proxied tools), and answers `tools/call`: a graph tool's arguments are
//! checked, its run started with a `RunRequest`, and the run's `RunEnd` matched into the
//! answer ([`Called`]): a result, or the handle of a run that waits.

use std::collections::HashMap;
use std::sync::Arc;

use mcpflow_config::{Config, ServerMeta};
use mcpflow_engine::{Control, Engine, Event, Run, RunEnd, RunRequest, Waiting};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::args::ArgsValidator;
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
    by_name: HashMap<String, ToolEntry>,
    /// `NAME_continue`, `NAME_cancel` and `NAME_status` of the tools that can wait.
    companions: HashMap<String, crate::session::Companion>,
    /// Upstream tools, resources and prompts passed through (`proxy:`), with their hooks.
    proxy: Option<Arc<crate::proxy::Proxy>>,
    /// The same hooks, for those that opted in to graph tools (`appliesTo`).
    hooks: crate::hooks::Hooks,
}

struct ToolEntry {
    tool: Tool,
    input: ArgsValidator,
    output: Option<ArgsValidator>,
}

impl GraphServer {
    pub fn new(config: &Config, engine: Engine) -> Result<Self, ServerError> {
        let mut tools = Vec::new();
        let mut by_name = HashMap::new();
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
            if let Some(out) = &def.output_schema {
                tool = tool.with_raw_output_schema(object(out, "outputSchema")?);
            }
            if let Some(ann) = &def.annotations {
                tool.annotations = serde_json::from_value(ann.clone()).ok();
            }
            let input = ArgsValidator::new(&def.input_schema).map_err(|message| {
                ServerError::BadInputSchema {
                    tool: def.name.clone(),
                    message,
                }
            })?;
            let output = def
                .output_schema
                .as_ref()
                .map(ArgsValidator::new)
                .transpose()
                .map_err(|message| ServerError::BadOutputSchema {
                    tool: def.name.clone(),
                    message,
                })?;
            tools.push(tool.clone());
            by_name.insert(
                def.name.clone(),
                ToolEntry {
                    tool,
                    input,
                    output,
                },
            );
        }
        let companions = crate::session::companions(&engine, &mut tools);
        let hooks = crate::hooks::Hooks::new(&config.hooks, &engine)?;
        let proxy = crate::proxy::Proxy::new(config, engine.pool().clone(), hooks.clone())?;
        Ok(GraphServer {
            inner: Arc::new(Inner {
                meta: config.server.clone(),
                engine,
                tools,
                by_name,
                companions,
                proxy,
                hooks,
            }),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    /// The pass-through side, when the config has `proxy:`.
    pub fn proxy(&self) -> Option<&Arc<crate::proxy::Proxy>> {
        self.inner.proxy.as_ref()
    }

    pub(crate) fn output_validator(&self, tool: &str) -> Option<&ArgsValidator> {
        self.inner.by_name.get(tool).and_then(|e| e.output.as_ref())
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

    /// A call of a graph tool or a session companion: its answer, or the run that waits.
    pub(crate) async fn call_graph(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<Called, McpError> {
        let Some(entry) = self.inner.by_name.get(name) else {
            if let Some(c) = self.inner.companions.get(name) {
                return Ok(self.call_companion(name, c, arguments, options).await);
            }
            let known: Vec<&str> = self.inner.tools.iter().map(|t| &*t.name).collect();
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool `{name}`; this server has: {}",
                    known.join(", ")
                ),
                None,
            ));
        };
        let args = Value::Object(arguments.unwrap_or_default());
        if let Err(errors) = entry.input.check(&args) {
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
                    .with_asker(ask);
                engine.run(request)
            })
            .await;
        if let Some(e) = run.error() {
            tracing::warn!(run = %run.id, tool = name, error = %e, "run failed");
        } else {
            tracing::debug!(run = %run.id, tool = name, nodes = run.history.len(), "run ended");
        }
        Ok(Called::of(run, entry.output.as_ref()))
    }
}

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
    pub(crate) fn of(run: Run, output_schema: Option<&ArgsValidator>) -> Called {
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

/// What a `tools/call` request brings besides its arguments.
#[derive(Default)]
pub struct CallOptions {
    /// Cancelled when the client cancels the request; the run stops and is recorded as
    /// cancelled, and its in-flight upstream calls are cancelled in turn.
    pub cancel: Option<CancellationToken>,
    /// Where to send `notifications/progress`: one per finished node (progress = nodes
    /// finished so far, message = the node id) for the first 100, then at most ten a second.
    pub progress: Option<(Peer<RoleServer>, ProgressToken)>,
    /// The client, to ask it for input inline (await nodes with `mode: elicit` or `auto`).
    pub peer: Option<Peer<RoleServer>>,
    /// A 2026-07-28 request: await nodes ask through an "input required" result instead.
    pub(crate) deferred: Option<Arc<crate::session_input::DeferredAsk>>,
}

impl CallOptions {
    /// Drives a run (started by `start` with the progress sender, if the client asked for
    /// progress) under this call's cancellation, forwarding its events as progress
    /// notifications until it ends. The sender lives inside the run's future, so the channel
    /// closes, and forwarding stops, when the run does.
    pub(crate) async fn drive<T, Fut>(
        &self,
        control: &Control,
        start: impl FnOnce(Option<broadcast::Sender<Event>>) -> Fut,
    ) -> T
    where
        Fut: Future<Output = T>,
    {
        let (tx, rx) = match &self.progress {
            Some(_) => {
                let (tx, rx) = broadcast::channel(1024);
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let runner = async {
            let run = start(tx);
            tokio::pin!(run);
            match &self.cancel {
                Some(ct) => tokio::select! {
                    run = &mut run => run,
                    () = ct.cancelled() => {
                        control.cancel();
                        run.await
                    }
                },
                None => run.await,
            }
        };
        let report = async {
            if let (Some((peer, token)), Some(rx)) = (&self.progress, rx) {
                forward_progress(rx, peer, token).await;
            }
        };
        let (run, ()) = tokio::join!(runner, report);
        run
    }
}

/// Every node's progress is reported for the first this many notifications…
const PROGRESS_EVERY_NODE: u32 = 100;
/// …then at most one per this interval.
const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

pub(crate) async fn forward_progress(
    mut rx: broadcast::Receiver<Event>,
    peer: &Peer<RoleServer>,
    token: &ProgressToken,
) {
    let mut done = 0u64;
    // Progress must grow with every notification: an upstream's progress on the node in flight
    // is reported as a fraction between the nodes done so far and the next one.
    let mut last = 0.0f64;
    let mut sent = 0u32;
    let mut last_sent = std::time::Instant::now();
    loop {
        let (progress, message) = match rx.recv().await {
            Ok(Event::NodeFinished { record }) => {
                done += 1;
                (done as f64, record.node_id.to_string())
            }
            Ok(Event::UpstreamProgress {
                node_id,
                progress,
                total,
                message,
            }) => {
                let fraction = match total {
                    Some(t) if t > 0.0 => (progress / t).clamp(0.0, 0.99),
                    _ => 0.5,
                };
                let text = match message {
                    Some(m) => format!("{node_id}: {m}"),
                    None => format!("{node_id}: {progress}"),
                };
                (done as f64 + fraction, text)
            }
            // Nodes whose events were missed still finished: count them, report the next one.
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                done += missed;
                continue;
            }
            Ok(_) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if progress <= last {
            continue;
        }
        // A long loop finishes hundreds of thousands of nodes a second: after the first few,
        // report at most a few times a second rather than flood the client.
        let now = std::time::Instant::now();
        if sent >= PROGRESS_EVERY_NODE && now.duration_since(last_sent) < PROGRESS_INTERVAL {
            continue;
        }
        sent += 1;
        last_sent = now;
        last = progress;
        let param = ProgressNotificationParam::new(token.clone(), progress).with_message(message);
        if peer.notify_progress(param).await.is_err() {
            return;
        }
    }
}

impl ServerHandler for GraphServer {
    fn get_info(&self) -> ServerConfig {
        let meta = &self.inner.meta;
        let mut implementation = Implementation::new(meta.name.clone(), meta.version.clone());
        implementation.title = Some(meta.display_title().to_owned());
        let mut info = ServerConfig::new(crate::proxy::capabilities(self.inner.proxy.as_deref()))
            .with_server_info(implementation);
        if let Some(instructions) = &meta.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let client = crate::hooks::graph::client_name(&context.peer);
        // Boxed, like every handler here that awaits hooks or upstreams (see call_tool).
        let mut tools = Box::pin(
            (self.inner.hooks).list_graph_tools(client.as_deref(), self.inner.tools.clone()),
        )
        .await;
        if let Some(proxy) = &self.inner.proxy {
            tools.extend(Box::pin(proxy.tools(&context)).await);
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner
            .by_name
            .get(name)
            .map(|e| e.tool.clone())
            .or_else(|| {
                self.inner.companions.contains_key(name).then_some(())?;
                self.inner.tools.iter().find(|t| t.name == name).cloned()
            })
            .or_else(|| self.inner.proxy.as_ref()?.listed_tool(name))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let options = CallOptions {
            cancel: Some(context.ct.clone()),
            progress: context
                .meta
                .get_progress_token()
                .map(|token| (context.peer.clone(), token)),
            peer: Some(context.peer.clone()),
            deferred: crate::session_input::deferred_ask(&context),
        };
        if let Some(proxy) = &self.inner.proxy
            && !self.inner.by_name.contains_key(&*request.name)
            && !self.inner.companions.contains_key(&*request.name)
            && let Some(exposed) = proxy.route(&request.name).await
        {
            let era = crate::proxy::Era::of_call(&request, &context);
            // Both branches are boxed: rmcp spawns a task per request around this future, and
            // unboxed it would carry the proxy's and the engine's state (tens of KB, copied on
            // every spawn) for every request, whichever branch it takes.
            return Box::pin(proxy.call(&exposed, request.arguments, era.as_ref(), &context)).await;
        }
        let (name, client) = (
            request.name.clone(),
            crate::hooks::graph::client_name(&context.peer),
        );
        let (hooks, options) = (&self.inner.hooks, &options);
        let arguments = request.arguments.clone();
        let mut request = request;
        Box::pin(hooks.call_graph_tool(
            &name,
            client.as_deref(),
            arguments,
            |arguments| async move {
                request.arguments = arguments;
                if let Some(response) = self.resume(&request, options).await {
                    return Ok(response);
                }
                let called = self
                    .call_graph(&request.name, request.arguments, options)
                    .await?;
                Ok(crate::session_input::respond(
                    called,
                    options.deferred.as_deref(),
                ))
            },
        ))
        .await
    }
    // Pass-through of proxied upstreams' resources and prompts (crate::proxy).
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        if let Some(proxy) = &self.inner.proxy {
            proxy.register_client(context.peer);
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        self.offers(Offer::Resources)?;
        Ok(Box::pin(crate::proxy::list_resources(self.inner.proxy.as_deref())).await)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        self.offers(Offer::Resources)?;
        Ok(Box::pin(crate::proxy::list_resource_templates(
            self.inner.proxy.as_deref(),
        ))
        .await)
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        self.offers(Offer::Resources)?;
        let era = crate::proxy::Era::of(&context);
        Box::pin(crate::proxy::read_resource(
            self.inner.proxy.as_deref(),
            request,
            era.as_ref(),
        ))
        .await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        self.offers(Offer::Completions)?;
        Box::pin(crate::proxy::complete(self.inner.proxy.as_deref(), request)).await
    }

    #[expect(deprecated, reason = "clients on 2025-11-25 still set a log level")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Box::pin(crate::proxy::set_level(
            self.inner.proxy.as_deref(),
            request,
        ))
        .await
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.offers(Offer::Resources)?;
        Box::pin(crate::proxy::subscription(
            self.inner.proxy.as_deref(),
            request.uri,
            true,
        ))
        .await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.offers(Offer::Resources)?;
        Box::pin(crate::proxy::subscription(
            self.inner.proxy.as_deref(),
            request.uri,
            false,
        ))
        .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        self.offers(Offer::Prompts)?;
        Ok(Box::pin(crate::proxy::list_prompts(self.inner.proxy.as_deref())).await)
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        self.offers(Offer::Prompts)?;
        let era = crate::proxy::Era::of(&context);
        Box::pin(crate::proxy::get_prompt(
            self.inner.proxy.as_deref(),
            request,
            era.as_ref(),
        ))
        .await
    }

    // 2026-07-28 list changes: the proxied upstreams' tool list changes, re-announced.
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        let proxy = self.inner.proxy.as_ref()?;
        Some(proxy.subscription_filter(requested))
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        match &self.inner.proxy {
            Some(proxy) => Box::pin(proxy.listen(context)).await,
            None => {
                context.cancelled().await;
                Ok(())
            }
        }
    }
}

/// A family of methods [`ServerHandler::get_info`] declares only with a proxy that passes it.
#[derive(Clone, Copy)]
enum Offer {
    Resources,
    Prompts,
    Completions,
}

impl GraphServer {
    /// Refuses, as method not found, a method of a capability this server does not declare:
    /// it answers exactly what `get_info` says (a 2026-07-28 client checks that).
    fn offers(&self, offer: Offer) -> Result<(), McpError> {
        let proxy = self.inner.proxy.as_deref();
        let passes = |prompts| proxy.is_some_and(|p| p.passes(prompts));
        let offered = match offer {
            Offer::Resources => passes(false),
            Offer::Prompts => passes(true),
            Offer::Completions => passes(false) || passes(true),
        };
        if offered {
            return Ok(());
        }
        let method = match offer {
            Offer::Resources => "resources",
            Offer::Prompts => "prompts",
            Offer::Completions => "completion",
        };
        Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("this server offers no {method} (it declares no such capability)"),
            None,
        ))
    }
}
