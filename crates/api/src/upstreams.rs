//! `GET /api/upstreams`: the upstream MCP servers the config declares and their tools with
//! their schemas, as the engine's pool knows them (its one tool cache per upstream, which `mcp`
//! nodes, the gateway and the authoring tools share). What the web UI's upstreams view draws.
//! An upstream that cannot be reached is listed with why, never an error of the whole answer.

use axum::extract::State;
use axum::response::Response;
use serde_json::{Value as Json, json};

use crate::Api;
use crate::http::ok;

pub async fn list(State(api): State<Api>) -> Response {
    let engine = api.engine();
    let pool = engine.pool().clone();
    let names = pool.servers();
    let answers = futures::future::join_all(names.into_iter().map(|name| {
        let pool = pool.clone();
        async move {
            // The tools first: listing starts the upstream if it has not started yet.
            let tools = pool.list_tools(&name).await;
            let info = match &tools {
                Ok(_) => pool.server_info(&name).await.ok(),
                Err(_) => None,
            };
            (name, info, tools)
        }
    }))
    .await;
    let upstreams: Vec<Json> = answers
        .into_iter()
        .map(|(name, info, tools)| match tools {
            Ok(tools) => {
                let tools: Vec<Json> = tools
                    .into_iter()
                    .map(|t| {
                        let mut o = json!({"name": t.name, "inputSchema": t.input_schema});
                        if let Some(v) = t.title {
                            o["title"] = json!(v);
                        }
                        if let Some(v) = t.description {
                            o["description"] = json!(v);
                        }
                        if let Some(v) = t.output_schema {
                            o["outputSchema"] = v;
                        }
                        if let Some(v) = t.annotations {
                            o["annotations"] = v;
                        }
                        o
                    })
                    .collect();
                let mut u = json!({"name": name, "status": "connected", "tools": tools});
                if let Some(info) = info {
                    u["server"] = json!({
                        "name": info.name,
                        "version": info.version,
                        "protocolVersion": info.protocol_version,
                    });
                }
                u
            }
            Err(e) => json!({
                "name": name,
                "status": "unavailable",
                "error": e.to_string(),
                "tools": [],
            }),
        })
        .collect();
    ok(&json!({ "upstreams": upstreams }))
}
