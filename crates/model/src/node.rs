//! The nodes of a graph: mcpGraph's node types, mcpflow's additions, and the options every
//! node accepts.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One step of a graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Node {
    /// Receives the tool arguments; its output is the arguments.
    Entry(EntryNode),
    /// Returns the previous record's output (JS-falsy values become `{}`).
    Exit(ExitNode),
    /// Calls a tool of an upstream server.
    Mcp(McpNode),
    /// Reshapes data with a JSONata expression.
    Transform(TransformNode),
    /// Routes with JSON Logic rules.
    Switch(SwitchNode),
    /// Runs named branches concurrently and joins their outputs as `{branch: output}`.
    Parallel(ParallelNode),
    /// Runs a sub-chain (or a `call`) for each item of an array, with a concurrency limit.
    Foreach(ForeachNode),
    /// Runs another graph tool of this config as a sub-run.
    Call(CallNode),
    /// Suspends the run until the client sends input (a durable session).
    Await(crate::session::AwaitNode),
    /// Runs a sandboxed JavaScript function: its input in, its return value out.
    Script(crate::script::ScriptNode),
}

/// Options every node accepts (mcpflow extensions).
///
/// `timeoutMs` and `retry` apply to work that can fail transiently (`mcp` and `call` nodes;
/// `timeoutMs` also bounds a whole `parallel` or `foreach`). When a node fails for good,
/// `onError` routes the run to another node, which reads the failure as `$.<failing node id>`:
/// `{message, code, nodeId, attempts, kind}`; `optional: true` records the failure the same way
/// and continues with the node's `next`. A stop, a cancellation or an execution limit is never
/// routed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeOptions {
    /// Bound of one attempt of this node in milliseconds (a timeout is retryable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// Retry with exponential backoff (only `mcp` and `call` nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    /// Node to run when this node fails for good; it reads the error as `$.<this node's id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub on_error: Option<String>,
    /// On failure, record the error as this node's output and continue with `next`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

impl NodeOptions {
    pub fn is_optional(&self) -> bool {
        self.optional == Some(true)
    }
}

/// How a node is retried: attempt `k` (from 1) waits `min(backoffMs × 2^(k-1), maxBackoffMs)`
/// before the next one, scaled by a random factor in [0.5, 1] when `jitter` is on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retry {
    /// Total attempts, the first included (1 means no retry).
    #[schemars(range(min = 1))]
    pub max_attempts: u32,
    /// Wait before the second attempt in milliseconds (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
    /// Upper bound of one wait in milliseconds (default 10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_backoff_ms: Option<u64>,
    /// Randomize each wait in [50 %, 100 %] of its value (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<bool>,
    /// Which failures are retried (default `[timeout, transport]`). Expression and config
    /// errors never are: they would fail the same way again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on: Option<Vec<RetryOn>>,
}

impl Retry {
    pub const DEFAULT_BACKOFF_MS: u64 = 100;
    pub const DEFAULT_MAX_BACKOFF_MS: u64 = 10_000;

    pub fn retries(&self, what: RetryOn) -> bool {
        match &self.retry_on {
            Some(list) => list.contains(&what),
            None => matches!(what, RetryOn::Timeout | RetryOn::Transport),
        }
    }
}

