use std::collections::HashMap;
use std::sync::Arc;

use mcpflow_config::{Config, ServerMeta};
use mcpflow_engine::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

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
        Ok(GraphServer {
            inner: Arc::new(Inner {
                meta: config.server.clone(),
                engine,
                tools,
                by_name,
            }),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    /// Validates the arguments and runs the tool: the whole of `tools/call`, without transport.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> Result<CallToolResult, McpError> {
        let Some(entry) = self.inner.by_name.get(name) else {
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
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "invalid arguments for `{name}`: {}",
                errors.join("; ")
            ))]));
        }
        let run = self.inner.engine.run(name, args).await;
        match &run.result {
            Ok(_) => {
                tracing::debug!(run = %run.id, tool = name, nodes = run.history.len(), "run succeeded")
            }
            Err(e) => tracing::warn!(run = %run.id, tool = name, error = %e, "run failed"),
        }
        Ok(tool_result(&run, entry.output.as_ref()))
    }
}

impl ServerHandler for GraphServer {
    fn get_info(&self) -> ServerConfig {
        let meta = &self.inner.meta;
        let mut implementation = Implementation::new(meta.name.clone(), meta.version.clone());
        implementation.title = Some(meta.display_title().to_owned());
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation);
        if let Some(instructions) = &meta.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.by_name.get(name).map(|e| e.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(&request.name, request.arguments)
            .await
            .map(Into::into)
    }
}
