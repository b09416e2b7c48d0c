//! `mcpflow_search`: one scored search over graph tools, upstream tools and node types. The
//! scoring (GraphJin's: exact 100, prefix 90, contains 70, word 60, fuzzy up to 50) is
//! [`mcpflow_upstream::search`], shared with the gateway's tool search; this file only gathers
//! the items.

use mcpflow_upstream::search::{Item, MIN_SCORE, search, searchable};
use serde_json::{Value, json};

use crate::Served;
use crate::answer::Answer;
use crate::args::Args;
use crate::catalog::NODE_TYPES;
use crate::tools::SEARCH_KINDS;

const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 100;

pub(crate) async fn answer(served: &Served, args: &Args<'_>) -> Answer {
    let query = args.str("query").unwrap_or_default();
    if !searchable(query) {
        return Answer::Refused(
            "mcpflow_search: `query` has no letters or digits to search for; e.g. {\"query\": \"list directory\"}".into(),
        );
    }
    let kinds = args.strings("kinds");
    if let Some(bad) = kinds.iter().find(|k| !SEARCH_KINDS.contains(k)) {
        return Answer::Refused(format!(
            "mcpflow_search: unknown kind \"{bad}\"; `kinds` takes {}",
            SEARCH_KINDS.join(", ")
        ));
    }
    let wanted = |k: &str| kinds.is_empty() || kinds.contains(&k);
    let mut items = Vec::new();
    let mut unavailable = Vec::new();
    if wanted("graphTool") {
        items.extend(served.engine.graphs().map(|g| {
            Item::tool(
                "graphTool",
                None,
                &g.tool.name,
                g.tool.title.as_deref(),
                Some(&g.tool.description),
                &g.tool.input_schema,
            )
        }));
    }
    if wanted("upstreamTool") {
        let pool = served.engine.pool();
        let listed = futures::future::join_all(
            served
                .config
                .mcp_servers
                .keys()
                .map(|s| async move { (s, pool.list_tools(s).await) }),
        )
        .await;
        for (server, result) in listed {
            match result {
                Ok(tools) => items.extend(tools.iter().map(|t| {
                    Item::tool(
                        "upstreamTool",
                        Some(server),
                        &t.name,
                        t.title.as_deref(),
                        t.description.as_deref(),
                        &t.input_schema,
                    )
                })),
                Err(e) => unavailable.push(json!({"server": server, "error": e.to_string()})),
            }
        }
    }
    if wanted("nodeType") {
        items.extend(NODE_TYPES.iter().map(|t| {
            Item {
                kind: "nodeType",
                name: t.name.to_owned(),
                server: None,
                title: None,
                description: t.summary.to_owned(),
                params: crate::node_schema::fields(t.name)
                    .0
                    .iter()
                    .filter_map(|f| f["name"].as_str().map(str::to_owned))
                    .collect(),
                aliases: t.aliases.iter().map(|a| (*a).to_owned()).collect(),
            }
        }));
    }
    let scored = search(query, &items);
    let limit = args
        .integer("limit")
        .map_or(DEFAULT_LIMIT, |l| (l as usize).clamp(1, MAX_LIMIT));
    let total = scored.len();
    let results: Vec<Value> = scored
        .into_iter()
        .take(limit)
        .map(|hit| {
            let i = hit.item;
            let mut v =
                json!({"kind": i.kind, "name": i.name, "score": hit.score, "matched": hit.matched});
            if let Some(server) = &i.server {
                v["server"] = json!(server);
            }
            if !i.description.is_empty() {
                let d: String = i.description.chars().take(200).collect();
                v["description"] = json!(d);
            }
            v
        })
        .collect();
    let mut out = json!({"query": query, "results": results, "total": total});
    if total == 0 {
        out["note"] = json!(format!(
            "nothing scored {MIN_SCORE} or more: try a shorter query or a single word"
        ));
    }
    if !unavailable.is_empty() {
        out["unavailable"] = json!(unavailable);
    }
    Answer::Ok(out)
}
