//! The gateway's keys: `proxy:` (which upstreams are passed through to clients, under which
//! names) and `hooks:` (sandboxed JavaScript or graph tools run before and after proxied
//! requests).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Upstreams whose tools (and resources and prompts) this server lists next to its graph tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProxyConfig {
    /// What an upstream that cannot be reached does to the list (default `hide`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_mode: Option<FailureMode>,
    /// Upstream name (a key of `mcpServers`) → how it is passed through, in listing order.
    #[serde(default)]
    pub upstreams: IndexMap<String, ProxiedUpstream>,
    /// Instead of listing every proxied tool, list a search tool and a call tool (plus the
    /// `pinned` ones), so a client's context holds a few schemas instead of all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_search: Option<ToolSearch>,
}

/// Tool search mode: `tools/list` shows the graph tools, the pinned proxied tools and two
/// built-in tools, `mcpflow_find_tool` (a scored search over the proxied tools' names,
/// descriptions and parameter names, answering each hit's `inputSchema`) and
/// `mcpflow_call_tool` (calls a proxied tool by its listed name, through the same hooks as a
/// direct call). Proxied tools stay callable directly by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolSearch {
    /// Turns the mode on (default true when `toolSearch:` is present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Globs (`*`, `?`) over the proxied tools' listed names (after prefixing and renaming):
    /// matching tools are still listed in full.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned: Vec<String>,
}

impl ToolSearch {
    pub const FIND_TOOL: &'static str = "mcpflow_find_tool";
    pub const CALL_TOOL: &'static str = "mcpflow_call_tool";

    pub fn is_enabled(&self) -> bool {
        self.enabled != Some(false)
    }

    /// Whether the proxied tool listed as `name` is listed in full.
    pub fn is_pinned(&self, name: &str) -> bool {
        self.pinned.iter().any(|g| glob_match(g, name))
    }
}

/// When an upstream is down: its tools disappear from `tools/list` (`hide`), or they stay listed
/// as last seen and calls to them fail with the upstream's error (`fail`). Either way the other
/// upstreams' tools and the graph tools are unaffected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FailureMode {
    #[default]
    Hide,
    Fail,
}

/// How one upstream's tools are named and filtered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProxiedUpstream {
    /// `prefix` (default): listed as `<prefix><separator><tool>`; `none`: listed under the
    /// upstream's own names (a name taken twice is an error naming both owners).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming: Option<Naming>,
    /// The prefix; defaults to the upstream's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub prefix: Option<String>,
    /// Between prefix and tool name (default `__`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator: Option<String>,
    /// Globs (`*`, `?`) over the upstream's tool names: only matching tools are listed. Empty
    /// or absent: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Globs over the upstream's tool names: matching tools are not listed (wins over include).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Per-tool overrides, by the upstream's tool name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub tools: IndexMap<String, ToolOverride>,
    /// Pass the upstream's resources through (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<bool>,
    /// Pass the upstream's prompts through (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<bool>,
    /// Overrides the proxy-wide `failureMode` for this upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_mode: Option<FailureMode>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Naming {
    #[default]
    Prefix,
    None,
}

/// What a client sees of one upstream tool, and what every call to it carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolOverride {
    /// Listed under this exact name (no prefix added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Replaces the upstream's annotations key by key (`readOnlyHint`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Map<String, Value>>,
    /// Arguments set on every call whatever the client sends; removed from the listed
    /// `inputSchema` (properties and `required`), so the client never sees them.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub fixed_arguments: Map<String, Value>,
    /// Arguments used when the client leaves them out; they become optional in the schema.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub default_arguments: Map<String, Value>,
}

impl ProxiedUpstream {
    pub const DEFAULT_SEPARATOR: &'static str = "__";

    /// The name a client sees for the upstream tool `tool` of upstream `server`.
    pub fn exposed_name(&self, server: &str, tool: &str) -> String {
        if let Some(name) = self.tools.get(tool).and_then(|o| o.name.clone()) {
            return name;
        }
        match self.naming.unwrap_or_default() {
            Naming::None => tool.to_string(),
            Naming::Prefix => format!(
                "{}{}{tool}",
                self.prefix.as_deref().unwrap_or(server),
                self.separator.as_deref().unwrap_or(Self::DEFAULT_SEPARATOR)
            ),
        }
    }

    /// Whether the upstream tool `tool` is listed: matches `include` (or it is empty) and no
    /// `exclude`.
    pub fn passes(&self, tool: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|g| glob_match(g, tool)))
            && !self.exclude.iter().any(|g| glob_match(g, tool))
    }
}

