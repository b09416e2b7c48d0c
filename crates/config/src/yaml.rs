//! YAML text → a JSON value plus the position of every node, within input budgets.
//!
//! serde-saphyr parses (YAML 1.2 core schema, merge keys, anchors) and enforces the budgets;
//! this module turns its position-carrying tree into `serde_json::Value` and a pointer map, and
//! reports duplicate keys itself so that all of them are found, not only the first.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{Error as YamlError, MessageFormatter, Spanned};

use crate::source::{Anchor, Pos, Problem, Span};

/// Largest config file accepted, in bytes. Configs are hand-written; anything near this is a
/// mistake or an attack.
pub const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;
/// Deepest nesting of mappings and sequences accepted.
pub const MAX_DEPTH: usize = 64;
/// Most YAML nodes accepted, counting every node an alias expands to ("billion laughs").
pub const MAX_NODES: usize = 100_000;
/// Most events replayed by aliases.
pub const MAX_ALIAS_REPLAY: usize = 100_000;

/// One YAML node with its children's positions.
enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Uint(v))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Float(v as f64))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        Ok(Node::Float(v as f64))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Node, E> {
        String::from_utf8(v.to_vec())
            .map(Node::Str)
            .map_err(|_| E::custom("binary data that is not UTF-8 text"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

/// A parsed document: its value, and problems that did not stop parsing (duplicate keys).
pub(crate) struct Parsed {
    pub value: Value,
    /// Every node's position, by JSON pointer.
    pub spans: Vec<(String, Span)>,
    pub problems: Vec<Problem>,
}

/// Parses one YAML (or JSON) document, the text of source `file`. A syntax error or an exceeded
/// budget is the one problem returned.
pub(crate) fn parse(text: &str, file: usize) -> Result<Parsed, Problem> {
    if text.len() > MAX_FILE_BYTES {
        return Err(Problem::new(
            "",
            format!(
                "the file is {} bytes; the limit is {MAX_FILE_BYTES}",
                text.len()
            ),
        )
        .at(Anchor::At(file, Pos { line: 1, col: 1 })));
    }
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: MAX_DEPTH,
            max_nodes: MAX_NODES,
            max_events: 4 * MAX_NODES,
            max_documents: 1,
            max_total_scalar_bytes: MAX_FILE_BYTES,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_ALIAS_REPLAY,
            max_replay_stack_depth: 16,
        },
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough,
        strict_booleans: true,
        reject_unsupported_tags: true,
        emit_comments: false,
        with_snippet: false,
    };
    let root: Spanned<Node> =
        serde_saphyr::from_str_with_options(text, options).map_err(|e| yaml_problem(&e, file))?;
    let mut builder = Builder {
        file,
        text,
        spans: Vec::new(),
        problems: Vec::new(),
    };
    let value = builder.convert(root, String::new(), None);
    Ok(Parsed {
        value,
        spans: builder.spans,
        problems: builder.problems,
    })
}

struct Builder<'a> {
    file: usize,
    text: &'a str,
    spans: Vec<(String, Span)>,
    problems: Vec<Problem>,
}

