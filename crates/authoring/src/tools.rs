//! The built-in tools: name, description, parameters (their JSON Schema is generated from
//! them, and so is the check of a call's arguments) and which `authoring:` flag gates each.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Map, Value, json};

use mcpflow_model::AuthoringConfig;

/// The prefix every built-in tool name shares; graph and proxied tools may not use it.
pub const PREFIX: &str = "mcpflow_";

pub(crate) const SYNTAX: &str = "mcpflow_syntax";
pub(crate) const NODE_TYPES: &str = "mcpflow_node_types";
pub(crate) const NODE_DETAILS: &str = "mcpflow_node_details";
pub(crate) const TEST_EXPRESSION: &str = "mcpflow_test_expression";
pub(crate) const VALIDATE_TOOL: &str = "mcpflow_validate_tool";
pub(crate) const RUN_TOOL: &str = "mcpflow_run_tool";
pub(crate) const LIST_UPSTREAMS: &str = "mcpflow_list_upstreams";
pub(crate) const LIST_UPSTREAM_TOOLS: &str = "mcpflow_list_upstream_tools";
pub(crate) const GET_UPSTREAM_TOOL: &str = "mcpflow_get_upstream_tool";
pub(crate) const LIST_GRAPH_TOOLS: &str = "mcpflow_list_graph_tools";
pub(crate) const GET_GRAPH_TOOL: &str = "mcpflow_get_graph_tool";
pub(crate) const SEARCH: &str = "mcpflow_search";
pub(crate) const CALL_UPSTREAM: &str = "mcpflow_call_upstream";
pub(crate) const LIST_RUNS: &str = "mcpflow_list_runs";
pub(crate) const GET_RUN: &str = "mcpflow_get_run";
pub(crate) const SAVE_TOOL: &str = "mcpflow_save_tool";
pub(crate) const DELETE_TOOL: &str = "mcpflow_delete_tool";

/// Which flag of the `authoring:` section a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    Always,
    Search,
    CallUpstreams,
    Save,
}

impl Gate {
    pub(crate) fn open(self, settings: &AuthoringConfig) -> bool {
        match self {
            Gate::Always => true,
            Gate::Search => settings.search(),
            Gate::CallUpstreams => settings.call_upstreams(),
            Gate::Save => settings.save(),
        }
    }
}

/// The JSON type a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    String,
    Bool,
    Integer,
    Object,
    Array,
    /// A string or a list of strings.
    Strings,
    /// A definition: an object, or YAML/JSON text.
    TextOrObject,
    Enum(&'static [&'static str]),
    Any,
}

pub(crate) struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
    pub description: &'static str,
}

pub(crate) struct Spec {
    pub name: &'static str,
    pub gate: Gate,
    pub description: &'static str,
    pub params: &'static [Param],
    /// Arguments of a correct call, shown with every malformed-call error (JSON text).
    pub example: &'static str,
    /// Whether the tool only reads (nothing it does changes anything anywhere).
    pub read_only: bool,
}

const fn param(name: &'static str, kind: Kind, required: bool, description: &'static str) -> Param {
    Param {
        name,
        kind,
        required,
        description,
    }
}

pub(crate) const TOPICS: &[&str] = &[
    "graph",
    "nodes",
    "jsonata",
    "history",
    "jsonlogic",
    "args",
    "errors",
];
pub(crate) const SEARCH_KINDS: &[&str] = &["graphTool", "upstreamTool", "nodeType"];

