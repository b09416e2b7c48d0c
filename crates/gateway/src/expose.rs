//! What a client sees of one upstream tool: its name after the upstream's naming rule, its
//! overrides applied, fixed arguments gone from the schema.

use std::sync::Arc;

use mcpflow_model::proxy::{ProxiedUpstream, ToolOverride};
use rmcp::model::Tool;
use serde_json::{Map, Value};

/// One proxied tool, as listed and as routed.
#[derive(Debug)]
pub(crate) struct Exposed {
    /// The tool as clients see it.
    pub tool: Tool,
    /// The upstream that serves it.
    pub server: Arc<str>,
    /// Its name there.
    pub original: String,
    /// Set on every call, whatever the client sent.
    pub fixed: Map<String, Value>,
    /// Used when the client leaves them out.
    pub defaults: Map<String, Value>,
}

impl Exposed {
    /// `None` when `include`/`exclude` leave the tool out.
    pub fn new(server: &Arc<str>, rules: &ProxiedUpstream, mut tool: Tool) -> Option<Exposed> {
        let original = tool.name.to_string();
        if !rules.passes(&original) {
            return None;
        }
        tool.name = rules.exposed_name(server, &original).into();
        let empty = ToolOverride::default();
        let over = rules.tools.get(&original).unwrap_or(&empty);
        if let Some(title) = &over.title {
            tool.title = Some(title.clone());
        }
        if let Some(description) = &over.description {
            tool.description = Some(description.clone().into());
        }
        if let Some(changes) = &over.annotations {
            let mut merged = match tool.annotations.as_ref().map(serde_json::to_value) {
                Some(Ok(Value::Object(m))) => m,
                _ => Map::new(),
            };
            merged.extend(changes.clone());
            match serde_json::from_value(Value::Object(merged)) {
                Ok(annotations) => tool.annotations = Some(annotations),
                Err(e) => {
                    tracing::warn!(server = %server, tool = %original, error = %e, "annotation override ignored: not valid MCP annotations");
                }
            }
        }
        if !over.fixed_arguments.is_empty() || !over.default_arguments.is_empty() {
            let mut schema = (*tool.input_schema).clone();
            hide_arguments(&mut schema, &over.fixed_arguments, &over.default_arguments);
            tool.input_schema = Arc::new(schema);
        }
        Some(Exposed {
            tool,
            server: server.clone(),
            original,
            fixed: over.fixed_arguments.clone(),
            defaults: over.default_arguments.clone(),
        })
    }

    /// The arguments sent upstream: the client's, with defaults filled in and fixed ones set.
    pub fn arguments(&self, client: Option<Map<String, Value>>) -> Map<String, Value> {
        let mut args = client.unwrap_or_default();
        for (k, v) in &self.defaults {
            args.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (k, v) in &self.fixed {
            args.insert(k.clone(), v.clone());
        }
        args
    }
}

/// Removes fixed arguments from `properties` and `required`; makes defaulted ones optional and
/// shows their default.
fn hide_arguments(
    schema: &mut Map<String, Value>,
    fixed: &Map<String, Value>,
    defaults: &Map<String, Value>,
) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for k in fixed.keys() {
            props.remove(k);
        }
        for (k, v) in defaults {
            if let Some(Value::Object(prop)) = props.get_mut(k) {
                prop.insert("default".into(), v.clone());
            }
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| {
            r.as_str()
                .is_none_or(|r| !fixed.contains_key(r) && !defaults.contains_key(r))
        });
        if required.is_empty() {
            schema.remove("required");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fixed_arguments_leave_the_schema_and_defaults_become_optional() {
        let mut schema = json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "mode": {"type": "string"}, "q": {}},
            "required": ["path", "mode", "q"]
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        let fixed = json!({"path": "/srv"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let defaults = json!({"mode": "fast"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        hide_arguments(&mut schema, &fixed, &defaults);
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {"mode": {"type": "string", "default": "fast"}, "q": {}},
                "required": ["q"]
            })
        );
    }
}
