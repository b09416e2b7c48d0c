//! The whole config file, its server metadata, limits, upstream servers and tools.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::node::Node;

/// A whole config file: an MCP server whose tools are graphs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "mcpflow config")]
pub struct Config {
    /// The JSON Schema editors check this file against (the file `mcpflow schema` writes, or
    /// its URL); read by editors only, and not part of the config's version.
    #[serde(rename = "$schema", default, skip_serializing)]
    pub schema: Option<String>,
    /// Version of the config format (mcpGraph uses "1.0").
    pub version: String,
    /// Metadata of the MCP server mcpflow serves.
    pub server: ServerMeta,
    /// Guardrails checked before every node of a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_limits: Option<ExecutionLimits>,
    /// Upstream MCP servers that `mcp` nodes call, by name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub mcp_servers: IndexMap<String, McpServer>,
    /// The graph tools this server lists.
    #[serde(default)]
    pub tools: Vec<ToolDef>,
    /// More files of graph tools, relative to this file: paths, or `DIR/*.yaml` (every file of
    /// DIR whose name matches, in name order). Each holds `tools:` only; its tools follow this
    /// file's. `mcpflow_save_tool` writes to the first `DIR/*.yaml` entry's directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Upstreams whose tools, resources and prompts are passed through to clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<crate::proxy::ProxyConfig>,
    /// Hooks run before and after proxied requests, in this order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<crate::proxy::Hook>,
    /// Where runs and sessions are kept: `sqlite://path` (relative to the config) or
    /// `postgres://…`, or `{url, retention}` to say also how long finished runs are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<crate::store::StoreSetting>,
    /// Time to live and maximum count of waiting sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<crate::session::SessionsConfig>,
    /// Guards and limits of `mcpflow serve --http`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<crate::http::HttpConfig>,
    /// Built-in tools that teach, check and run graph tools (`mcpflow serve --authoring`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authoring: Option<crate::authoring::AuthoringConfig>,
    /// Who may reach the server and what each caller may do: API keys, bearer tokens (JWT),
    /// scopes and tool globs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<crate::auth::AuthConfig>,
    /// Where the audit log of tool calls goes: stderr, a file of JSON lines, the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::audit::AuditConfig>,
    /// Traces over OTLP and Prometheus metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::TelemetryConfig>,
}

/// What `initialize` tells the client about this server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerMeta {
    /// Unique identifier of the server.
    pub name: String,
    /// Version of the server.
    pub version: String,
    /// Display name; defaults to `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Instructions for the model using this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl ServerMeta {
    /// The display title: `title` or, when absent, `name`.
    pub fn display_title(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// Limits on one run. Both must be positive integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionLimits {
    /// Maximum node executions in one run (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_node_executions: Option<u64>,
    /// Maximum wall-clock time of one run in milliseconds (default 300000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_execution_time_ms: Option<u64>,
    /// Maximum nesting of `call` nodes (a tool calling a tool …) in one run (default 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_call_depth: Option<u32>,
}

impl ExecutionLimits {
    pub const DEFAULT_MAX_NODE_EXECUTIONS: u64 = 1000;
    pub const DEFAULT_MAX_EXECUTION_TIME_MS: u64 = 300_000;
    pub const DEFAULT_MAX_CALL_DEPTH: u32 = 8;

    pub fn max_depth(&self) -> u32 {
        self.max_call_depth.unwrap_or(Self::DEFAULT_MAX_CALL_DEPTH)
    }

    pub fn max_nodes(&self) -> u64 {
        self.max_node_executions
            .unwrap_or(Self::DEFAULT_MAX_NODE_EXECUTIONS)
    }

    pub fn max_time_ms(&self) -> u64 {
        self.max_execution_time_ms
            .unwrap_or(Self::DEFAULT_MAX_EXECUTION_TIME_MS)
    }
}