/// One hook: code run before (`pre`) or after (`post`) a proxied `tools/list` or `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Hook {
    /// Names the hook in logs, errors and `metadata.hookId`.
    #[schemars(length(min = 1))]
    pub id: String,
    /// `tools/call` or `tools/list`.
    pub method: HookMethod,
    /// `pre` (may rewrite or reject the request) or `post` (may rewrite the response).
    pub phase: HookPhase,
    /// Which traffic the hook sees: `proxied` (default), the upstream tools passed through;
    /// `graph`, this config's own graph tools (for them `upstream` is not checked, `tool`
    /// matches the graph tool's name and `metadata.serverName` is null); `all`, both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applies_to: Option<HookTraffic>,
    /// Glob over upstream names (default `*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Glob over the upstream's own tool names, or graph tool names (default `*`; `tools/call`
    /// only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A JavaScript function (or a module whose default export is one), called with
    /// `{request: {method, params}, response?, metadata: {clientId, serverName, toolName,
    /// hookId}}`. Exactly one of `script` and `graphTool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// A graph tool of this config, called with that same object as its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_tool: Option<String>,
    /// Wait for the hook and use what it returns (default true). `false`: run it after the
    /// fact without waiting; what it returns is ignored and its errors are only logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    /// What a failing blocking hook does: `closed` (default) fails the request, `open` lets it
    /// through unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_hook_error: Option<OnHookError>,
    /// CPU budget of one run of a `script` in milliseconds (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// `false` keeps the hook in the config, checked at load like any other, but it never runs
    /// (default true): a hook switched off without losing its script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

impl Hook {
    /// Whether the hook runs (`enabled` is not `false`).
    pub fn is_enabled(&self) -> bool {
        self.enabled != Some(false)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum HookMethod {
    #[serde(rename = "tools/call")]
    ToolsCall,
    #[serde(rename = "tools/list")]
    ToolsList,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum HookPhase {
    Pre,
    Post,
}

/// The tools a hook opts in to: proxied upstream tools, this config's graph tools, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum HookTraffic {
    #[default]
    Proxied,
    Graph,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnHookError {
    #[default]
    Closed,
    Open,
}

impl Hook {
    pub fn is_blocking(&self) -> bool {
        self.blocking != Some(false)
    }

    /// Whether the hook applies to `method` on upstream `server`'s tool `tool` (`None` for
    /// `tools/list`).
    pub fn matches(&self, method: HookMethod, server: &str, tool: Option<&str>) -> bool {
        self.applies_to.unwrap_or_default() != HookTraffic::Graph
            && self.method == method
            && glob_match(self.upstream.as_deref().unwrap_or("*"), server)
            && self.matches_tool(tool)
    }

    /// Whether the hook applies to `method` on this config's graph tool `tool` (`None` for
    /// `tools/list`): only hooks that opted in with `appliesTo: graph` or `all`.
    pub fn matches_graph(&self, method: HookMethod, tool: Option<&str>) -> bool {
        self.applies_to.unwrap_or_default() != HookTraffic::Proxied
            && self.method == method
            && self.matches_tool(tool)
    }

    fn matches_tool(&self, tool: Option<&str>) -> bool {
        match (tool, &self.tool) {
            (Some(tool), Some(glob)) => glob_match(glob, tool),
            _ => true,
        }
    }
}

/// Shell-style glob: `*` any run of characters, `?` one character, everything else literal.
pub fn glob_match(glob: &str, text: &str) -> bool {
    let (g, t): (Vec<char>, Vec<char>) = (glob.chars().collect(), text.chars().collect());
    // Iterative matching with one backtrack point: linear in practice, never exponential.
    let (mut gi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some((gi, ti));
                gi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                gi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sg, st)) => {
                    gi = sg + 1;
                    ti = st + 1;
                    star = Some((sg, st + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_a_shell() {
        assert!(glob_match("*", ""));
        assert!(glob_match("read_*", "read_file"));
        assert!(!glob_match("read_*", "write_file"));
        assert!(glob_match("*file*", "read_file_x"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("*a*b", "xxaxxb"));
        assert!(!glob_match("*a*b", "xxaxxbc"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
    }

    #[test]
    fn names_follow_the_naming_mode_and_overrides() {
        let mut up = ProxiedUpstream::default();
        assert_eq!(up.exposed_name("fs", "read"), "fs__read");
        up.prefix = Some("files".into());
        up.separator = Some(".".into());
        assert_eq!(up.exposed_name("fs", "read"), "files.read");
        up.naming = Some(Naming::None);
        assert_eq!(up.exposed_name("fs", "read"), "read");
        up.tools.insert(
            "read".into(),
            ToolOverride {
                name: Some("cat".into()),
                ..ToolOverride::default()
            },
        );
        assert_eq!(up.exposed_name("fs", "read"), "cat");
    }

    #[test]
    fn exclude_wins_over_include() {
        let up = ProxiedUpstream {
            include: vec!["read_*".into(), "list_*".into()],
            exclude: vec!["*_media_*".into()],
            ..ProxiedUpstream::default()
        };
        assert!(up.passes("read_file"));
        assert!(up.passes("list_directory"));
        assert!(!up.passes("read_media_file"));
        assert!(!up.passes("write_file"));
    }
}
