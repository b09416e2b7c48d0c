//! Discovery: the upstream servers a config declares and their tools (through the engine's
//! [`UpstreamPool`](mcpflow_upstream::UpstreamPool), whose one tool cache per upstream every
//! reader shares), and the graph tools the engine runs.

use std::collections::BTreeSet;

use mcpflow_model::{McpServer, Node, RemoteKind, ToolDef};
use mcpflow_upstream::ToolInfo;
use serde_json::{Value, json};

use crate::Served;
use crate::answer::Answer;
use crate::args::{Args, closest};

pub(crate) async fn upstreams(served: &Served) -> Answer {
    let pool = served.engine.pool();
    let infos = futures::future::join_all(
        served
            .config
            .mcp_servers
            .keys()
            .map(|name| async move { (name, pool.server_info(name).await) }),
    )
    .await;
    let servers: Vec<Value> = infos
        .into_iter()
        .map(|(name, info)| {
            let transport = match served.config.mcp_servers.get(name) {
                Some(McpServer::Stdio(_)) | None => "stdio",
                Some(McpServer::Remote(r)) => match r.kind {
                    RemoteKind::StreamableHttp => "streamableHttp",
                    RemoteKind::Sse => "sse",
                },
            };
            let mut s = json!({"name": name, "transport": transport});
            match info {
                Ok(info) => {
                    s["status"] = json!("connected");
                    s["title"] = json!(info.name);
                    s["version"] = json!(info.version);
                    s["protocolVersion"] = json!(info.protocol_version);
                    if let Some(i) = info.instructions {
                        s["instructions"] = json!(i);
                    }
                }
                Err(e) => {
                    s["status"] = json!("unavailable");
                    s["error"] = json!(e.to_string());
                }
            }
            s
        })
        .collect();
    let mut out = json!({"servers": servers});
    if served.config.mcp_servers.is_empty() {
        out["note"] = json!(
            "this config declares no upstream servers: add them under `mcpServers` to call their tools from mcp nodes"
        );
    } else {
        out["next"] = json!("mcpflow_list_upstream_tools {\"server\": ...} lists a server's tools");
    }
    Answer::Ok(out)
}

/// `server` checked against the declared ones, with a "did you mean".
fn known_server<'a>(served: &'a Served, server: &str) -> Result<&'a str, Answer> {
    if let Some((name, _)) = served.config.mcp_servers.get_key_value(server) {
        return Ok(name);
    }
    Err(Answer::Refused(format!(
        "{} (mcpflow_list_upstreams lists them)",
        unknown_server(served, server)
    )))
}

/// Why `server` is no declared upstream: its name and a "did you mean", or the names there are.
pub(crate) fn unknown_server(served: &Served, server: &str) -> String {
    let names: Vec<&str> = served
        .config
        .mcp_servers
        .keys()
        .map(String::as_str)
        .collect();
    let hint = match closest(server, names.iter().copied()) {
        Some(c) => format!("did you mean \"{c}\"?"),
        None if names.is_empty() => "this config declares no upstream servers".to_owned(),
        None => format!("the servers are: {}", names.join(", ")),
    };
    format!("no upstream server named \"{server}\"; {hint}")
}

pub(crate) async fn upstream_tools(served: &Served, args: &Args<'_>) -> Answer {
    let servers: Vec<&str> = match args.str("server") {
        Some(s) => match known_server(served, s) {
            Ok(s) => vec![s],
            Err(a) => return a,
        },
        None => served
            .config
            .mcp_servers
            .keys()
            .map(String::as_str)
            .collect(),
    };
    let pool = served.engine.pool();
    let listed = futures::future::join_all(
        servers
            .iter()
            .map(|s| async move { (*s, pool.list_tools(s).await) }),
    )
    .await;
    let mut tools = Vec::new();
    let mut errors = Vec::new();
    for (server, result) in listed {
        match result {
            Ok(list) => tools.extend(list.iter().map(|t| {
                let mut v = json!({"server": server, "name": t.name});
                if let Some(title) = &t.title {
                    v["title"] = json!(title);
                }
                if let Some(d) = &t.description {
                    v["description"] = json!(d);
                }
                v
            })),
            Err(e) => errors.push(json!({"server": server, "error": e.to_string()})),
        }
    }
    let mut out = json!({
        "tools": tools,
        "next": "mcpflow_get_upstream_tool {\"server\": ..., \"tool\": ...} shows a tool's schemas",
    });
    if !errors.is_empty() {
        out["unavailable"] = json!(errors);
    }
    Answer::Ok(out)
}

