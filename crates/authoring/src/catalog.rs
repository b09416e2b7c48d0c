//! The node catalog (`mcpflow_node_types`, `mcpflow_node_details`): what each node type does,
//! its fields and their JSON Schema — generated from `mcpflow-model`'s types, the same schema
//! the config loader checks against, so the catalog cannot disagree with it — and complete
//! example tools, which mcpflow's tests run. Names a model gets nearly right (`Transform`,
//! `MCP_NODE`, `jsonata`, `if`) are corrected with a warning, never silently.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::answer::Answer;
use crate::args::{Args, Malformed, closest};
use crate::tools::Spec;

/// One node type of the catalog.
pub(crate) struct NodeType {
    pub name: &'static str,
    pub summary: &'static str,
    /// Other names a model may use for it (lower case, without separators).
    pub aliases: &'static [&'static str],
    /// Complete example tools using it.
    pub examples: &'static [Example],
}

/// A complete tool using a node type, with arguments and the exact result of a run.
pub(crate) struct Example {
    pub title: &'static str,
    pub definition: &'static str,
    /// Another tool the example's config must hold (a `call` node's target), in YAML.
    pub uses: Option<&'static str>,
    pub arguments: &'static str,
    /// For a run that waits: the client's input that continues it (JSON).
    pub continue_with: Option<&'static str>,
    /// The exact result (JSON), after the continuation if there is one.
    pub result: &'static str,
}

const DOUBLE: &str = "name: double\ndescription: Doubles a number\ninputSchema:\n  type: object\n  properties:\n    n: {type: number}\n  required: [n]\nnodes:\n  - id: entry\n    type: entry\n    next: calc\n  - id: calc\n    type: transform\n    transform:\n      expr: '{\"result\": entry.n * 2}'\n    next: exit\n  - id: exit\n    type: exit\n";

