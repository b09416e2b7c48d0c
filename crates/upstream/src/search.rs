//! The one scored search over tools (and whatever else a caller lists), shared by the
//! authoring toolkit's `mcpflow_search` and the gateway's tool search, with the scores of
//! GraphJin's MCP search: a name equal to the query 100, starting with it 90, containing it
//! 70, every query word starting a word of the name 60, the query's characters in order in the
//! name up to 50. Titles, aliases, parameter names and descriptions are searched too, below a
//! name match, so "read file" finds `read_text_file` and a tool that only mentions files.
//!
//! Plain data in, plain data out: no rmcp type crosses this module.

use serde_json::Value;

/// Results below this are noise.
pub const MIN_SCORE: u32 = 25;

/// One thing that can be found.
#[derive(Debug, Clone, Default)]
pub struct Item {
    /// What it is (`graphTool`, `upstreamTool`, `nodeType`, …): shown, never scored.
    pub kind: &'static str,
    pub name: String,
    /// The upstream that serves it, for tools of one.
    pub server: Option<String>,
    pub title: Option<String>,
    pub description: String,
    /// Parameter (or field) names.
    pub params: Vec<String>,
    /// Other names it is known by, scored below the name.
    pub aliases: Vec<String>,
}

impl Item {
    /// A tool: its name, title, description and the top-level properties of its input schema.
    pub fn tool(
        kind: &'static str,
        server: Option<&str>,
        name: &str,
        title: Option<&str>,
        description: Option<&str>,
        input_schema: &Value,
    ) -> Item {
        Item {
            kind,
            name: name.to_owned(),
            server: server.map(str::to_owned),
            title: title.map(str::to_owned),
            description: description.unwrap_or_default().to_owned(),
            params: properties(input_schema),
            aliases: Vec::new(),
        }
    }
}

/// One item that scored [`MIN_SCORE`] or more.
#[derive(Debug, Clone, Copy)]
pub struct Hit<'a> {
    pub score: u32,
    /// What matched best: `name`, `title`, `alias`, `parameter` or `description`.
    pub matched: &'static str,
    pub item: &'a Item,
}

/// Whether `query` has anything to search for (a letter or a digit).
pub fn searchable(query: &str) -> bool {
    !norm(query).is_empty()
}

/// Every item scoring [`MIN_SCORE`] or more for `query`, best first (ties by name).
pub fn search<'a>(query: &str, items: &'a [Item]) -> Vec<Hit<'a>> {
    let mut hits: Vec<Hit<'a>> = items
        .iter()
        .map(|item| {
            let (score, matched) = score(query, item);
            Hit {
                score,
                matched,
                item,
            }
        })
        .filter(|h| h.score >= MIN_SCORE)
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .cmp(&a.score)
            .then_with(|| a.item.name.cmp(&b.item.name))
    });
    hits
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
pub fn name_score(query: &str, name: &str) -> u32 {
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
    use serde_json::json;

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
            description: description.into(),
            ..Item::default()
        };
        let by_name = score("directory", &item("list_directory", ""));
        let by_text = score("directory", &item("ls", "lists a directory"));
        assert!(by_name.0 > by_text.0, "{by_name:?} {by_text:?}");
        assert_eq!(by_text.1, "description");
    }

    #[test]
    fn hits_come_best_first_and_parameters_count() {
        let schema = json!({"type": "object", "properties": {"encoding": {"type": "string"}}});
        let items = [
            Item::tool(
                "t",
                Some("fs"),
                "write_file",
                None,
                Some("writes"),
                &json!({}),
            ),
            Item::tool("t", Some("fs"), "read_file", None, None, &json!({})),
            Item::tool("t", Some("fs"), "dump", None, None, &schema),
            Item::tool("t", Some("fs"), "zzz", None, None, &json!({})),
        ];
        let hits = search("read_file", &items);
        assert_eq!(hits[0].item.name, "read_file");
        assert_eq!(hits[0].score, 100);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(hits.iter().all(|h| h.item.name != "zzz"));
        let by_param = search("encoding", &items);
        assert_eq!(by_param.len(), 1);
        assert_eq!(
            (by_param[0].item.name.as_str(), by_param[0].matched),
            ("dump", "parameter")
        );
        assert!(!searchable(" _-/ "));
    }
}
