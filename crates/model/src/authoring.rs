//! The `authoring:` section: which of the built-in authoring tools (syntax reference, node
//! catalog, validation, inline runs, direct upstream calls, search) a server offers, each risky
//! one off unless asked for.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Built-in tools that let a model write, test and run graph tools through MCP alone. Present
/// (or `mcpflow serve --authoring`) turns them on; each flag has a safe default, and a tool a
/// flag disables is not listed at all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthoringConfig {
    /// May add, update and delete graph tools in the config files (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save: Option<bool>,
    /// May run tool definitions that are not saved (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_inline: Option<bool>,
    /// May call upstream tools directly, for testing an mcp node's `args` (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_upstreams: Option<bool>,
    /// Offers the scored search over graph tools, upstream tools and node types (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<bool>,
    /// The file of `hooks:` the web UI's hook flow editor writes (with `save`), relative to this
    /// config, never one a person wrote. When it exists its hooks are read after this file's
    /// own `hooks:`, with their own positions; until the first save it need not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub hooks_file: Option<String>,
}

impl AuthoringConfig {
    pub fn save(&self) -> bool {
        self.save.unwrap_or(false)
    }

    pub fn run_inline(&self) -> bool {
        self.run_inline.unwrap_or(true)
    }

    pub fn call_upstreams(&self) -> bool {
        self.call_upstreams.unwrap_or(false)
    }

    pub fn search(&self) -> bool {
        self.search.unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_section_is_in_the_schema_with_safe_defaults() {
        let schema = crate::schema();
        assert!(schema["properties"]["authoring"].is_object());
        let flags = &schema["$defs"]["AuthoringConfig"]["properties"];
        for flag in ["save", "runInline", "callUpstreams", "search", "hooksFile"] {
            assert!(flags[flag].is_object(), "{flag} is not in the schema");
        }
        let d = AuthoringConfig::default();
        assert!(!d.save() && d.run_inline() && !d.call_upstreams() && d.search());
        let on: AuthoringConfig =
            serde_json::from_value(json!({"save": true, "callUpstreams": true, "search": false}))
                .expect("a valid section");
        assert!(on.save() && on.call_upstreams() && !on.search() && on.run_inline());
        assert!(serde_json::from_value::<AuthoringConfig>(json!({"sav": true})).is_err());
    }
}
