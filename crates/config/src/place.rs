//! Names for places in a config, so that messages say `node "a" of tool "t"` rather than
//! `/tools/0/nodes/3`.

use serde_json::Value;

pub(crate) use mcpflow_model::describe;

/// Splits a JSON pointer into its unescaped segments.
pub(crate) fn segments(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The parent of a pointer (`""` for top-level values).
pub(crate) fn parent(pointer: &str) -> &str {
    pointer.rfind('/').map_or("", |i| &pointer[..i])
}

fn str_at<'a>(doc: &'a Value, pointer: &str) -> Option<&'a str> {
    doc.pointer(pointer).and_then(Value::as_str)
}

/// `node "a" of tool "t"`, `tool "t"`, `server "fs"`, or `None` for places that need no name.
pub(crate) fn owner(pointer: &str, doc: &Value) -> Option<String> {
    let segs = segments(pointer);
    match segs.as_slice() {
        [tools, i, nodes, j, ..] if tools == "tools" && nodes == "nodes" => {
            let node = match str_at(doc, &format!("/tools/{i}/nodes/{j}/id")) {
                Some(id) if !id.is_empty() => format!("node \"{id}\""),
                _ => format!("node #{}", index_plus_one(j)),
            };
            Some(format!("{node} of {}", tool_name(doc, i)))
        }
        [tools, i, ..] if tools == "tools" => Some(tool_name(doc, i)),
        [servers, name, ..] if servers == "mcpServers" => Some(format!("server \"{name}\"")),
        _ => None,
    }
}

fn tool_name(doc: &Value, i: &str) -> String {
    match str_at(doc, &format!("/tools/{i}/name")) {
        Some(name) => format!("tool \"{name}\""),
        None => format!("tool #{}", index_plus_one(i)),
    }
}

fn index_plus_one(i: &str) -> String {
    i.parse::<usize>()
        .map_or_else(|_| i.to_owned(), |n| (n + 1).to_string())
}

/// ` in node "a" of tool "t"` or nothing.
pub(crate) fn in_owner(pointer: &str, doc: &Value) -> String {
    owner(pointer, doc)
        .map(|o| format!(" in {o}"))
        .unwrap_or_default()
}

/// How a field is named in a message: `"next"`, `"args[2]"`, `"env.HOME"`.
pub(crate) fn field_name(pointer: &str) -> String {
    let segs = segments(pointer);
    let mut name = String::new();
    for (i, seg) in segs.iter().enumerate().rev() {
        if seg.parse::<usize>().is_ok() && i > 0 {
            name = format!("[{seg}]{name}");
            continue;
        }
        let parent_is_map = i > 0
            && matches!(
                segs[i - 1].as_str(),
                "env" | "headers" | "mcpServers" | "properties"
            );
        if parent_is_map && i > 1 {
            name = format!(".{seg}{name}");
            continue;
        }
        name = format!("{seg}{name}");
        break;
    }
    if name.is_empty() {
        "the config".to_owned()
    } else {
        format!("\"{name}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_places_and_fields() {
        let doc = json!({"tools": [{"name": "t", "nodes": [{"id": "a"}, {}]}]});
        assert_eq!(
            owner("/tools/0/nodes/0/next", &doc).as_deref(),
            Some("node \"a\" of tool \"t\"")
        );
        assert_eq!(
            owner("/tools/0/nodes/1", &doc).as_deref(),
            Some("node #2 of tool \"t\"")
        );
        assert_eq!(owner("/executionLimits/x", &doc), None);
        assert_eq!(field_name("/mcpServers/fs/args/2"), "\"args[2]\"");
        assert_eq!(field_name("/mcpServers/fs/env/HOME"), "\"env.HOME\"");
        assert_eq!(field_name("/tools/0/nodes/1/next"), "\"next\"");
        assert_eq!(segments("/a~1b/c~0d"), vec!["a/b", "c~d"]);
    }
}