pub(crate) static NODE_TYPES: &[NodeType] = &[
    NodeType {
        name: "entry",
        summary: "Where every run starts; its output is the tool's arguments. Exactly one per tool.",
        aliases: &["start", "begin", "input", "trigger", "init"],
        examples: &[Example {
            title: "entry straight to exit: the tool answers its arguments",
            definition: "name: echo_args\ninputSchema: {type: object}\nnodes:\n  - id: entry\n    type: entry\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"x": 1, "y": [true]}"#,
            continue_with: None,
            result: r#"{"x": 1, "y": [true]}"#,
        }],
    },
    NodeType {
        name: "exit",
        summary: "Where every run ends; the tool's result is the output of the node that ran just before it (a falsy one becomes {}). Exactly one per tool.",
        aliases: &["end", "return", "output", "finish", "stop", "result"],
        examples: &[Example {
            title: "The exit returns what the transform before it built",
            definition: DOUBLE,
            uses: None,
            arguments: r#"{"n": 21}"#,
            continue_with: None,
            result: r#"{"result": 42}"#,
        }],
    },
    NodeType {
        name: "transform",
        summary: "Computes a value with a JSONata expression over the context {nodeId: output}: reshape, filter, aggregate, build the result.",
        aliases: &[
            "jsonata",
            "expression",
            "expr",
            "compute",
            "set",
            "assign",
            "datatransformation",
            "map",
        ],
        examples: &[Example {
            title: "Totals of an order",
            definition: "name: totals\ninputSchema:\n  type: object\n  properties:\n    items: {type: array, items: {type: object}}\nnodes:\n  - id: entry\n    type: entry\n    next: sum\n  - id: sum\n    type: transform\n    transform:\n      expr: '{\"total\": $sum(entry.items.(price * qty)), \"lines\": $count(entry.items)}'\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"items": [{"price": 2, "qty": 3}, {"price": 10, "qty": 1}]}"#,
            continue_with: None,
            result: r#"{"total": 16, "lines": 2}"#,
        }],
    },
    NodeType {
        name: "mcp",
        summary: "Calls a tool of an upstream MCP server (`server` from mcpServers, `tool`, `args` with {expr} templates); its output is the tool's structuredContent, else its text parsed as JSON, else the text.",
        aliases: &[
            "tool",
            "mcptool",
            "calltool",
            "upstream",
            "action",
            "httprequest",
            "externalaction",
            "api",
        ],
        examples: &[Example {
            title: "Call `echo` of the server `demo` (any server of mcpServers whose `echo` answers its arguments) and reshape the answer",
            definition: "name: greet\ninputSchema:\n  type: object\n  properties:\n    who: {type: string}\nnodes:\n  - id: entry\n    type: entry\n    next: call\n  - id: call\n    type: mcp\n    server: demo\n    tool: echo\n    args:\n      greeting: hello\n      name: {expr: entry.who}\n    next: shape\n  - id: shape\n    type: transform\n    transform:\n      expr: '{\"text\": call.greeting & \", \" & call.name}'\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"who": "Ada"}"#,
            continue_with: None,
            result: r#"{"text": "hello, Ada"}"#,
        }],
    },
    NodeType {
        name: "switch",
        summary: "Routes the run: tries `conditions` (JSON Logic rules) in order and goes to the `next` of the first that holds, else to its own `next`.",
        aliases: &[
            "if",
            "ifelse",
            "condition",
            "conditional",
            "branch",
            "router",
            "route",
            "case",
            "decision",
            "filter",
        ],
        examples: &[Example {
            title: "Pick a branch by a number",
            definition: "name: size\ninputSchema: {type: object, properties: {n: {type: number}}}\nnodes:\n  - id: entry\n    type: entry\n    next: route\n  - id: route\n    type: switch\n    conditions:\n      - rule: {\">\": [{var: entry.n}, 100]}\n        next: big\n    next: small\n  - id: big\n    type: transform\n    transform: {expr: '{\"size\": \"big\"}'}\n    next: exit\n  - id: small\n    type: transform\n    transform: {expr: '{\"size\": \"small\", \"n\": entry.n}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"n": 700}"#,
            continue_with: None,
            result: r#"{"size": "big"}"#,
        }],
    },
    NodeType {
        name: "parallel",
        summary: "Runs named `branches` concurrently (each a chain of nodes that ends by routing to `next`, the join) and outputs {branch: last output of that branch}.",
        aliases: &["fork", "concurrent", "join", "merge", "fanout", "split"],
        examples: &[Example {
            title: "Two computations at once, joined",
            definition: "name: both\ninputSchema: {type: object, properties: {n: {type: number}}}\nnodes:\n  - id: entry\n    type: entry\n    next: fan\n  - id: fan\n    type: parallel\n    branches:\n      double: dbl\n      square: sq\n    next: done\n  - id: dbl\n    type: transform\n    transform: {expr: 'entry.n * 2'}\n    next: done\n  - id: sq\n    type: transform\n    transform: {expr: 'entry.n * entry.n'}\n    next: done\n  - id: done\n    type: transform\n    transform: {expr: '{\"double\": fan.double, \"square\": fan.square}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"n": 3}"#,
            continue_with: None,
            result: r#"{"double": 6, "square": 9}"#,
        }],
    },
    NodeType {
        name: "foreach",
        summary: "Runs a `body` chain for every item of the array `items` (JSONata), several at a time; inside, $.<foreach id> is {item, index}; its output is the body's results in order.",
        aliases: &[
            "loop", "each", "for", "iterate", "mapitems", "batch", "forall",
        ],
        examples: &[Example {
            title: "Square every number",
            definition: "name: squares\ninputSchema: {type: object, properties: {values: {type: array}}}\nnodes:\n  - id: entry\n    type: entry\n    next: each\n  - id: each\n    type: foreach\n    items: entry.values\n    body: square\n    next: done\n  - id: square\n    type: transform\n    transform: {expr: 'each.item * each.item'}\n    next: each\n  - id: done\n    type: transform\n    transform: {expr: '{\"squares\": each}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"values": [1, 2, 3]}"#,
            continue_with: None,
            result: r#"{"squares": [1, 4, 9]}"#,
        }],
    },
    NodeType {
        name: "call",
        summary: "Runs another graph tool of this config (`tool`, with `args` as in an mcp node) as a sub-run; its output is that tool's result.",
        aliases: &[
            "subgraph",
            "subtool",
            "subworkflow",
            "invoke",
            "run",
            "graph",
        ],
        examples: &[Example {
            title: "Reuse the saved tool `double` twice",
            definition: "name: quadruple\ninputSchema: {type: object, properties: {n: {type: number}}, required: [n]}\nnodes:\n  - id: entry\n    type: entry\n    next: once\n  - id: once\n    type: call\n    tool: double\n    args: {n: {expr: entry.n}}\n    next: twice\n  - id: twice\n    type: call\n    tool: double\n    args: {n: {expr: once.result}}\n    next: shape\n  - id: shape\n    type: transform\n    transform: {expr: '{\"result\": twice.result}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: Some(DOUBLE),
            arguments: r#"{"n": 5}"#,
            continue_with: None,
            result: r#"{"result": 20}"#,
        }],
    },
    NodeType {
        name: "await",
        summary: "Pauses the run until the client sends input (checked against `inputSchema`): the call answers a session to continue with <tool>_continue; the input becomes this node's output. Needs a store.",
        aliases: &[
            "wait",
            "pause",
            "ask",
            "human",
            "humanintheloop",
            "approval",
            "elicit",
            "prompt",
        ],
        examples: &[Example {
            title: "Ask for approval, then answer with the decision",
            definition: "name: approve\ninputSchema: {type: object, properties: {amount: {type: number}}}\nnodes:\n  - id: entry\n    type: entry\n    next: ask\n  - id: ask\n    type: await\n    message: {expr: '\"Approve a payment of \" & $string(entry.amount) & \"?\"'}\n    inputSchema:\n      type: object\n      properties: {approved: {type: boolean}}\n      required: [approved]\n    next: done\n  - id: done\n    type: transform\n    transform: {expr: '{\"approved\": ask.approved, \"amount\": entry.amount}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"amount": 12}"#,
            continue_with: Some(r#"{"approved": true}"#),
            result: r#"{"approved": true, "amount": 12}"#,
        }],
    },
    NodeType {
        name: "script",
        summary: "Runs a JavaScript function in a sandbox (no I/O, memory and CPU limits): `source` is `(input) => result`; `input` is a JSONata expression (default: the whole context).",
        aliases: &["javascript", "js", "code", "function", "lambda", "python"],
        examples: &[Example {
            title: "Sum in JavaScript",
            definition: "name: js_sum\ninputSchema: {type: object, properties: {values: {type: array}}}\nnodes:\n  - id: entry\n    type: entry\n    next: sum\n  - id: sum\n    type: script\n    input: {expr: entry.values}\n    source: '(values) => ({total: values.reduce((a, b) => a + b, 0)})'\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"values": [1, 2, 3]}"#,
            continue_with: None,
            result: r#"{"total": 6}"#,
        }],
    },
];

/// The options every node accepts, listed once rather than in every node's fields.
const COMMON_OPTIONS: &[&str] = &["timeoutMs", "retry", "onError", "optional"];

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

fn detail(t: &NodeType, with_examples: bool, with_schema: bool) -> Value {
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

/// The node type's schema as the config's generated schema has it: the variant of `Node`
/// whose `type` is `name`, with the definitions it refers to.
pub(crate) fn node_schema(name: &str) -> Option<Value> {
    let root = mcpflow_model::schema();
    let variant = variant(root, name)?;
    let mut refs = BTreeSet::new();
    collect_refs(root, variant, &mut refs);
    let mut out = variant.clone();
    if let Some(map) = out.as_object_mut() {
        map.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        if !refs.is_empty() {
            let defs: Map<String, Value> = refs
                .into_iter()
                .filter_map(|r| Some((r.clone(), root["$defs"].get(&r)?.clone())))
                .collect();
            map.insert("$defs".into(), Value::Object(defs));
        }
    }
    Some(out)
}

/// The `Node` variant whose `type` is `name`.
fn variant<'v>(root: &'v Value, name: &str) -> Option<&'v Value> {
    let node = root["$defs"].get("Node")?;
    let variants = node
        .get("oneOf")
        .or_else(|| node.get("anyOf"))?
        .as_array()?;
    variants.iter().find(|v| {
        let tag = &v["properties"]["type"];
        tag["const"] == name || tag["enum"] == json!([name])
    })
}

