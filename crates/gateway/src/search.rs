//! Tool search mode (`proxy.toolSearch`): instead of every proxied tool, clients are listed two
//! built-in tools, `mcpflow_find_tool` (the scored search of [`mcpflow_upstream::search`], the
//! one the authoring toolkit uses, over the proxied tools' names, titles, descriptions and
//! parameter names, each hit with its full `inputSchema`) and `mcpflow_call_tool` (a proxied
//! tool called by its listed name, forwarded exactly as a direct `tools/call` of it: same route,
//! argument overrides and hooks). Pinned tools stay listed, and every proxied tool stays
//! callable directly by name.

use std::sync::Arc;

use mcpflow_model::proxy::ToolSearch;
use mcpflow_upstream::search::{Item, MIN_SCORE, search, searchable};
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value, json};

use crate::gateway::{Gateway, client_name};
use crate::listing::{Route, Target};

const DEFAULT_LIMIT: u64 = 10;
const MAX_LIMIT: u64 = 50;

/// One of the two built-in tools of tool search mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    Find,
    Call,
}

impl Builtin {
    pub(crate) const ALL: [Builtin; 2] = [Builtin::Find, Builtin::Call];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Builtin::Find => ToolSearch::FIND_TOOL,
            Builtin::Call => ToolSearch::CALL_TOOL,
        }
    }

    pub(crate) fn of(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The fields a call takes, and which of them it needs.
    fn fields(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Builtin::Find => (&["query", "limit", "server"], &["query"]),
            Builtin::Call => (&["name", "arguments"], &["name"]),
        }
    }

    /// The tool as listed.
    pub(crate) fn tool(self) -> Tool {
        let (description, schema) = match self {
            Builtin::Find => (
                "Search the tools this server proxies (names, descriptions, parameter names), \
                 best match first with its score (exact name 100, prefix 90, contains 70, \
                 word 60, fuzzy up to 50; description and parameter matches below). Each hit \
                 carries the tool's full inputSchema: call it with mcpflow_call_tool (or \
                 directly by its name).",
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What the tool does or is called, e.g. \"read file\" or \"list directory\"."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("How many hits at most (default {DEFAULT_LIMIT}).")},
                        "server": {"type": "string", "description": "Only tools of this upstream server."}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
            ),
            Builtin::Call => (
                "Call a proxied tool by the name mcpflow_find_tool gave, with its arguments \
                 (an object matching that tool's inputSchema). The answer is that tool's own.",
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "The tool's name as mcpflow_find_tool lists it."},
                        "arguments": {"type": "object", "description": "The tool's arguments."}
                    },
                    "required": ["name"],
                    "additionalProperties": false
                }),
            ),
        };
        let Value::Object(schema) = schema else {
            unreachable!("a literal object")
        };
        Tool::new(self.name(), description, Arc::new(schema))
    }

    /// What is wrong with a call's arguments, in words a model can act on; `None` when the
    /// fields are all known and every required one is there.
    fn check(self, args: &Map<String, Value>) -> Option<String> {
        let (known, required) = self.fields();
        let name = self.name();
        if let Some(unknown) = args.keys().find(|k| !known.contains(&k.as_str())) {
            return Some(format!(
                "{name}: unknown field `{unknown}`; it takes {}",
                fields_list(known)
            ));
        }
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|f| !args.contains_key(*f))
            .collect();
        if !missing.is_empty() {
            return Some(format!(
                "{name}: missing {}; {}",
                fields_list(&missing),
                self.example()
            ));
        }
        None
    }

    fn example(self) -> &'static str {
        match self {
            Builtin::Find => "e.g. {\"query\": \"read file\", \"limit\": 5}",
            Builtin::Call => {
                "e.g. {\"name\": \"fs__read_text_file\", \"arguments\": {\"path\": \"/tmp/a.txt\"}}"
            }
        }
    }
}

fn fields_list(fields: &[&str]) -> String {
    fields
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn refused(message: String) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into())
}

impl Gateway {
    /// The `toolSearch:` settings, when the mode is on.
    pub(crate) fn tool_search(&self) -> Option<&ToolSearch> {
        self.config.tool_search.as_ref().filter(|t| t.is_enabled())
    }

    /// A call of a built-in tool of tool search mode.
    pub(crate) async fn call_builtin(
        &self,
        builtin: Builtin,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        if let Some(problem) = builtin.check(&args) {
            return refused(problem);
        }
        match builtin {
            Builtin::Find => self.find(&args, context).await,
            Builtin::Call => self.call_by_name(&args, request, context).await,
        }
    }

