//! A node type's fields and JSON Schema, read from the config's generated schema
//! ([`mcpflow_model::schema()`], what the loader checks against), so the catalog cannot
//! disagree with what loads.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::catalog::COMMON_OPTIONS;

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
