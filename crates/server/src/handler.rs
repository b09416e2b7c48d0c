//! The MCP face of [`GraphServer`]: rmcp's `ServerHandler`. Own tools (graph tools and
//! session companions) run inside the hooks that apply to graph tools; everything else the
//! config proxies is the gateway's.

use mcpflow_config::proxy::HookMethod;
use mcpflow_gateway::{Offer, Traffic};
use mcpflow_model::future::boxed;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use crate::call_options::CallOptions;
use crate::caller;
use crate::server::GraphServer;
use mcpflow_auth::{Principal, Via};

impl ServerHandler for GraphServer {
    fn get_info(&self) -> ServerConfig {
        let meta = self.meta();
        let mut implementation = Implementation::new(meta.name.clone(), meta.version.clone());
        implementation.title = Some(meta.display_title().to_owned());
        let mut capabilities = self.gateway().capabilities();
        if self.authoring().is_some() {
            capabilities.prompts.get_or_insert_with(Default::default);
        }
        let mut info = ServerConfig::new(capabilities).with_server_info(implementation);
        let authoring = self.authoring().map(|a| a.instructions());
        let instructions: Vec<&str> = [meta.instructions.as_deref(), authoring.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if !instructions.is_empty() {
            info = info.with_instructions(instructions.join("\n\n"));
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        mut context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let principal = caller::principal(&context);
        caller::tell_hooks(&mut context, principal.as_ref());
        // Boxed, like every handler here that awaits hooks or upstreams (see call_tool).
        let mut tools = Box::pin(self.gateway().list_tools(self.tools().to_vec(), &context)).await;
        if let Some(p) = &principal {
            tools.retain(|t| p.sees(&t.name));
        }
        if let Some(authoring) = self.authoring() {
            let mut builtin = authoring.tools();
            builtin.retain(|t| caller::sees(principal.as_ref(), &t.name, true));
            tools.extend(builtin);
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.own_tool(name)
            .or_else(|| self.gateway().listed_tool(name))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let principal = caller::principal(&context).filter(|p| p.via() != Via::Open);
        caller::tell_hooks(&mut context, principal.as_ref());
        // Its audit line, when one is kept, is the LiveServer's (`audit/`).
        self.answer_call(request, context, principal).await
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        self.gateway().register_client(context.peer);
    }

    // Resources, prompts, completions and logging are the proxied upstreams' (the gateway
    // refuses, as method not found, what it does not declare).
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        let mut listed = Box::pin(self.gateway().list_resources()).await?;
        if let Some(p) = caller::principal(&context) {
            listed.resources.retain(|r| p.sees(&r.uri));
        }
        Ok(listed)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        Box::pin(self.gateway().list_resource_templates()).await
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        let principal = caller::principal(&context);
        caller::tell_hooks(&mut context, principal.as_ref());
        if !caller::sees(principal.as_ref(), &request.uri, false) {
            return Err(McpError::resource_not_found(
                format!("no resource `{}`", request.uri),
                None,
            ));
        }
        Box::pin(self.gateway().read_resource(request, &context)).await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        Box::pin(self.gateway().complete(request)).await
    }

    #[expect(deprecated, reason = "clients on 2025-11-25 still set a log level")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Box::pin(self.gateway().set_level(request)).await
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Box::pin(self.gateway().subscription(request.uri, true)).await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Box::pin(self.gateway().subscription(request.uri, false)).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        let principal = caller::principal(&context);
        let Some(authoring) = self.authoring() else {
            let mut listed = Box::pin(self.gateway().list_prompts()).await?;
            listed
                .prompts
                .retain(|p| caller::sees(principal.as_ref(), &p.name, false));
            return Ok(listed);
        };
        let mut prompts = authoring.prompts();
        prompts.retain(|p| caller::sees(principal.as_ref(), &p.name, true));
        if self.gateway().offers(Offer::Prompts).is_ok() {
            let mut proxied = Box::pin(self.gateway().list_prompts()).await?.prompts;
            proxied.retain(|p| caller::sees(principal.as_ref(), &p.name, false));
            prompts.extend(proxied);
        }
        Ok(rmcp::model::ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        let builtin = self
            .authoring()
            .is_some_and(|a| a.has_prompt(&request.name));
        let principal = caller::principal(&context);
        caller::tell_hooks(&mut context, principal.as_ref());
        if !caller::sees(principal.as_ref(), &request.name, builtin) {
            return Err(McpError::invalid_params(
                format!("no prompt `{}`", request.name),
                None,
            ));
        }
        if let Some(authoring) = self.authoring()
            && authoring.has_prompt(&request.name)
        {
            return authoring
                .prompt(&request.name, request.arguments.as_ref())
                .map(Into::into)
                .map_err(|e| McpError::invalid_params(e.0, None));
        }
        Box::pin(self.gateway().get_prompt(request, &context)).await
    }

    // 2026-07-28 list changes: the proxied upstreams' tool list changes, re-announced.
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        self.gateway().subscription_filter(requested)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        Box::pin(self.gateway().listen(&context)).await
    }
}

impl GraphServer {
    /// A `tools/call` (`principal`: the caller, under access control): a built-in authoring
    /// tool, a proxied tool, or an own tool inside the graph-tool hooks.
    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        principal: Option<Principal>,
    ) -> Result<CallToolResponse, McpError> {
        let builtin = self.authoring().is_some_and(|a| a.handles(&request.name));
        if !caller::sees(principal.as_ref(), &request.name, builtin) {
            // Hidden from this caller: refused exactly as a tool that does not exist.
            return Err(self.unknown_tool(&request.name, principal.as_ref()));
        }
        if let Some(authoring) = self.authoring()
            && authoring.handles(&request.name)
        {
            let arguments = request.arguments.unwrap_or_default();
            let caller = caller::run_caller(&context);
            return Ok(
                boxed(|| authoring.call_as(&request.name, arguments, caller))
                    .await
                    .into(),
            );
        }
        if !self.owns(&request.name)
            && let Some(route) = self.gateway().route(&request.name).await
        {
            // Every branch is boxed, and built in its box (`boxed`): inline, this future would
            // carry the gateway's and the engine's state for every request, whichever branch
            // it takes, and `Box::pin` would copy kilobytes into the box.
            return boxed(|| self.gateway().call(&route, request, &context)).await;
        }
        let options = CallOptions::of(&context);
        let client = context.peer.peer_info().map(|i| i.client_info.name.clone());
        let name = request.name.clone();
        let traffic = Traffic::graph(HookMethod::ToolsCall, Some(&name), client.as_deref())
            .sent_by(caller::hooks_caller(&context));
        let hooks = self.gateway().hooks();
        // Without hooks the answer's future is not nested inside the hooks' own: every level
        // of nesting is another copy of it per call.
        if !hooks.wraps(traffic) {
            return boxed(|| self.answer_own(request, &options)).await;
        }
        let arguments = request.arguments.clone();
        let (mut request, options) = (request, &options);
        boxed(|| {
            hooks.around_call(traffic, &name, arguments, |arguments| {
                request.arguments = arguments;
                self.answer_own(request, options)
            })
        })
        .await
    }
}

impl GraphServer {
    /// A session's resumption (a 2026-07-28 retry), or a run of the tool.
    async fn answer_own(
        &self,
        request: CallToolRequestParams,
        options: &CallOptions,
    ) -> Result<CallToolResponse, McpError> {
        // Most calls resume nothing: a resumption's future (a session looked up and continued)
        // is made, boxed, only for those that do, so it does not size every call's future
        // (each call's is allocated whole, above).
        if crate::session::input::may_resume(&request)
            && let Some(response) = boxed(|| self.resume(&request, options)).await
        {
            return Ok(response);
        }
        let called = self
            .call_graph(&request.name, request.arguments, options)
            .await?;
        Ok(crate::session::input::respond(
            called,
            options.deferred.as_deref(),
        ))
    }
}