/// Every `$defs` name reachable from `v`.
fn collect_refs(root: &Value, v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref").and_then(Value::as_str)
                && let Some(name) = r.strip_prefix("#/$defs/")
                && out.insert(name.to_owned())
                && let Some(def) = root["$defs"].get(name)
            {
                collect_refs(root, def, out);
            }
            for child in map.values() {
                collect_refs(root, child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_refs(root, i, out)),
        _ => {}
    }
}

/// A node type's own fields (the common options aside), described from the schema, and the
/// names of the required ones.
pub(crate) fn fields(name: &str) -> (Vec<Value>, Vec<String>) {
    let root = mcpflow_model::schema();
    let Some(variant) = variant(root, name) else {
        return (Vec::new(), Vec::new());
    };
    let mut properties = Map::new();
    let mut required = BTreeSet::new();
    merge_object(root, variant, &mut properties, &mut required);
    let mut out = Vec::new();
    for (field, schema) in &properties {
        if COMMON_OPTIONS.contains(&field.as_str()) {
            continue;
        }
        let mut f = json!({
            "name": field,
            "required": required.contains(field),
            "type": type_of(root, schema),
        });
        if field == "type" {
            f["value"] = json!(name);
        }
        if let Some(d) = description(root, schema) {
            f["description"] = json!(d);
        }
        if let Some(d) = schema.get("default") {
            f["default"] = d.clone();
        }
        out.push(f);
    }
    let required = properties
        .keys()
        .filter(|k| required.contains(*k))
        .cloned()
        .collect();
    (out, required)
}