/// A kind of failure that may succeed on retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RetryOn {
    /// The node's `timeoutMs` or the upstream's timeout expired.
    Timeout,
    /// The upstream could not be reached, crashed or broke the protocol.
    Transport,
    /// The upstream answered `isError: true`.
    ToolError,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ParallelNode {
    #[schemars(length(min = 1))]
    pub id: String,
    /// Branch name → id of the branch's first node. Each branch runs until it routes to
    /// `next` (the join), which it does not run.
    pub branches: IndexMap<String, String>,
    /// The join: where every branch ends and where the run continues.
    #[schemars(length(min = 1))]
    pub next: String,
    /// `failFast` (default): the first failing branch cancels the others. `waitAll`: every
    /// branch finishes, then the node fails if any branch did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ParallelMode>,
    #[serde(flatten)]
    pub options: NodeOptions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ParallelMode {
    #[default]
    FailFast,
    WaitAll,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ForeachNode {
    #[schemars(length(min = 1))]
    pub id: String,
    /// JSONata expression giving the array to iterate (a single value is one item).
    pub items: String,
    /// Items in flight at once (default 4, at most 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 64))]
    pub concurrency: Option<u32>,
    /// First node of the per-item chain, which ends when it routes back to this node. Inside
    /// it, `$.<this id>` is `{item, index}`.
    #[schemars(length(min = 1))]
    pub body: String,
    /// Where the run continues; this node's output is the array of item results, in order.
    #[schemars(length(min = 1))]
    pub next: String,
    #[serde(flatten)]
    pub options: NodeOptions,
}

impl ForeachNode {
    pub const DEFAULT_CONCURRENCY: u32 = 4;
    pub const MAX_CONCURRENCY: u32 = 64;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct CallNode {
    #[schemars(length(min = 1))]
    pub id: String,
    /// Name of another tool of this config.
    #[schemars(length(min = 1))]
    pub tool: String,
    /// Its arguments, in the same form as an mcp node's `args`.
    #[serde(default = "empty_object")]
    pub args: Value,
    #[schemars(length(min = 1))]
    pub next: String,
    #[serde(flatten)]
    pub options: NodeOptions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct EntryNode {
    /// Unique in the tool; expressions read this node's output as `$.<id>`.
    #[schemars(length(min = 1))]
    pub id: String,
    /// Id of the node to run next.
    #[schemars(length(min = 1))]
    pub next: String,
    #[serde(flatten)]
    pub options: NodeOptions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ExitNode {
    /// Unique in the tool.
    #[schemars(length(min = 1))]
    pub id: String,
    #[serde(flatten)]
    pub options: NodeOptions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct McpNode {
    /// Unique in the tool; expressions read this node's output as `$.<id>`.
    #[schemars(length(min = 1))]
    pub id: String,
    /// Name of a server in `mcpServers`.
    #[schemars(length(min = 1))]
    pub server: String,
    /// Tool to call on that server.
    #[schemars(length(min = 1))]
    pub tool: String,
    /// Arguments: literal JSON, where an object whose single key is `expr` is a JSONata expression.
    #[serde(default = "empty_object")]
    pub args: Value,
    /// Id of the node to run next.
    #[schemars(length(min = 1))]
    pub next: String,
    #[serde(flatten)]
    pub options: NodeOptions,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct TransformNode {
    /// Unique in the tool; expressions read this node's output as `$.<id>`.
    #[schemars(length(min = 1))]
    pub id: String,
    pub transform: Transform,
    /// Id of the node to run next.
    #[schemars(length(min = 1))]
    pub next: String,
    #[serde(flatten)]
    pub options: NodeOptions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Transform {
    /// JSONata expression over the context `{nodeId: latest output}`.
    pub expr: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct SwitchNode {
    /// Unique in the tool; its recorded output is the id of the node it routed to.
    #[schemars(length(min = 1))]
    pub id: String,
    /// Tried in order; the first whose rule is truthy wins.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Where to go when no condition holds.
    #[schemars(length(min = 1))]
    pub next: String,
    #[serde(flatten)]
    pub options: NodeOptions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// A JSON Logic rule; `{var: "<JSONata>"}` reads the context.
    pub rule: Value,
    /// Id of the node to run when the rule holds.
    #[schemars(length(min = 1))]
    pub next: String,
}

impl Node {
    pub fn id(&self) -> &str {
        match self {
            Node::Entry(n) => &n.id,
            Node::Exit(n) => &n.id,
            Node::Mcp(n) => &n.id,
            Node::Transform(n) => &n.id,
            Node::Switch(n) => &n.id,
            Node::Parallel(n) => &n.id,
            Node::Foreach(n) => &n.id,
            Node::Call(n) => &n.id,
            Node::Await(n) => &n.id,
            Node::Script(n) => &n.id,
        }
    }

    pub fn options(&self) -> &NodeOptions {
        match self {
            Node::Entry(n) => &n.options,
            Node::Exit(n) => &n.options,
            Node::Mcp(n) => &n.options,
            Node::Transform(n) => &n.options,
            Node::Switch(n) => &n.options,
            Node::Parallel(n) => &n.options,
            Node::Foreach(n) => &n.options,
            Node::Call(n) => &n.options,
            Node::Await(n) => &n.node_options,
            Node::Script(n) => &n.options,
        }
    }

    /// The node type as written in YAML.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Entry(_) => "entry",
            Node::Exit(_) => "exit",
            Node::Mcp(_) => "mcp",
            Node::Transform(_) => "transform",
            Node::Switch(_) => "switch",
            Node::Parallel(_) => "parallel",
            Node::Foreach(_) => "foreach",
            Node::Call(_) => "call",
            Node::Await(_) => "await",
            Node::Script(_) => "script",
        }
    }

    /// Every node id this node can go to next, in declaration order: its routes, then the
    /// starts of its branches or body, then its `onError` target.
    pub fn successors(&self) -> Vec<&str> {
        let mut out = self.routes();
        match self {
            Node::Parallel(n) => out.extend(n.branches.values().map(String::as_str)),
            Node::Foreach(n) => out.push(&n.body),
            _ => {}
        }
        out.extend(self.options().on_error.as_deref());
        out
    }

    /// Where this node goes when it succeeds.
    pub fn routes(&self) -> Vec<&str> {
        match self {
            Node::Entry(n) => vec![&n.next],
            Node::Exit(_) => vec![],
            Node::Mcp(n) => vec![&n.next],
            Node::Transform(n) => vec![&n.next],
            Node::Switch(n) => n
                .conditions
                .iter()
                .map(|c| c.next.as_str())
                .chain(std::iter::once(n.next.as_str()))
                .collect(),
            Node::Parallel(n) => vec![&n.next],
            Node::Foreach(n) => vec![&n.next],
            Node::Call(n) => vec![&n.next],
            Node::Await(n) => vec![&n.next],
            Node::Script(n) => vec![&n.next],
        }
    }
}