    async fn find(
        &self,
        args: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let find = ToolSearch::FIND_TOOL;
        let Some(query) = args["query"].as_str() else {
            return refused(format!(
                "{find}: `query` must be a string, not {}; e.g. {{\"query\": \"read file\"}}",
                args["query"]
            ));
        };
        if !searchable(query) {
            return refused(format!(
                "{find}: `query` has no letters or digits to search for; e.g. {{\"query\": \"list directory\"}}"
            ));
        }
        let limit = match args.get("limit") {
            None => DEFAULT_LIMIT,
            Some(v) => match v.as_u64().filter(|l| (1..=MAX_LIMIT).contains(l)) {
                Some(l) => l,
                None => {
                    return refused(format!(
                        "{find}: `limit` must be a whole number from 1 to {MAX_LIMIT}, not {v}"
                    ));
                }
            },
        };
        let server = match args.get("server") {
            None => None,
            Some(Value::String(s)) if self.config.upstreams.contains_key(s) => Some(s.as_str()),
            Some(other) => {
                let names: Vec<&str> = self.config.upstreams.keys().map(String::as_str).collect();
                return refused(format!(
                    "{find}: `server` {other} is not a proxied upstream; use one of {}, or leave it out",
                    fields_list(&names)
                ));
            }
        };
        let client = client_name(&context.peer);
        let caller = crate::hooks::caller_in(context);
        let proxied = Box::pin(self.proxied_tools(client.as_deref(), caller)).await;
        let tools: Vec<&(Arc<str>, Tool)> = proxied
            .iter()
            .filter(|(s, _)| server.is_none_or(|wanted| &**s == wanted))
            .collect();
        let items: Vec<Item> = tools
            .iter()
            .map(|(s, t)| {
                Item::tool(
                    "proxiedTool",
                    Some(s),
                    &t.name,
                    t.title.as_deref(),
                    t.description.as_deref(),
                    &Value::Object((*t.input_schema).clone()),
                )
            })
            .collect();
        let hits = search(query, &items);
        let total = hits.len();
        let results: Vec<Value> = hits
            .iter()
            .take(limit as usize)
            .filter_map(|hit| {
                let at = items.iter().position(|i| std::ptr::eq(i, hit.item))?;
                let tool = &tools[at].1;
                let mut v = json!({
                    "name": hit.item.name,
                    "server": hit.item.server,
                    "score": hit.score,
                    "matched": hit.matched,
                    "inputSchema": &*tool.input_schema,
                });
                if let Some(title) = &tool.title {
                    v["title"] = json!(title);
                }
                if !hit.item.description.is_empty() {
                    v["description"] = json!(hit.item.description);
                }
                Some(v)
            })
            .collect();
        let mut out = json!({"query": query, "results": results, "total": total});
        if total == 0 {
            out["note"] = json!(format!(
                "no tool scored {MIN_SCORE} or more: try a shorter query or a single word"
            ));
        }
        Ok(CallToolResult::structured(out).into())
    }

    async fn call_by_name(
        &self,
        args: &Map<String, Value>,
        mut request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = ToolSearch::CALL_TOOL;
        let Some(name) = args["name"].as_str() else {
            return refused(format!(
                "{call}: `name` must be a string, the tool's name as mcpflow_find_tool lists it, not {}",
                args["name"]
            ));
        };
        let arguments = match args.get("arguments") {
            None | Some(Value::Null) => None,
            Some(Value::Object(a)) => Some(a.clone()),
            Some(other) => {
                return refused(format!(
                    "{call}: `arguments` must be an object of the tool's arguments (see its inputSchema), not {other}; e.g. {{\"name\": \"{name}\", \"arguments\": {{}}}}"
                ));
            }
        };
        if Builtin::of(name).is_some() {
            return refused(format!(
                "{call}: `{name}` is a built-in tool: call it directly"
            ));
        }
        if self.graph_tools.contains(name) {
            return refused(format!(
                "{call}: `{name}` is a graph tool of this server, not a proxied one: call it directly (it is listed)"
            ));
        }
        let Some(Route(Target::Proxied(exposed))) = self.route(name).await else {
            return refused(self.unknown(name));
        };
        request.name = name.to_owned().into();
        request.arguments = arguments;
        Box::pin(self.call_proxied(&exposed, request, context)).await
    }

    /// An unknown tool name, with the closest of the proxied tools' names.
    fn unknown(&self, name: &str) -> String {
        let mut names: Vec<(f64, String)> = self
            .listed_names()
            .into_iter()
            .map(|n| {
                (
                    strsim::jaro_winkler(&n.to_lowercase(), &name.to_lowercase()),
                    n,
                )
            })
            .filter(|(sim, _)| *sim >= 0.7)
            .collect();
        names.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let call = ToolSearch::CALL_TOOL;
        let find = ToolSearch::FIND_TOOL;
        if names.is_empty() {
            format!(
                "{call}: no proxied tool is named `{name}`; find it with {find} and use the name it gives"
            )
        } else {
            let closest: Vec<String> = names
                .into_iter()
                .take(5)
                .map(|(_, n)| format!("`{n}`"))
                .collect();
            format!(
                "{call}: no proxied tool is named `{name}`; the closest are {} (or find it with {find})",
                closest.join(", ")
            )
        }
    }
}