/// The properties and required names of an object schema, through `$ref` and `allOf`.
fn merge_object(
    root: &Value,
    schema: &Value,
    properties: &mut Map<String, Value>,
    required: &mut BTreeSet<String>,
) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str)
        && let Some(def) = r
            .strip_prefix("#/$defs/")
            .and_then(|n| root["$defs"].get(n))
    {
        merge_object(root, def, properties, required);
    }
    for part in schema["allOf"].as_array().into_iter().flatten() {
        merge_object(root, part, properties, required);
    }
    if let Some(props) = schema["properties"].as_object() {
        for (k, v) in props {
            properties.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    for r in schema["required"].as_array().into_iter().flatten() {
        if let Some(r) = r.as_str() {
            required.insert(r.to_owned());
        }
    }
}

/// A short type for a field: `string`, `integer`, `object`, `Transform` (a definition), ….
fn type_of(root: &Value, schema: &Value) -> Value {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return match root["$defs"].get(name) {
            Some(def) if def.get("enum").is_some() => json!({"oneOf": def["enum"]}),
            Some(def)
                if def.get("oneOf").is_some_and(|o| {
                    o.as_array()
                        .is_some_and(|a| a.iter().all(|v| v.get("const").is_some()))
                }) =>
            {
                json!({"oneOf": def["oneOf"].as_array().map(|a| a.iter().map(|v| v["const"].clone()).collect::<Vec<_>>())})
            }
            Some(def) => def.get("type").cloned().unwrap_or_else(|| json!(name)),
            None => json!(name),
        };
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let types: Vec<Value> = options
                .iter()
                .filter(|o| o.get("type") != Some(&json!("null")))
                .map(|o| type_of(root, o))
                .collect();
            return if types.len() == 1 {
                types.into_iter().next().unwrap_or(Value::Null)
            } else {
                json!(types)
            };
        }
    }
    match schema.get("type") {
        Some(Value::Array(types)) => {
            let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
            if kept.len() == 1 {
                kept[0].clone()
            } else {
                json!(kept)
            }
        }
        Some(t) => t.clone(),
        None if schema.get("const").is_some() => json!("string"),
        None => json!("any"),
    }
}

/// A field's description, or that of the definition it refers to.
fn description(root: &Value, schema: &Value) -> Option<String> {
    if let Some(d) = schema.get("description").and_then(Value::as_str) {
        return Some(d.to_owned());
    }
    let r = schema.get("$ref").and_then(Value::as_str).or_else(|| {
        schema["anyOf"]
            .as_array()?
            .iter()
            .find_map(|o| o.get("$ref").and_then(Value::as_str))
    })?;
    root["$defs"]
        .get(r.trim_start_matches("#/$defs/"))?
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
}