pub(crate) static SPECS: &[Spec] = &[
    Spec {
        name: SYNTAX,
        gate: Gate::Always,
        description: "Start here. The reference of mcpflow's graph tools, written for you: the \
            graph format, every node type, JSONata with the history functions ($previousNode, \
            $executionCount, $nodeExecution, $nodeExecutions), JSON Logic rules whose `var` is \
            JSONata, mcp `args` templates and the error object `onError` hands on. Short rules, \
            each with examples that are executed by mcpflow's tests. Without `topic`: every \
            topic.",
        params: &[param(
            "topic",
            Kind::Enum(TOPICS),
            false,
            "one topic only: graph, nodes, jsonata, history, jsonlogic, args or errors",
        )],
        example: r#"{"topic": "jsonata"}"#,
        read_only: true,
    },
    Spec {
        name: NODE_TYPES,
        gate: Gate::Always,
        description: "Lists the node types a graph can use (entry, exit, mcp, transform, switch, \
            parallel, foreach, call, await, script), each with one line on what it does and \
            its required fields. `filter` keeps the types whose name or summary contains it.",
        params: &[param(
            "filter",
            Kind::String,
            false,
            "keep only types whose name or summary contains this text (case ignored)",
        )],
        example: r#"{"filter": "loop"}"#,
        read_only: true,
    },
    Spec {
        name: NODE_DETAILS,
        gate: Gate::Always,
        description: "Everything about one or several node types: fields (required or not, \
            type, default, meaning), the JSON Schema generated from mcpflow's own config types, \
            and complete example tools using the node. A near-miss name (`Transform`, \
            `MCP_NODE`, `jsonata`, `if`) is corrected, with a warning.",
        params: &[
            param(
                "types",
                Kind::Strings,
                true,
                "a node type or a list of them, e.g. \"switch\" or [\"mcp\", \"foreach\"]",
            ),
            param(
                "examples",
                Kind::Bool,
                false,
                "include complete example tools (default true)",
            ),
            param(
                "schema",
                Kind::Bool,
                false,
                "include the node's JSON Schema (default true)",
            ),
        ],
        example: r#"{"types": ["switch", "foreach"]}"#,
        read_only: true,
    },
    Spec {
        name: TEST_EXPRESSION,
        gate: Gate::Always,
        description: "Evaluates one expression exactly as a node would: `jsonata` (a transform's \
            `expr`, a foreach's `items`), `logic` (a switch condition's `rule`) or `args` (an \
            mcp or call node's `args`), against `context` ({nodeId: output}, what nodes see as \
            `$`) and optionally `history` (records in run order, for the history functions). \
            Answers the value, or the error with its code and position.",
        params: &[
            param("jsonata", Kind::String, false, "a JSONata expression"),
            param(
                "logic",
                Kind::Any,
                false,
                "a JSON Logic rule; {\"var\": \"<JSONata>\"} reads the context",
            ),
            param(
                "args",
                Kind::Any,
                false,
                "mcp-node arguments: JSON where {\"expr\": \"<JSONata>\"} is evaluated",
            ),
            param(
                "context",
                Kind::Object,
                false,
                "node id → that node's latest output, e.g. {\"entry\": {\"n\": 3}} (default: built from `history`, else {})",
            ),
            param(
                "history",
                Kind::Array,
                false,
                "records in run order, [{\"nodeId\": \"add\", \"output\": {...}}, ...]; the context is built from them unless `context` is given",
            ),
        ],
        example: r#"{"jsonata": "$sum(entry.values)", "context": {"entry": {"values": [1, 2, 3]}}}"#,
        read_only: true,
    },
    Spec {
        name: VALIDATE_TOOL,
        gate: Gate::Always,
        description: "Checks one graph tool definition against the whole running config, with \
            every check mcpflow makes when it loads a config and compiles it: structure, node \
            types and fields, references between nodes, reachability, servers, call cycles, \
            every JSONata expression, JSON Logic rule, script and JSON Schema. Answers every \
            problem at once, each with its path inside your definition and how to fix it. A \
            definition named like a saved tool is checked as its replacement.",
        params: &[param(
            "definition",
            Kind::TextOrObject,
            true,
            "the tool: {name, description, inputSchema, nodes: [...]}, as an object or as YAML/JSON text",
        )],
        example: r#"{"definition": {"name": "double", "inputSchema": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}, "nodes": [{"id": "entry", "type": "entry", "next": "calc"}, {"id": "calc", "type": "transform", "transform": {"expr": "{\"result\": entry.n * 2}"}, "next": "exit"}, {"id": "exit", "type": "exit"}]}}"#,
        read_only: true,
    },
    Spec {
        name: RUN_TOOL,
        gate: Gate::Always,
        description: "Runs a graph tool with arguments and shows what happened: the result, the \
            history (every node executed, in order, with its duration, input and output) and, \
            when the run failed, the failing node, its error and the context it saw. Give \
            `tool` to run a saved tool, or `definition` to run one that is not saved (checked \
            first, as mcpflow_validate_tool does).",
        params: &[
            param("tool", Kind::String, false, "name of a saved graph tool"),
            param(
                "definition",
                Kind::TextOrObject,
                false,
                "a tool definition to run without saving it (object or YAML/JSON text)",
            ),
            param(
                "arguments",
                Kind::Object,
                false,
                "the tool's arguments (default {})",
            ),
            param(
                "history",
                Kind::Bool,
                false,
                "include the history (default true)",
            ),
        ],
        example: r#"{"tool": "double", "arguments": {"n": 21}}"#,
        read_only: false,
    },
    Spec {
        name: LIST_UPSTREAMS,
        gate: Gate::Always,
        description: "Lists the upstream MCP servers this config declares (the `server` of an \
            mcp node): name, title, version, instructions and status, connecting to each.",
        params: &[],
        example: "{}",
        read_only: true,
    },
    Spec {
        name: LIST_UPSTREAM_TOOLS,
        gate: Gate::Always,
        description: "Lists the tools of the upstream servers (name, title, description), or of \
            one `server`. Use mcpflow_get_upstream_tool for a tool's full schemas.",
        params: &[param(
            "server",
            Kind::String,
            false,
            "one upstream server (default: all)",
        )],
        example: r#"{"server": "filesystem"}"#,
        read_only: true,
    },
    Spec {
        name: GET_UPSTREAM_TOOL,
        gate: Gate::Always,
        description: "One upstream tool whole: description, input schema (what its mcp node's \
            `args` must produce), output schema and annotations, and an mcp node that calls it.",
        params: &[
            param("server", Kind::String, true, "the upstream server"),
            param("tool", Kind::String, true, "the tool's name on that server"),
        ],
        example: r#"{"server": "filesystem", "tool": "list_directory"}"#,
        read_only: true,
    },
    Spec {
        name: LIST_GRAPH_TOOLS,
        gate: Gate::Always,
        description: "Lists the graph tools this server runs: name, title, description, node \
            count and the upstream tools each one calls.",
        params: &[],
        example: "{}",
        read_only: true,
    },
    Spec {
        name: GET_GRAPH_TOOL,
        gate: Gate::Always,
        description: "One graph tool's full definition, as a model to copy from or to edit and \
            check with mcpflow_validate_tool.",
        params: &[param("name", Kind::String, true, "the graph tool's name")],
        example: r#"{"name": "count_files"}"#,
        read_only: true,
    },
    Spec {
        name: LIST_RUNS,
        gate: Gate::Always,
        description: "Recent runs, newest first: of every client from the store when one is \
            attached, and those made through mcpflow_run_tool (inline definitions too). Filter \
            by `tool` and `status`.",
        params: &[
            param("tool", Kind::String, false, "only runs of this tool"),
            param(
                "status",
                Kind::String,
                false,
                "only runs with this status: running, waiting, succeeded, failed, cancelled, interrupted, expired",
            ),
            param(
                "limit",
                Kind::Integer,
                false,
                "at most this many (default 20, at most 100)",
            ),
        ],
        example: r#"{"tool": "count_files", "status": "failed"}"#,
        read_only: true,
    },
    Spec {
        name: GET_RUN,
        gate: Gate::Always,
        description: "One run: its arguments, result or error, and its history (every node, in \
            order, with input, output, error and duration). With `index`, also the context as \
            it was right after record `index` (what the next node read): time travel for \
            debugging.",
        params: &[
            param(
                "runId",
                Kind::String,
                true,
                "the run's id (mcpflow_list_runs, mcpflow_run_tool)",
            ),
            param(
                "index",
                Kind::Integer,
                false,
                "a record's index in the history",
            ),
        ],
        example: r#"{"runId": "1a2b3c4d-7", "index": 2}"#,
        read_only: true,
    },
    Spec {
        name: SEARCH,
        gate: Gate::Search,
        description: "Searches graph tools, upstream tools and node types by name, title, \
            description and parameter names; best first, each with its score (exact name 100, \
            name prefix 90, name contains 70, word prefix 60, fuzzy up to 50; matches in \
            descriptions and parameters score lower).",
        params: &[
            param(
                "query",
                Kind::String,
                true,
                "what to look for, e.g. \"read file\"",
            ),
            param(
                "kinds",
                Kind::Strings,
                false,
                "only these kinds: graphTool, upstreamTool, nodeType (default: all)",
            ),
            param(
                "limit",
                Kind::Integer,
                false,
                "at most this many results (default 20)",
            ),
        ],
        example: r#"{"query": "directory", "kinds": ["upstreamTool"]}"#,
        read_only: true,
    },
    Spec {
        name: CALL_UPSTREAM,
        gate: Gate::CallUpstreams,
        description: "Calls one upstream tool the way an mcp node would: `args` written as the \
            node's (JSON where {\"expr\": \"<JSONata>\"} is evaluated against `context`). \
            Answers the evaluated arguments, the output exactly as the node's output would be \
            (what the next nodes read as $.<node id>), the raw result and the time taken.",
        params: &[
            param("server", Kind::String, true, "the upstream server"),
            param("tool", Kind::String, true, "the tool's name on that server"),
            param(
                "args",
                Kind::Any,
                false,
                "the mcp node's `args` (default {})",
            ),
            param(
                "context",
                Kind::Object,
                false,
                "node id → output, what `expr`s in `args` read (default {})",
            ),
        ],
        example: r#"{"server": "filesystem", "tool": "list_directory", "args": {"path": {"expr": "entry.directory"}}, "context": {"entry": {"directory": "."}}}"#,
        read_only: false,
    },
    Spec {
        name: SAVE_TOOL,
        gate: Gate::Save,
        description: "Saves a graph tool so this server serves it from now on (added, or             replacing the saved tool of the same name): checked against the whole config first             (as mcpflow_validate_tool does; nothing is written when a check fails), then             written to a file of its own and served without a restart. Runs in flight finish             on the old graph; clients are sent notifications/tools/list_changed. Validate and             run it inline first.",
        params: &[param(
            "definition",
            Kind::TextOrObject,
            true,
            "the tool: an object, or YAML/JSON text (comments in text are kept in the file)",
        )],
        example: r#"{"definition": {"name": "greet", "description": "Says hello", "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}}, "nodes": [{"id": "entry", "type": "entry", "next": "hello"}, {"id": "hello", "type": "transform", "transform": {"expr": "{'greeting': 'Hello, ' & $.entry.who}"}, "next": "exit"}, {"id": "exit", "type": "exit"}]}}"#,
        read_only: false,
    },
    Spec {
        name: DELETE_TOOL,
        gate: Gate::Save,
        description: "Deletes a graph tool saved with mcpflow_save_tool (tools written by hand             in the config are never rewritten) and serves the config without it; refused,             with nothing changed, while another tool or a hook still uses it.",
        params: &[param("name", Kind::String, true, "the saved tool's name")],
        example: r#"{"name": "greet"}"#,
        read_only: false,
    },
];