/// An upstream MCP server. `type` defaults to `stdio`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum McpServer {
    Stdio(StdioServer),
    Remote(RemoteServer),
}

/// A child process speaking MCP over stdin/stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StdioServer {
    /// Always `stdio` when present.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<StdioKind>,
    /// Program to start.
    #[schemars(length(min = 1))]
    pub command: String,
    /// Its arguments (may be empty). `${VAR}` is interpolated from the environment.
    #[serde(default)]
    pub args: Vec<String>,
    /// Working directory; relative paths resolve against the config file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Extra environment variables for the child. `${VAR}` is interpolated.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    /// Timeout of one call to this upstream in milliseconds (default 60000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// Timeout of starting the program plus the MCP handshake (`initialize`) in milliseconds
    /// (default 30000). Meanwhile the gateway lists the server's tools as down; they are
    /// listed, with a list change, once it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub connect_timeout_ms: Option<u64>,
    /// What mcpflow answers when this server asks its client for `roots/list` and no client
    /// of a forwarded call is there to ask (a graph's `mcp` node, the server's own start):
    /// directories (relative ones resolve against the config file's directory) or `file://`
    /// URIs. Default: none, an empty list, so the server keeps the directories its own
    /// arguments give it (`server-filesystem` replaces those with any roots it is given).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StdioKind {
    Stdio,
}

/// A server reached over HTTP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoteServer {
    /// `streamableHttp` or `sse` (legacy HTTP+SSE).
    #[serde(rename = "type")]
    pub kind: RemoteKind,
    /// Endpoint URL.
    #[schemars(length(min = 1))]
    pub url: String,
    /// Extra HTTP headers. `${VAR}` is interpolated from the environment at load;
    /// `${caller.subject}`, `${caller.via}`, `${caller.key}`, `${caller.scopes}` and
    /// `${caller.claims.NAME}` are rendered per request from who it is made for (a header
    /// whose value names something the caller lacks is left out); `${caller.token}` needs
    /// `forwardCallerToken`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// Allows `${caller.token}` in `headers`: the credential the caller presented to mcpflow
    /// (bearer token or API key) goes to this server. Off by default: a caller's credential
    /// never leaves mcpflow unless the config says so here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forward_caller_token: bool,
    /// Timeout of one call to this upstream in milliseconds (default 60000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// Timeout of connecting plus the MCP handshake in milliseconds (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub connect_timeout_ms: Option<u64>,
    /// What mcpflow answers when this server asks its client for `roots/list` and no client
    /// of a forwarded call is there to ask (a graph's `mcp` node, the server's own start):
    /// directories (relative ones resolve against the config file's directory) or `file://`
    /// URIs. Default: none, an empty list, so the server keeps the directories its own
    /// arguments give it (`server-filesystem` replaces those with any roots it is given).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RemoteKind {
    Sse,
    StreamableHttp,
}

/// One graph tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolDef {
    /// Tool name as listed to clients.
    pub name: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments (default `{"type": "object"}`).
    #[serde(default = "object_schema")]
    pub input_schema: Value,
    /// JSON Schema of the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// MCP tool annotations (readOnlyHint, destructiveHint, …), passed to clients as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Wall-clock bound of one run of this tool in milliseconds, checked also while a node
    /// waits (unlike `maxExecutionTimeMs`, which is checked before each node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// Commit every step, so a run interrupted by a crash restarts from its last completed node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumable: Option<bool>,
    /// The tool's revision (default 0). A run that waits for its client, or an interrupted
    /// resumable one, goes on on the config version it started on, whatever changed since;
    /// raise this when a change must not let runs started before it go on: those are refused
    /// (to be cancelled and started anew) once the config that raised it is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// The graph: exactly one `entry` and one `exit` node.
    pub nodes: Vec<Node>,
}

/// `{"type": "object"}`, the schema of a tool's arguments or an await's input when none is given.
pub(crate) fn object_schema() -> Value {
    serde_json::json!({"type": "object"})
}
