//! Semantic checks of the graphs: what a schema cannot say. Every problem is collected.
//! Expressions, scripts and schemas are not compiled here: the engine is their one compiler,
//! and the loader places its errors (see [`crate::Draft::finish`]).
//!
//! Runs on the JSON value so that a tool with one malformed node is still checked for the rest
//! (ids, references, expressions); only the checks that need the whole graph (reachability) are
//! skipped for a tool that has a malformed node, to avoid errors that merely echo another.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::Value;

use crate::flow::{CallEdge, check_call_cycles, walk_chain};
use crate::model::Node;
use crate::place::in_owner;
use crate::source::{Problem, SourceMap};
use crate::suggest::did_you_mean;
use crate::yaml::escape;

/// Problems that make the config unusable, and warnings.
#[derive(Default)]
pub(crate) struct Findings {
    pub errors: Vec<Problem>,
    pub warnings: Vec<Problem>,
    /// Advice about a JSON Schema, which says nothing new when the compiler rejects that
    /// schema (dropped then).
    pub schema_advice: Vec<Problem>,
}

pub(crate) fn check(doc: &Value, sources: &SourceMap) -> Findings {
    let mut f = Findings::default();
    crate::proxy::check(doc, &mut f);
    let servers: Vec<&str> = doc
        .get("mcpServers")
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let Some(tools) = doc.get("tools").and_then(Value::as_array) else {
        return f;
    };
    let tool_names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    let mut calls: Vec<CallEdge> = Vec::new();
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (i, tool) in tools.iter().enumerate() {
        let ptr = format!("/tools/{i}");
        let Some(tool_obj) = tool.as_object() else {
            continue;
        };
        if let Some(name) = tool_obj.get("name").and_then(Value::as_str) {
            check_tool_name(name, &ptr, &mut f);
            if let Some(first) = names.get(name) {
                let at = line_of(sources, &format!("/tools/{first}/name"));
                f.errors.push(
                    Problem::new(
                        format!("{ptr}/name"),
                        format!("duplicate tool name \"{name}\""),
                    )
                    .hint(format!(
                        "tool names must be unique; the first \"{name}\" is{at}"
                    )),
                );
            } else {
                names.insert(name, i);
            }
        }
        for key in ["inputSchema", "outputSchema"] {
            if let Some(schema) = tool_obj.get(key) {
                check_json_schema(schema, &format!("{ptr}/{key}"), key, doc, &mut f);
            }
        }
        let Some(nodes) = tool_obj.get("nodes").and_then(Value::as_array) else {
            continue;
        };
        ToolCheck {
            doc,
            sources,
            servers: &servers,
            tools: &tool_names,
            ptr: &ptr,
            nodes,
        }
        .run(&mut f);
        for (j, node) in nodes.iter().enumerate() {
            if node.get("type").and_then(Value::as_str) == Some("call")
                && let (Some(from), Some(to)) = (
                    tool_obj.get("name").and_then(Value::as_str),
                    node.get("tool").and_then(Value::as_str),
                )
            {
                calls.push(CallEdge {
                    from,
                    to,
                    ptr: format!("{ptr}/nodes/{j}/tool"),
                });
            }
        }
    }
    check_call_cycles(&calls, &mut f);
    f
}

