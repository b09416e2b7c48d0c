//! The node catalog (`mcpflow_node_types`, `mcpflow_node_details`): the node types
//! ([`crate::node_types`]) with their fields and JSON Schema ([`crate::node_schema`]) and
//! complete examples. Names a model gets nearly right (`Transform`, `MCP_NODE`, `jsonata`,
//! `if`) are corrected with a warning, never silently.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::answer::Answer;
use crate::args::{Args, Malformed, closest};
use crate::node_schema::{fields, node_schema};
pub(crate) use crate::node_types::NODE_TYPES;
use crate::node_types::NodeType;
use crate::tools::Spec;

/// The options every node accepts, listed once rather than in every node's fields.
pub(crate) const COMMON_OPTIONS: &[&str] = &["timeoutMs", "retry", "onError", "optional"];

/// What a submitted type name resolved to.
pub(crate) enum Resolved {
    Exact(&'static NodeType),
    Corrected {
        node: &'static NodeType,
        warning: String,
    },
    Unknown(String),
}

/// Resolves a node type name, correcting near misses with a warning.
pub(crate) fn resolve(name: &str) -> Resolved {
    if let Some(t) = NODE_TYPES.iter().find(|t| t.name == name) {
        return Resolved::Exact(t);
    }
    let key = normalize(name);
    let corrected = |node: &'static NodeType, why: &str| Resolved::Corrected {
        node,
        warning: format!(
            "\"{name}\" is not a node type; read as \"{}\" ({why}). Write `type: {}` exactly: \
             a config with \"{name}\" does not load.",
            node.name, node.name
        ),
    };
    if let Some(t) = NODE_TYPES.iter().find(|t| t.name == key) {
        return corrected(t, "node types are lower case, without a _NODE suffix");
    }
    if let Some(t) = NODE_TYPES
        .iter()
        .find(|t| t.aliases.contains(&key.as_str()))
    {
        return corrected(t, "that is what mcpflow calls this kind of node");
    }
    let names = NODE_TYPES.iter().map(|t| t.name);
    if let Some(c) = closest(&key, names)
        && let Some(t) = NODE_TYPES.iter().find(|t| t.name == c)
    {
        return corrected(t, "the closest name");
    }
    Resolved::Unknown(format!(
        "\"{name}\" is not a node type, nor close to one; the types are: {}",
        NODE_TYPES
            .iter()
            .map(|t| t.name)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The type a resolution found, its warning (a correction, or why nothing was found) kept.
fn found(resolved: Resolved, warnings: &mut Vec<String>) -> Option<&'static NodeType> {
    match resolved {
        Resolved::Exact(t) => Some(t),
        Resolved::Corrected { node, warning } => {
            warnings.push(warning);
            Some(node)
        }
        Resolved::Unknown(message) => {
            warnings.push(message);
            None
        }
    }
}

/// Lower case, without separators and a `node` suffix: `MCP_NODE` → `mcp`, `For-Each` → `foreach`.
fn normalize(name: &str) -> String {
    let lower: String = name
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    match lower.strip_suffix("node") {
        Some(rest) if !rest.is_empty() => rest.to_owned(),
        _ => lower,
    }
}

pub(crate) fn types(args: &Args<'_>) -> Answer {
    let filter = args.str("filter").map(str::to_lowercase);
    let mut warnings = Vec::new();
    let mut listed: Vec<Value> = NODE_TYPES
        .iter()
        .filter(|t| {
            filter.as_deref().is_none_or(|f| {
                t.name.contains(f)
                    || t.summary.to_lowercase().contains(f)
                    || t.aliases.iter().any(|a| a.contains(f))
            })
        })
        .map(|t| {
            let (_, required) = fields(t.name);
            json!({"type": t.name, "does": t.summary, "requiredFields": required})
        })
        .collect();
    // A filter that names a type the model half-knows ("IF") still finds it.
    if listed.is_empty()
        && let Some(f) = args.str("filter")
        && let Some(t) = found(resolve(f), &mut warnings)
    {
        let (_, required) = fields(t.name);
        listed.push(json!({"type": t.name, "does": t.summary, "requiredFields": required}));
    }
    let mut out = json!({
        "types": listed,
        "commonOptions": COMMON_OPTIONS,
        "next": "mcpflow_node_details gives a type's fields, JSON Schema and complete examples.",
    });
    if !warnings.is_empty() {
        out["warnings"] = json!(warnings);
    }
    Answer::Ok(out)
}

pub(crate) fn details(spec: &Spec, args: &Args<'_>) -> Answer {
    let names = args.strings("types");
    if names.is_empty() {
        return Malformed::new(spec, "`types` is empty: name at least one node type").into();
    }
    let with_examples = args.bool("examples").unwrap_or(true);
    let with_schema = args.bool("schema").unwrap_or(true);
    let mut nodes = Vec::new();
    // Corrections and unknown names alike: each is worth the model's attention.
    let mut unknown = Vec::new();
    let mut seen = BTreeSet::new();
    for name in names {
        let Some(t) = found(resolve(name), &mut unknown) else {
            continue;
        };
        if seen.insert(t.name) {
            nodes.push(detail(t, with_examples, with_schema));
        }
    }
    if nodes.is_empty() {
        return Malformed::new(spec, unknown.join("; ")).into();
    }
    let mut out = json!({"nodes": nodes});
    if !unknown.is_empty() {
        out["warnings"] = json!(unknown);
    }
    Answer::Ok(out)
}

pub(crate) fn detail(t: &NodeType, with_examples: bool, with_schema: bool) -> Value {
    let (fields, _) = fields(t.name);
    let mut out = json!({
        "type": t.name,
        "does": t.summary,
        "fields": fields,
        "commonOptions": {
            "names": COMMON_OPTIONS,
            "see": "mcpflow_syntax topic \"errors\" (onError, optional, retry); timeoutMs bounds one attempt in milliseconds",
        },
    });
    if with_schema {
        out["schema"] = node_schema(t.name).unwrap_or(Value::Null);
    }
    if with_examples {
        out["examples"] = t
            .examples
            .iter()
            .map(|e| {
                let mut ex = json!({
                    "title": e.title,
                    "definition": e.definition,
                    "arguments": parse(e.arguments),
                });
                if let Some(input) = e.continue_with {
                    ex["waits"] = json!(
                        "the call answers {status: \"waiting\", sessionId, message, inputSchema}; \
                         the client continues it with <tool>_continue {sessionId, input}"
                    );
                    ex["continueWith"] = parse(input);
                }
                ex["result"] = parse(e.result);
                if let Some(uses) = e.uses {
                    ex["alsoSaved"] = json!(uses);
                }
                ex
            })
            .collect();
    }
    out
}

/// The static JSON of the catalog's examples parses (a test checks every one).
pub(crate) fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}