impl Builder<'_> {
    fn record(&mut self, pointer: &str, key: Option<Pos>, node: &Spanned<Node>) {
        let loc = node.referenced;
        let value = Pos {
            line: loc.line().max(1) as u32,
            col: loc.column().max(1) as u32,
        };
        let span = loc.span();
        let bytes = match (span.byte_offset(), span.byte_len()) {
            (Some(start), Some(len)) if (start + len) as usize <= self.text.len() => {
                Some((start as usize, len as usize))
            }
            _ => None,
        };
        self.spans.push((
            pointer.to_owned(),
            Span {
                file: self.file,
                key,
                value,
                bytes,
            },
        ));
    }

    fn convert(&mut self, node: Spanned<Node>, pointer: String, key: Option<Pos>) -> Value {
        self.record(&pointer, key, &node);
        match node.value {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Int(i) => Value::from(i),
            Node::Uint(u) => Value::from(u),
            Node::Float(f) => float(f),
            Node::Str(s) => Value::String(s),
            Node::Seq(items) => Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| self.convert(item, format!("{pointer}/{i}"), None))
                    .collect(),
            ),
            Node::Map(entries) => {
                let mut map = Map::new();
                let mut seen: HashMap<String, Pos> = HashMap::new();
                for (k, v) in entries {
                    let key_pos = Pos {
                        line: k.referenced.line().max(1) as u32,
                        col: k.referenced.column().max(1) as u32,
                    };
                    let child = format!("{pointer}/{}", escape(&k.value));
                    if let Some(first) = seen.get(&k.value) {
                        self.problems.push(
                            Problem::new(child, format!("duplicate key \"{}\"", k.value))
                                .at(Anchor::At(self.file, key_pos))
                                .hint(format!(
                                    "\"{}\" is already set at line {}; remove one of them",
                                    k.value, first.line
                                )),
                        );
                        continue;
                    }
                    seen.insert(k.value.clone(), key_pos);
                    let value = self.convert(v, child, Some(key_pos));
                    map.insert(k.value, value);
                }
                Value::Object(map)
            }
        }
    }
}

/// JavaScript has one number type: `1.0` in YAML is the integer 1 to mcpGraph, so a float with
/// no fractional part becomes an integer here too (`maxNodeExecutions: 1000.0` is accepted).
fn float(f: f64) -> Value {
    const LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53: integers exact in an f64
    if f.fract() == 0.0 && f.abs() < LIMIT {
        return Value::from(f as i64);
    }
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// Escapes one JSON pointer segment (RFC 6901).
pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Turns a parser error into a problem at its position, in words meant for the file's author.
fn yaml_problem(e: &YamlError, file: usize) -> Problem {
    let inner = unwrap_error(e);
    let pos = e
        .location()
        .or_else(|| inner.location())
        .map(|l| Pos {
            line: l.line().max(1) as u32,
            col: l.column().max(1) as u32,
        })
        .unwrap_or(Pos { line: 1, col: 1 });
    let (message, hint) = describe(inner);
    Problem::new("", message)
        .hint_opt(hint)
        .at(Anchor::At(file, pos))
}

fn unwrap_error(e: &YamlError) -> &YamlError {
    match e {
        YamlError::AliasError { error, .. } => unwrap_error(error),
        YamlError::WithSnippet { error, .. } => unwrap_error(error),
        other => other,
    }
}

fn describe(e: &YamlError) -> (String, Option<String>) {
    const TOO_BIG: &str = "the config is too large or expands too much through anchors and \
                           aliases (a \"billion laughs\" file)";
    match e {
        YamlError::Budget { breach, .. } => match breach {
            BudgetBreach::Depth { .. } => (
                format!("YAML nested deeper than {MAX_DEPTH} levels"),
                Some("flatten the structure".into()),
            ),
            BudgetBreach::Documents { .. } => one_document(),
            _ => (
                format!("YAML rejected: {TOO_BIG}"),
                Some(format!(
                    "a config may hold at most {MAX_NODES} values after alias expansion"
                )),
            ),
        },
        YamlError::AliasReplayLimitExceeded { .. }
        | YamlError::AliasExpansionLimitExceeded { .. }
        | YamlError::AliasReplayStackDepthExceeded { .. }
        | YamlError::AliasReplayCounterOverflow { .. } => {
            (format!("YAML rejected: {TOO_BIG}"), None)
        }
        YamlError::MultipleDocuments { .. } => one_document(),
        YamlError::UnknownAnchor { .. } => (
            "alias refers to an anchor that is not defined before it".into(),
            Some("define `&name` before using `*name`".into()),
        ),
        _ => {
            let text = serde_saphyr::UserMessageFormatter.format_message(e);
            (format!("invalid YAML: {text}"), None)
        }
    }
}

fn one_document() -> (String, Option<String>) {
    (
        "the file holds more than one YAML document".into(),
        Some("a config is a single document: remove the `---` separator".into()),
    )
}