fn check_tool_name(name: &str, ptr: &str, f: &mut Findings) {
    let len = name.chars().count();
    let bad: Vec<char> = name
        .chars()
        .filter(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .collect();
    if len == 0 || len > 128 || !bad.is_empty() {
        let why = if len == 0 {
            "it is empty".to_owned()
        } else if len > 128 {
            format!("it is {len} characters long")
        } else {
            let mut shown: Vec<String> = bad.iter().map(|c| format!("{c:?}")).collect();
            shown.dedup();
            format!("it contains {}", shown.join(", "))
        };
        f.errors.push(
            Problem::new(
                format!("{ptr}/name"),
                format!("invalid tool name \"{name}\": {why}"),
            )
            .hint("MCP tool names are 1 to 128 characters of A-Z, a-z, 0-9, `_`, `-` and `.`"),
        );
    }
}

/// Advice about a JSON Schema; whether it compiles is the engine's to say.
fn check_json_schema(schema: &Value, ptr: &str, key: &str, doc: &Value, f: &mut Findings) {
    if key == "inputSchema"
        && schema.is_object()
        && schema.get("type").and_then(Value::as_str) != Some("object")
    {
        f.schema_advice.push(
            Problem::new(
                ptr,
                format!(
                    "\"inputSchema\"{} does not say `type: object`",
                    in_owner(ptr, doc)
                ),
            )
            .hint("MCP clients expect a tool's arguments to be an object"),
        );
    }
}

/// " at line N" for a pointer, or nothing.
fn line_of(sources: &SourceMap, pointer: &str) -> String {
    sources
        .locate(pointer)
        .map(|p| format!(" at line {}", p.line))
        .unwrap_or_default()
}

struct ToolCheck<'a> {
    doc: &'a Value,
    sources: &'a SourceMap,
    servers: &'a [&'a str],
    tools: &'a [&'a str],
    ptr: &'a str,
    nodes: &'a [Value],
}