pub(crate) async fn upstream_tool(served: &Served, args: &Args<'_>) -> Answer {
    let (Some(server), Some(tool)) = (args.str("server"), args.str("tool")) else {
        return Answer::Refused("both `server` and `tool` are required".into());
    };
    let server = match known_server(served, server) {
        Ok(s) => s,
        Err(a) => return a,
    };
    let list = match served.engine.pool().list_tools(server).await {
        Ok(l) => l,
        Err(e) => return Answer::Refused(format!("cannot list the tools of \"{server}\": {e}")),
    };
    let Some(info) = list.iter().find(|t| t.name == tool) else {
        let names: Vec<&str> = list.iter().map(|t| t.name.as_str()).collect();
        let hint = match closest(tool, names.iter().copied()) {
            Some(c) => format!("did you mean \"{c}\"?"),
            None => format!("its tools are: {}", names.join(", ")),
        };
        return Answer::Refused(format!(
            "upstream \"{server}\" has no tool named \"{tool}\"; {hint}"
        ));
    };
    Answer::Ok(json!({
        "server": server,
        "name": info.name,
        "title": info.title,
        "description": info.description,
        "inputSchema": info.input_schema,
        "outputSchema": info.output_schema,
        "annotations": info.annotations,
        "node": example_node(server, info),
        "output": if info.output_schema.is_some() {
            "an mcp node's output is the tool's structuredContent, which matches outputSchema"
        } else {
            "an mcp node's output is the first text block parsed as JSON, else the text itself; test it with mcpflow_call_upstream when that is enabled"
        },
    }))
}

/// An mcp node calling `info`, each required argument read from the entry node.
fn example_node(server: &str, info: &ToolInfo) -> Value {
    let required: Vec<&str> = info.input_schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let args: serde_json::Map<String, Value> = required
        .iter()
        .map(|r| ((*r).to_owned(), json!({"expr": format!("entry.{r}")})))
        .collect();
    json!({
        "id": info.name.replace(|c: char| !c.is_alphanumeric() && c != '_', "_"),
        "type": "mcp",
        "server": server,
        "tool": info.name,
        "args": args,
        "next": "<next node id>",
    })
}

pub(crate) fn graph_tools(served: &Served) -> Answer {
    let tools: Vec<Value> = served
        .engine
        .graphs()
        .map(|g| {
            let t = &g.tool;
            let mut v = json!({
                "name": t.name,
                "description": t.description,
                "nodes": t.nodes.len(),
                "calls": calls(t),
            });
            if let Some(title) = &t.title {
                v["title"] = json!(title);
            }
            v
        })
        .collect();
    let mut out = json!({"tools": tools});
    if tools_empty(&out) {
        out["note"] = json!("no graph tools yet: mcpflow_syntax shows how to write one");
    } else {
        out["next"] =
            json!("mcpflow_get_graph_tool {\"name\": ...} shows a tool's full definition");
    }
    Answer::Ok(out)
}

fn tools_empty(out: &Value) -> bool {
    out["tools"].as_array().is_none_or(Vec::is_empty)
}

/// The upstream tools (`server/tool`) and graph tools (`call:tool`) a tool calls.
pub(crate) fn calls(t: &ToolDef) -> Vec<String> {
    let mut out = BTreeSet::new();
    for n in &t.nodes {
        match n {
            Node::Mcp(m) => {
                out.insert(format!("{}/{}", m.server, m.tool));
            }
            Node::Call(c) => {
                out.insert(format!("call:{}", c.tool));
            }
            _ => {}
        }
    }
    out.into_iter().collect()
}

pub(crate) fn graph_tool(served: &Served, args: &Args<'_>) -> Answer {
    let name = args.str("name").unwrap_or_default();
    match served.engine.graph(name) {
        Some(g) => Answer::Ok(json!({
            "definition": g.tool,
            "next": "edit it and check it with mcpflow_validate_tool; run it with mcpflow_run_tool",
        })),
        None => {
            let names: Vec<&str> = served.engine.graphs().map(|g| g.name()).collect();
            let hint = match closest(name, names.iter().copied()) {
                Some(c) => format!("did you mean \"{c}\"?"),
                None if names.is_empty() => "this server has no graph tools yet".to_owned(),
                None => format!("the graph tools are: {}", names.join(", ")),
            };
            Answer::Refused(format!("no graph tool named \"{name}\"; {hint}"))
        }
    }
}
