//! What the schema cannot say about the gateway's keys (`proxy:` and `hooks:`); the types
//! themselves are [`mcpflow_model::proxy`]'s, re-exported here at their old path.

use indexmap::IndexMap;
use serde_json::Value;

pub use mcpflow_model::proxy::*;

/// What the schema cannot say about `proxy:` and `hooks:`: every proxied upstream is declared,
/// explicit names do not collide, each hook has exactly one body and a graph-tool hook names a
/// tool of this config.
pub(crate) fn check(doc: &Value, f: &mut crate::validate::Findings) {
    use crate::source::Problem;
    let servers = doc.get("mcpServers").and_then(Value::as_object);
    let tool_names: Vec<&str> = doc
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| t.iter().filter_map(|t| t.get("name")?.as_str()).collect())
        .unwrap_or_default();
    let mut renamed: IndexMap<&str, String> = IndexMap::new();
    let upstreams = doc.pointer("/proxy/upstreams").and_then(Value::as_object);
    for (name, up) in upstreams.into_iter().flatten() {
        let ptr = format!("/proxy/upstreams/{}", crate::yaml::escape(name));
        if !servers.is_some_and(|s| s.contains_key(name)) {
            f.errors.push(
                Problem::new(&ptr, format!("proxied upstream \"{name}\" is not declared"))
                    .hint("every key of proxy.upstreams must be a key of mcpServers"),
            );
        }
        let overrides = up.get("tools").and_then(Value::as_object);
        for (tool, o) in overrides.into_iter().flatten() {
            let Some(new) = o.get("name").and_then(Value::as_str) else {
                continue;
            };
            let owner = format!("{name}/{tool}");
            let at = format!("{ptr}/tools/{}/name", crate::yaml::escape(tool));
            if tool_names.contains(&new) {
                f.errors.push(Problem::new(
                    &at,
                    format!("\"{new}\" (upstream tool {owner}) is also a graph tool's name"),
                ));
            } else if let Some(first) = renamed.get(new) {
                f.errors.push(Problem::new(
                    &at,
                    format!("\"{new}\" names both upstream tools {first} and {owner}"),
                ));
            } else {
                renamed.insert(new, owner);
            }
        }
    }
    let search = doc.pointer("/proxy/toolSearch");
    if search.is_some_and(|s| s.get("enabled").and_then(Value::as_bool) != Some(false)) {
        for (i, name) in tool_names.iter().enumerate() {
            if [ToolSearch::FIND_TOOL, ToolSearch::CALL_TOOL].contains(name) {
                f.errors.push(
                    Problem::new(
                        format!("/tools/{i}/name"),
                        format!("graph tool \"{name}\" has the name of a built-in tool of proxy.toolSearch"),
                    )
                    .hint("rename the graph tool; names starting with `mcpflow_` are mcpflow's"),
                );
            }
        }
    }
    let mut ids: Vec<&str> = Vec::new();
    let hooks = doc.get("hooks").and_then(Value::as_array);
    if hooks.is_some_and(|h| !h.is_empty()) && doc.get("proxy").is_none() {
        f.errors.push(
            Problem::new(
                "/hooks",
                "hooks run on proxied traffic, and nothing is proxied",
            )
            .hint("add `proxy:` with the upstreams whose tools/list and tools/call to hook"),
        );
    }
    for (i, hook) in hooks.into_iter().flatten().enumerate() {
        let ptr = format!("/hooks/{i}");
        if let Some(id) = hook.get("id").and_then(Value::as_str) {
            if ids.contains(&id) {
                f.errors.push(Problem::new(
                    format!("{ptr}/id"),
                    format!("duplicate hook id \"{id}\""),
                ));
            }
            ids.push(id);
        }
        match (hook.get("script"), hook.get("graphTool")) {
            (Some(_), None) => {}
            (None, Some(tool)) => {
                if let Some(tool) = tool.as_str()
                    && !tool_names.contains(&tool)
                {
                    f.errors.push(Problem::new(
                        format!("{ptr}/graphTool"),
                        format!(
                            "hook graph tool \"{tool}\" is not a tool of this config{}",
                            crate::suggest::did_you_mean(tool, tool_names.iter().copied())
                        ),
                    ));
                }
            }
            _ => f.errors.push(Problem::new(
                &ptr,
                "a hook needs exactly one of `script` and `graphTool`",
            )),
        }
    }
}