impl ToolCheck<'_> {
    fn run(&self, f: &mut Findings) {
        let tool_desc = crate::place::owner(self.ptr, self.doc).unwrap_or_default();
        // Node ids as written (even in nodes that are otherwise malformed), first one wins.
        let mut ids: HashMap<&str, usize> = HashMap::new();
        for (j, node) in self.nodes.iter().enumerate() {
            let Some(id) = node.get("id").and_then(Value::as_str) else {
                continue;
            };
            if let Some(&first) = ids.get(id) {
                let at = line_of(self.sources, &self.node_ptr(first));
                f.errors.push(
                    Problem::new(
                        format!("{}/id", self.node_ptr(j)),
                        format!("duplicate node id \"{id}\" in {tool_desc}"),
                    )
                    .hint(format!(
                        "node ids must be unique in a tool; the first \"{id}\" is{at}"
                    )),
                );
            } else {
                ids.insert(id, j);
            }
        }
        let typed: Vec<Option<Node>> = self
            .nodes
            .iter()
            .map(|n| serde_json::from_value(n.clone()).ok())
            .collect();
        let entry = self.check_unique(f, "entry", &tool_desc);
        let exit = self.check_unique(f, "exit", &tool_desc);
        let mut dangling = false;
        for (j, node) in typed.iter().enumerate() {
            let Some(node) = node else { continue };
            for (ptr, target) in successor_pointers(node, &self.node_ptr(j)) {
                if !ids.contains_key(target) {
                    dangling = true;
                    f.errors
                        .push(self.dangling(&ptr, node.id(), target, &ids, &tool_desc));
                }
            }
            self.check_node(node, j, f);
        }
        let complete = typed.iter().all(Option::is_some);
        if let (Some(entry), Some(exit), true) = (entry, exit, complete) {
            self.reachability(&typed, &ids, entry, exit, dangling, f);
        }
        if complete && !dangling {
            self.chains(&typed, &ids, f);
        }
    }

    fn node_ptr(&self, j: usize) -> String {
        format!("{}/nodes/{j}", self.ptr)
    }

    /// Checks there is exactly one node of `kind`; returns its index when there is.
    fn check_unique(&self, f: &mut Findings, kind: &str, tool_desc: &str) -> Option<usize> {
        let found: Vec<usize> = (0..self.nodes.len())
            .filter(|&j| self.nodes[j].get("type").and_then(Value::as_str) == Some(kind))
            .collect();
        match found.as_slice() {
            [] => {
                let hint = if kind == "entry" {
                    "add a node `{id: entry, type: entry, next: <first node>}`; it receives the \
                     tool's arguments"
                } else {
                    "add a node `{id: exit, type: exit}`; the run returns what reaches it"
                };
                f.errors.push(
                    Problem::new(
                        format!("{}/nodes", self.ptr),
                        format!("{tool_desc} has no {kind} node"),
                    )
                    .hint(hint),
                );
                None
            }
            [one] => Some(*one),
            [first, rest @ ..] => {
                let first_id = self.nodes[*first].get("id").and_then(Value::as_str);
                let at = line_of(self.sources, &self.node_ptr(*first));
                for &j in rest {
                    f.errors.push(
                        Problem::new(
                            format!("{}/type", self.node_ptr(j)),
                            format!(
                                "{tool_desc} has more than one {kind} node: \"{}\" and \"{}\"",
                                first_id.unwrap_or("?"),
                                self.nodes[j]
                                    .get("id")
                                    .and_then(Value::as_str)
                                    .unwrap_or("?")
                            ),
                        )
                        .hint(format!(
                            "a tool has exactly one {kind} node; the first is{at}"
                        )),
                    );
                }
                None
            }
        }
    }

    fn dangling(
        &self,
        ptr: &str,
        from: &str,
        target: &str,
        ids: &HashMap<&str, usize>,
        tool_desc: &str,
    ) -> Problem {
        let mut known: Vec<&str> = ids.keys().copied().collect();
        known.sort_by_key(|id| ids[id]);
        let suggestion = did_you_mean(target, known.iter().copied());
        let hint = if known.len() <= 12 {
            format!("the nodes of this tool are: {}", known.join(", "))
        } else {
            "`next` must be the id of a node of the same tool".to_owned()
        };
        Problem::new(
            ptr,
            format!(
                "node \"{from}\" goes to \"{target}\", which is not a node of {tool_desc}{suggestion}"
            ),
        )
        .hint(hint)
    }

    /// Every branch of a `parallel` must reach its join, and every `foreach` body must route
    /// back to its `foreach`; neither may run into the exit.
    fn chains(&self, typed: &[Option<Node>], ids: &HashMap<&str, usize>, f: &mut Findings) {
        for (j, node) in typed.iter().enumerate() {
            let (starts, end, what): (Vec<(String, &str)>, &str, &str) = match node {
                Some(Node::Parallel(p)) => (
                    p.branches
                        .iter()
                        .map(|(name, first)| {
                            (
                                format!("{}/branches/{}", self.node_ptr(j), escape(name)),
                                first.as_str(),
                            )
                        })
                        .collect(),
                    &p.next,
                    "its join",
                ),
                Some(Node::Foreach(e)) => (
                    vec![(format!("{}/body", self.node_ptr(j)), e.body.as_str())],
                    &e.id,
                    "its foreach node",
                ),
                _ => continue,
            };
            let Some(owner) = node.as_ref().map(Node::id) else {
                continue;
            };
            for (ptr, first) in starts {
                let (reaches_end, reaches_exit) = walk_chain(typed, ids, first, end);
                if reaches_exit {
                    f.errors.push(
                        Problem::new(
                            ptr.clone(),
                            format!(
                                "the chain that starts at \"{first}\" (of node \"{owner}\") runs into the exit node"
                            ),
                        )
                        .hint(format!("a branch or body ends by routing to {what} \"{end}\"")),
                    );
                } else if !reaches_end {
                    f.errors.push(
                        Problem::new(
                            ptr,
                            format!(
                                "the chain that starts at \"{first}\" (of node \"{owner}\") never reaches {what} \"{end}\""
                            ),
                        )
                        .hint(format!("route the chain's last node to \"{end}\"")),
                    );
                }
            }
        }
    }

    fn check_node(&self, node: &Node, j: usize, f: &mut Findings) {
        let ptr = self.node_ptr(j);
        if node.options().retry.is_some() && !matches!(node, Node::Mcp(_) | Node::Call(_)) {
            f.errors.push(
                Problem::new(
                    format!("{ptr}/retry"),
                    format!(
                        "node \"{}\" is a {} node, which cannot be retried: expression errors are deterministic",
                        node.id(),
                        node.kind()
                    ),
                )
                .hint("`retry` applies to mcp and call nodes; use `onError` or `optional` here"),
            );
        }
        match node {
            Node::Call(c) => {
                if !self.tools.contains(&c.tool.as_str()) {
                    f.errors.push(
                        Problem::new(
                            format!("{ptr}/tool"),
                            format!(
                                "node \"{}\" calls tool \"{}\", which is not a tool of this config{}",
                                c.id,
                                c.tool,
                                did_you_mean(&c.tool, self.tools.iter().copied())
                            ),
                        )
                        .hint(format!("tools: {}", self.tools.join(", "))),
                    );
                }
            }
            Node::Mcp(m) => {
                if !self.servers.contains(&m.server.as_str()) {
                    let hint = if self.servers.is_empty() {
                        "no servers are defined: add one under `mcpServers`, or pass an mcp.json \
                         with -m"
                            .to_owned()
                    } else {
                        format!("servers defined: {}", self.servers.join(", "))
                    };
                    f.errors.push(
                        Problem::new(
                            format!("{ptr}/server"),
                            format!(
                                "node \"{}\" calls server \"{}\", which is not in mcpServers{}",
                                m.id,
                                m.server,
                                did_you_mean(&m.server, self.servers.iter().copied())
                            ),
                        )
                        .hint(hint),
                    );
                }
            }
            Node::Await(a) => {
                let schema_ptr = format!("{ptr}/inputSchema");
                check_json_schema(&a.input_schema, &schema_ptr, "inputSchema", self.doc, f);
            }
            Node::Entry(_)
            | Node::Exit(_)
            | Node::Transform(_)
            | Node::Switch(_)
            | Node::Parallel(_)
            | Node::Foreach(_)
            | Node::Script(_) => {}
        }
    }

    fn reachability(
        &self,
        typed: &[Option<Node>],
        ids: &HashMap<&str, usize>,
        entry: usize,
        exit: usize,
        dangling: bool,
        f: &mut Findings,
    ) {
        let mut seen = HashSet::from([entry]);
        let mut queue = VecDeque::from([entry]);
        while let Some(j) = queue.pop_front() {
            let Some(node) = &typed[j] else { continue };
            for next in node.successors() {
                if let Some(&k) = ids.get(next)
                    && seen.insert(k)
                {
                    queue.push_back(k);
                }
            }
        }
        let id_of = |j: usize| typed[j].as_ref().map_or("?", Node::id);
        if !seen.contains(&exit) && !dangling {
            f.errors.push(
                Problem::new(
                    self.node_ptr(exit),
                    format!(
                        "the exit node \"{}\" cannot be reached from the entry node \"{}\"",
                        id_of(exit),
                        id_of(entry)
                    ),
                )
                .hint("follow the `next` keys from the entry: no path leads to the exit"),
            );
        }
        for j in 0..typed.len() {
            if !seen.contains(&j) && j != exit && ids.get(id_of(j)) == Some(&j) {
                f.warnings.push(
                    Problem::new(
                        self.node_ptr(j),
                        format!(
                            "node \"{}\" cannot be reached from the entry node \"{}\" and never runs",
                            id_of(j),
                            id_of(entry)
                        ),
                    )
                    .hint("point a `next` at it, or remove it"),
                );
            }
        }
    }
}

/// The pointer of every `next` of a node, with the id it names.
fn successor_pointers<'n>(node: &'n Node, ptr: &str) -> Vec<(String, &'n str)> {
    let mut out = route_pointers(node, ptr);
    match node {
        Node::Parallel(p) => out.extend(
            p.branches
                .iter()
                .map(|(name, first)| (format!("{ptr}/branches/{}", escape(name)), first.as_str())),
        ),
        Node::Foreach(e) => out.push((format!("{ptr}/body"), e.body.as_str())),
        _ => {}
    }
    if let Some(target) = &node.options().on_error {
        out.push((format!("{ptr}/onError"), target.as_str()));
    }
    out
}

fn route_pointers<'n>(node: &'n Node, ptr: &str) -> Vec<(String, &'n str)> {
    match node {
        Node::Exit(_) => Vec::new(),
        Node::Switch(s) => s
            .conditions
            .iter()
            .enumerate()
            .map(|(k, c)| (format!("{ptr}/conditions/{k}/next"), c.next.as_str()))
            .chain(std::iter::once((format!("{ptr}/next"), s.next.as_str())))
            .collect(),
        other => other
            .routes()
            .into_iter()
            .map(|n| (format!("{ptr}/next"), n))
            .collect(),
    }
}
