//! What MCP clients write in their server lists, read as this config's `mcpServers`.
//!
//! Claude Desktop and Cursor write `{"mcpServers": {…}}`, VS Code `{"servers": {…}}`; entries
//! may be `"disabled": true`, say `"type": "http"` for Streamable HTTP, or give only a `url`.
//! Each is turned into the config's own spelling here, and every other key is left for the
//! structure check to refuse, so an entry is either used, skipped with a warning, or an error,
//! never dropped silently.

use serde_json::{Map, Value};

use crate::source::{Anchor, Pos, Problem};

/// The server entries of one `mcp.json`, in the config's spelling.
#[derive(Debug, Default)]
pub(crate) struct ClientServers {
    /// Name, entry, and the pointer of the entry inside the `mcp.json` (for positions).
    pub entries: Vec<(String, Value, String)>,
    /// Names and pointers of the entries marked `"disabled": true`, in file order.
    pub disabled: Vec<(String, String)>,
    pub problems: Vec<Problem>,
}

/// Keys of an entry that only steer a client's own approval prompts.
const CLIENT_UI_KEYS: [&str; 2] = ["autoApprove", "alwaysAllow"];

/// The two top-level keys clients put their servers under, in the order they are read.
const LISTS: [&str; 2] = ["mcpServers", "servers"];

/// Reads the server lists of `doc` (an object). `at` gives the position of a pointer in the file.
pub(crate) fn read(
    doc: &Map<String, Value>,
    name: &str,
    at: &dyn Fn(&str) -> Anchor,
) -> ClientServers {
    let mut out = ClientServers::default();
    for list in LISTS {
        let servers = match doc.get(list) {
            None | Some(Value::Null) => continue,
            Some(Value::Object(servers)) => servers,
            Some(other) => {
                out.problems.push(
                    Problem::new(
                        "",
                        format!(
                            "\"{list}\" in {name} must be a mapping of server names to servers, \
                             got {}",
                            crate::place::describe(other)
                        ),
                    )
                    .at(at(&format!("/{list}"))),
                );
                continue;
            }
        };
        for (server, entry) in servers {
            let pointer = format!("/{list}/{}", crate::yaml::escape(server));
            if out.entries.iter().any(|(n, ..)| n == server) {
                out.problems.push(
                    Problem::new(
                        "",
                        format!("server \"{server}\" is defined twice in {name}"),
                    )
                    .at(at(&pointer))
                    .hint("keep one of the two entries"),
                );
                continue;
            }
            let mut entry = entry.clone();
            if let Some(fields) = entry.as_object_mut() {
                match fields.get("disabled") {
                    Some(Value::Bool(true)) => {
                        out.disabled.push((server.clone(), pointer));
                        continue;
                    }
                    Some(Value::Bool(false)) => {
                        fields.remove("disabled");
                    }
                    Some(other) => {
                        out.problems.push(
                            Problem::new(
                                "",
                                format!(
                                    "\"disabled\" of server \"{server}\" must be true or false, \
                                     got {}",
                                    crate::place::describe(other)
                                ),
                            )
                            .at(at(&format!("{pointer}/disabled"))),
                        );
                        continue;
                    }
                    None => {}
                }
                // Cline's lists of tools its user pre-approved: the client's own UI, nothing a
                // server (or mcpflow, which asks nobody) acts on.
                for key in CLIENT_UI_KEYS {
                    fields.remove(key);
                }
                normalise_type(fields);
            }
            out.entries.push((server.clone(), entry, pointer));
        }
    }
    out
}

/// `"type": "http"` (VS Code, Claude Code, Cursor) is Streamable HTTP, and an entry with a `url`
/// but neither a `type` nor a `command` is remote: Streamable HTTP, as those clients try first.
fn normalise_type(fields: &mut Map<String, Value>) {
    match fields.get("type").and_then(Value::as_str) {
        Some("http" | "streamable-http" | "streamable_http") => {
            fields.insert("type".into(), "streamableHttp".into());
        }
        Some(_) => {}
        None if fields.contains_key("url") && !fields.contains_key("command") => {
            fields.insert("type".into(), "streamableHttp".into());
        }
        None => {}
    }
}

/// The one warning line for the entries skipped as disabled, at the first of them.
pub(crate) fn disabled_warning(
    name: &str,
    disabled: &[(String, String)],
    at: &dyn Fn(&str) -> Anchor,
) -> Option<Problem> {
    let (_, first) = disabled.first()?;
    let names: Vec<String> = disabled.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    let (s, them) = if names.len() == 1 {
        ("", "it")
    } else {
        ("s", "them")
    };
    Some(
        Problem::new(
            "",
            format!(
                "{name}: skipped disabled server{s} {} (\"disabled\": true); remove the flag to \
                 use {them}",
                names.join(", ")
            ),
        )
        .at(at(first)),
    )
}

/// Where the value at `pointer` starts, from the spans of the `mcp.json`.
pub(crate) fn anchor(
    file: usize,
    spans: &[(String, crate::source::Span)],
    pointer: &str,
) -> Anchor {
    let pos = spans
        .iter()
        .find(|(p, _)| p == pointer)
        .map_or(Pos::START, |(_, s)| s.key.unwrap_or(s.value));
    Anchor::At(file, pos)
}
