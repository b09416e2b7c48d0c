//! Durable sessions (mcpflow extensions): the `await` node, where to keep state, and how long
//! a waiting session lives.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::node::NodeOptions;

/// Suspends the run and hands the client a session: `{status: "waiting", sessionId, message,
/// inputSchema, options}`. The client sends `input` (checked against `inputSchema`) with the
/// tool's `_continue` companion; that input becomes this node's output and the run goes on
/// with `next`. Only in the main flow of the tool the client called (not inside a `parallel`
/// branch, a `foreach` body or a `call`ed tool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct AwaitNode {
    /// Unique in the tool; expressions read the client's input as `$.<id>`.
    #[schemars(length(min = 1))]
    pub id: String,
    /// What to tell the client: literal JSON, where an object whose single key is `expr` is a
    /// JSONata expression over the context (as in an mcp node's `args`).
    #[serde(default)]
    pub message: Value,
    /// Suggestions for the client (which tool to call next with which arguments), in the same
    /// form as `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
    /// JSON Schema the client's input must match (default `{"type": "object"}`).
    #[serde(default = "crate::config::object_schema")]
    pub input_schema: Value,
    /// How to ask: `client` hands a session back (the default); `elicit` asks the client inline
    /// through MCP elicitation; `auto` elicits when the client declared the capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<AwaitMode>,
    /// Id of the node to run once the input has arrived.
    #[schemars(length(min = 1))]
    pub next: String,
    #[serde(flatten)]
    pub node_options: NodeOptions,
}

/// How an `await` node obtains its input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AwaitMode {
    /// Suspend and return a session handle; the client continues it with `NAME_continue`.
    #[default]
    Client,
    /// Ask the client inline with `elicitation/create`; fails when the client cannot.
    Elicit,
    /// Elicit when the client declared the elicitation capability, else `client`.
    Auto,
}

/// Limits on waiting sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionsConfig {
    /// How long a session waits for its client, in seconds (default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub ttl_seconds: Option<u64>,
    /// At most this many sessions live at once (waiting or being continued); a run that would
    /// create one more fails with a clear error. Unlimited by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_count: Option<u64>,
}

impl SessionsConfig {
    pub const DEFAULT_TTL_SECONDS: u64 = 3600;

    pub fn ttl_seconds(&self) -> u64 {
        self.ttl_seconds.unwrap_or(Self::DEFAULT_TTL_SECONDS)
    }
}
