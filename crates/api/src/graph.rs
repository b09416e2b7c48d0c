//! Graph tools as drawable graphs: nodes (type, a one-line label, where they are written in
//! the YAML), typed edges (next, switch conditions and default, parallel branches and join,
//! foreach body, onError), the nodes inside each branch and foreach body, and call targets.

use std::collections::{HashMap, HashSet, VecDeque};

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value as Json, json};

use crate::Api;
use crate::error::ApiError;
use crate::http::ok;

pub async fn list_tools(State(api): State<Api>) -> Response {
    let engine = api.engine();
    let tools: Vec<Json> = engine
        .graphs()
        .map(|g| {
            json!({
                "name": g.name(),
                "description": g.tool.description,
                "nodes": g.tool.nodes.len(),
            })
        })
        .collect();
    ok(&json!({ "tools": tools }))
}

pub async fn tool_graph(State(api): State<Api>, Path(tool): Path<String>) -> Response {
    let engine = api.engine();
    let Some((index, graph)) = engine.graphs().enumerate().find(|(_, g)| g.name() == tool) else {
        let known: Vec<&str> = engine.graphs().map(|g| g.name()).collect();
        return ApiError::not_found(format!(
            "no graph tool `{tool}`; this server has: {}",
            known.join(", ")
        ))
        .into_response();
    };
    let nodes = serde_json::to_value(&graph.tool.nodes).unwrap_or(Json::Null);
    let nodes = nodes.as_array().cloned().unwrap_or_default();
    let mut drawn = draw(&api, graph.name(), index, &nodes);
    // What a client needs to run the tool (a form from its schema) and to show it.
    drawn["description"] = json!(graph.tool.description);
    drawn["inputSchema"] = graph.tool.input_schema.clone();
    ok(&drawn)
}

fn text(v: &Json, key: &str) -> Option<String> {
    v.get(key).and_then(Json::as_str).map(str::to_owned)
}

fn draw(api: &Api, tool: &str, tool_index: usize, nodes: &[Json]) -> Json {
    let mut drawn = Vec::with_capacity(nodes.len());
    let mut edges = Vec::new();
    let mut calls = Vec::new();
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    let mut scopes = Vec::new();
    for (j, node) in nodes.iter().enumerate() {
        let id = text(node, "id").unwrap_or_default();
        let kind = text(node, "type").unwrap_or_default();
        let pointer = format!("/tools/{tool_index}/nodes/{j}");
        let mut edge = |to: Option<String>, kind: &str, extra: Json| {
            if let Some(to) = to {
                out.entry(id.clone()).or_default().push(to.clone());
                let mut e = json!({"from": id, "to": to, "kind": kind});
                if let (Json::Object(e), Json::Object(extra)) = (&mut e, extra) {
                    e.extend(extra);
                }
                edges.push(e);
            }
        };
        let label = match kind.as_str() {
            "mcp" => format!(
                "{}.{}",
                text(node, "server").unwrap_or_default(),
                text(node, "tool").unwrap_or_default()
            ),
            "transform" => node
                .pointer("/transform/expr")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_owned(),
            "foreach" => text(node, "items").unwrap_or_default(),
            "call" => text(node, "tool").unwrap_or_default(),
            _ => String::new(),
        };
        match kind.as_str() {
            "switch" => {
                let conditions = node.get("conditions").and_then(Json::as_array);
                for (k, c) in conditions.into_iter().flatten().enumerate() {
                    let rule = c.get("rule").cloned().unwrap_or(Json::Null);
                    edge(
                        text(c, "next"),
                        "condition",
                        json!({"condition": rule, "order": k}),
                    );
                }
                edge(text(node, "next"), "default", json!({}));
            }
            "parallel" => {
                let branches = node.get("branches").and_then(Json::as_object);
                for (name, first) in branches.into_iter().flatten() {
                    let first = first.as_str().map(str::to_owned);
                    edge(first.clone(), "branch", json!({"branch": name}));
                    scopes.push((id.clone(), Some(name.clone()), first, text(node, "next")));
                }
                edge(text(node, "next"), "join", json!({}));
            }
            "foreach" => {
                edge(text(node, "body"), "body", json!({}));
                edge(text(node, "next"), "next", json!({}));
                scopes.push((id.clone(), None, text(node, "body"), Some(id.clone())));
            }
            _ => edge(text(node, "next"), "next", json!({})),
        }
        edge(text(node, "onError"), "onError", json!({}));
        if kind == "call" {
            calls.push(json!({"from": id, "tool": text(node, "tool")}));
        }
        let mut d = json!({
            "id": id,
            "type": kind,
            "label": label,
            "pointer": pointer,
            "definition": node,
        });
        if let Some(p) = api.locate(&pointer) {
            d["position"] = json!(p);
        }
        if kind == "call" {
            d["calls"] = json!(text(node, "tool"));
        }
        drawn.push(d);
    }
    let mut branches = Vec::new();
    let mut bodies = Vec::new();
    for (owner, branch, first, stop) in scopes {
        let inside = reach(&out, first, stop.as_deref());
        match branch {
            Some(name) => {
                branches.push(json!({"parallel": owner, "branch": name, "nodes": inside}))
            }
            None => bodies.push(json!({"foreach": owner, "nodes": inside})),
        }
    }
    json!({
        "tool": tool,
        "nodes": drawn,
        "edges": edges,
        "branches": branches,
        "foreachBodies": bodies,
        "calls": calls,
    })
}

/// The nodes reached from `first` without passing `stop` (a branch up to its join, a body up
/// to its foreach), in the order they are first reached.
fn reach(
    out: &HashMap<String, Vec<String>>,
    first: Option<String>,
    stop: Option<&str>,
) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut order = Vec::new();
    let mut queue: VecDeque<String> = first.into_iter().collect();
    while let Some(n) = queue.pop_front() {
        if Some(n.as_str()) == stop || !seen.insert(n.clone()) {
            continue;
        }
        if let Some(next) = out.get(&n) {
            queue.extend(next.iter().cloned());
        }
        order.push(n);
    }
    order
}