impl Spec {
    pub(crate) fn find(name: &str) -> Option<&'static Spec> {
        SPECS.iter().find(|s| s.name == name)
    }

    /// The example call, as compact JSON.
    pub(crate) fn example(&self) -> String {
        serde_json::from_str::<Value>(self.example)
            .map(|v| json!({"name": self.name, "arguments": v}).to_string())
            .unwrap_or_else(|_| self.example.to_owned())
    }

    pub(crate) fn input_schema(&self, settings: &AuthoringConfig) -> Map<String, Value> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for p in self.params {
            if self.name == RUN_TOOL && p.name == "definition" && !settings.run_inline() {
                continue;
            }
            let mut schema = match p.kind {
                Kind::String => json!({"type": "string"}),
                Kind::Bool => json!({"type": "boolean"}),
                Kind::Integer => json!({"type": "integer", "minimum": 0}),
                Kind::Object => json!({"type": "object"}),
                Kind::Array => json!({"type": "array"}),
                Kind::Strings => json!({"anyOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": "string"}}
                ]}),
                Kind::TextOrObject => json!({"type": ["object", "string"]}),
                Kind::Enum(values) => json!({"type": "string", "enum": values}),
                Kind::Any => json!({}),
            };
            schema["description"] = json!(p.description);
            properties.insert(p.name.into(), schema);
            if p.required {
                required.push(p.name);
            }
        }
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), json!(required));
        }
        schema.insert("additionalProperties".into(), json!(false));
        schema
    }

    pub(crate) fn tool(&self, settings: &AuthoringConfig) -> Tool {
        let mut description = self.description.to_owned();
        if self.name == RUN_TOOL && !settings.run_inline() {
            description.push_str(
                " Only saved tools here: running unsaved definitions is off \
                 (authoring.runInline: false).",
            );
        }
        let annotations = rmcp::model::ToolAnnotations::from_raw(
            None,
            Some(self.read_only),
            None,
            None,
            Some(matches!(self.name, RUN_TOOL | CALL_UPSTREAM)),
        );
        Tool::new(
            self.name,
            description,
            Arc::new(self.input_schema(settings)),
        )
        .annotate(annotations)
    }
}
