//! `mcpflow_search`: one scored search over graph tools, upstream tools and node types, with
//! the scores of GraphJin's MCP search: a name equal to the query 100, starting with it 90,
//! containing it 70, every query word starting a word of the name 60, the query's characters
//! in order in the name up to 50. Titles, descriptions and parameter names are searched too,
//! below a name match, so "read file" finds `read_text_file` and a tool that only mentions files.

use serde_json::{Value, json};

use crate::Served;
use crate::answer::Answer;
use crate::args::Args;
use crate::catalog::NODE_TYPES;
use crate::tools::SEARCH_KINDS;

/// Results below this are noise.
const MIN_SCORE: u32 = 25;
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 100;

/// One thing that can be found.
struct Item {
    kind: &'static str,
    name: String,
    server: Option<String>,
    title: Option<String>,
    description: String,
    params: Vec<String>,
    aliases: Vec<String>,
}

/// Lower case, with `_ - . /` and spaces as single spaces: `read_text-file` → `read text file`.
fn norm(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last_space = true;
    for c in s.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
            last_space = false;
        } else if !last_space {
            out.push(' ');
            last_space = true;
        }
    }
    out.trim_end().to_owned()
}

/// The seed's score of a name for a query (both normalised by [`norm`]).
pub(crate) fn name_score(query: &str, name: &str) -> u32 {
    let (q, t) = (norm(query), norm(name));
    if q.is_empty() || t.is_empty() {
        return 0;
    }
    if t == q || t.replace(' ', "") == q.replace(' ', "") {
        return 100;
    }
    if t.starts_with(&q) {
        return 90;
    }
    if t.contains(&q) || t.replace(' ', "").contains(&q.replace(' ', "")) {
        return 70;
    }
    let words: Vec<&str> = t.split(' ').collect();
    if q.split(' ')
        .all(|qw| words.iter().any(|w| w.starts_with(qw)))
    {
        return 60;
    }
    fuzzy(&q.replace(' ', ""), &t.replace(' ', ""))
}

/// Up to 50: the query's characters found in order in the name (more of the name covered
/// scores higher), else a close spelling (Jaro-Winkler).
fn fuzzy(q: &str, t: &str) -> u32 {
    let mut chars = t.chars();
    let in_order = q.chars().all(|qc| chars.any(|tc| tc == qc));
    let (ql, tl) = (q.chars().count() as f64, t.chars().count().max(1) as f64);
    let subsequence = if in_order && ql >= 3.0 {
        (10.0 + 40.0 * (ql / tl).min(1.0)).round() as u32
    } else {
        0
    };
    let jw = strsim::jaro_winkler(q, t);
    let close = if jw >= 0.88 {
        (jw * 50.0).floor() as u32
    } else {
        0
    };
    subsequence.max(close).min(50)
}

/// Below any name match: a query met in the description or the parameters.
fn text_score(query: &str, text: &str) -> u32 {
    let (q, t) = (norm(query), norm(text));
    if q.is_empty() || t.is_empty() {
        return 0;
    }
    if t.contains(&q) {
        return 40;
    }
    let words: Vec<&str> = t.split(' ').collect();
    if q.split(' ')
        .all(|qw| words.iter().any(|w| w.starts_with(qw)))
    {
        return 30;
    }
    0
}

/// The best score of an item, and what matched.
fn score(query: &str, item: &Item) -> (u32, &'static str) {
    let mut best = (name_score(query, &item.name), "name");
    let mut consider = |s: u32, what: &'static str| {
        if s > best.0 {
            best = (s, what);
        }
    };
    if let Some(title) = &item.title {
        consider(name_score(query, title).saturating_sub(5), "title");
    }
    for alias in &item.aliases {
        consider(name_score(query, alias).saturating_sub(15), "alias");
    }
    for p in &item.params {
        consider(name_score(query, p).min(90) / 2, "parameter");
    }
    consider(text_score(query, &item.description), "description");
    best
}

pub(crate) async fn answer(served: &Served, args: &Args<'_>) -> Answer {
    let query = args.str("query").unwrap_or_default();
    if norm(query).is_empty() {
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
        items.extend(served.engine.graphs().map(|g| Item {
            kind: "graphTool",
            name: g.tool.name.clone(),
            server: None,
            title: g.tool.title.clone(),
            description: g.tool.description.clone(),
            params: properties(&g.tool.input_schema),
            aliases: Vec::new(),
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
                Ok(tools) => items.extend(tools.into_iter().map(|t| Item {
                    kind: "upstreamTool",
                    params: properties(&t.input_schema),
                    name: t.name,
                    server: Some(server.clone()),
                    title: t.title,
                    description: t.description.unwrap_or_default(),
                    aliases: Vec::new(),
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
    let mut scored: Vec<(u32, &'static str, &Item)> = items
        .iter()
        .map(|i| {
            let (s, what) = score(query, i);
            (s, what, i)
        })
        .filter(|(s, _, _)| *s >= MIN_SCORE)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.name.cmp(&b.2.name)));
    let limit = args
        .integer("limit")
        .map_or(DEFAULT_LIMIT, |l| (l as usize).clamp(1, MAX_LIMIT));
    let total = scored.len();
    let results: Vec<Value> = scored
        .into_iter()
        .take(limit)
        .map(|(s, what, i)| {
            let mut v = json!({"kind": i.kind, "name": i.name, "score": s, "matched": what});
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

/// A schema's top-level property names.
fn properties(schema: &Value) -> Vec<String> {
    schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_follow_the_seed() {
        assert_eq!(name_score("read_file", "read_file"), 100);
        assert_eq!(name_score("read file", "read_file"), 100);
        assert_eq!(name_score("read", "read_file"), 90);
        assert_eq!(name_score("file", "read_file"), 70);
        assert_eq!(name_score("file read", "read_text_file"), 60);
        let fuzzy = name_score("rdfl", "read_file");
        assert!(fuzzy > 0 && fuzzy <= 50, "{fuzzy}");
        assert_eq!(name_score("zzz", "read_file"), 0);
    }

    #[test]
    fn a_name_match_beats_a_description_match() {
        let item = |name: &str, description: &str| Item {
            kind: "graphTool",
            name: name.into(),
            server: None,
            title: None,
            description: description.into(),
            params: Vec::new(),
            aliases: Vec::new(),
        };
        let by_name = score("directory", &item("list_directory", ""));
        let by_text = score("directory", &item("ls", "lists a directory"));
        assert!(by_name.0 > by_text.0, "{by_name:?} {by_text:?}");
        assert_eq!(by_text.1, "description");
    }
}
