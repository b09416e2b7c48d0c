//! The graph editor's side of authoring (the web UI, through the run API): a tool as it is
//! on disk, a definition checked as it is typed, one expression compiled, the node catalog and
//! templates to start a tool from. The checks are the authoring tools' own
//! ([`crate::definition`], the expression layer), and a save is
//! [`save_definition`](crate::save_definition), the path of `mcpflow_save_tool`.

use mcpflow_engine::Engine;
use mcpflow_expr::{Jsonata, Logic, Template};
use serde_json::{Value, json};

use crate::save::{target, version};
use crate::{Publish, Served};

/// The name problems in submitted text are placed under (the checks' own).
const SUBMITTED: &str = "definition";

/// A graph tool as it is on disk, for an editor to open.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    /// The definition as the loader read it.
    pub definition: Value,
    /// Its text as written, when it is the one tool of a file a save wrote (comments kept).
    pub text: Option<String>,
    /// Where it is written, `file:line:col`.
    pub written_at: Option<String>,
    /// Why a save cannot replace it, when it cannot.
    pub read_only: Option<String>,
    /// The [`version`] of the file a save would replace; `None` when there is none yet.
    pub version: Option<String>,
}

/// Tool `name` of the config on disk; `Ok(None)` when it has none of that name, `Err` when the
/// config on disk does not load.
pub fn source(publish: &dyn Publish, name: &str) -> Result<Option<Source>, String> {
    let loaded = publish.load().map_err(|e| e.to_string())?;
    let Some(index) = loaded.config.tools.iter().position(|t| t.name == name) else {
        return Ok(None);
    };
    let definition =
        serde_json::to_value(&loaded.config.tools[index]).map_err(|e| e.to_string())?;
    let written_at = loaded
        .locate(&format!("/tools/{index}"))
        .map(|p| p.to_string());
    let (file, read_only) = match (saving_allowed(&loaded), target(&loaded, name)) {
        (Err(why), _) | (Ok(()), Err(why)) => (None, Some(why)),
        (Ok(()), Ok(file)) => (Some(file), None),
    };
    let bytes = file.as_ref().and_then(|f| std::fs::read(f).ok());
    let text = bytes
        .as_deref()
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|t| single_tool_text(t, &definition));
    Ok(Some(Source {
        name: name.to_owned(),
        definition,
        text,
        written_at,
        read_only,
        version: bytes.as_deref().map(version),
    }))
}

/// Why tools cannot be saved into this config, if they cannot.
pub(crate) fn saving_allowed(loaded: &mcpflow_config::Loaded) -> Result<(), String> {
    if loaded.config.authoring.as_ref().is_some_and(|a| a.save()) {
        Ok(())
    } else {
        Err(
            "saving is turned off in this config: `authoring: {save: true}` lets tools be saved \
             (each to a file of its own, in the directory the config includes)"
                .into(),
        )
    }
}

/// Whether the config on disk lets tools be saved: `Err` says why not (or why it does not load).
pub fn can_save(publish: &dyn Publish) -> Result<(), String> {
    let loaded = publish.load().map_err(|e| {
        format!("the config on disk does not load, so nothing can be saved into it: {e}")
    })?;
    saving_allowed(&loaded)?;
    if mcpflow_config::save_dir(&loaded.config.include).is_none() {
        return Err(
            "saving needs a directory of tool files the config includes: add `include: \
             [\"tools/*.yaml\"]` to the config"
                .into(),
        );
    }
    Ok(())
}

/// The tool's text in a file a save wrote (the header, `tools:`, one item indented under it),
/// un-indented; `None` unless it reads back as `definition`.
fn single_tool_text(file: &str, definition: &Value) -> Option<String> {
    let mut lines = file.lines().skip_while(|l| l.trim() != "tools:").skip(1);
    let first = lines.next()?.strip_prefix("  - ")?;
    let mut out = format!("{first}\n");
    for line in lines {
        if line.trim().is_empty() {
            out.push('\n');
        } else {
            out.push_str(line.strip_prefix("    ")?);
            out.push('\n');
        }
    }
    let back = mcpflow_config::parse_value(&out, SUBMITTED).ok()?;
    (back == *definition).then_some(out)
}

/// A definition checked as it is typed: what it parses to, and every problem of it as a tool of
/// the config on disk (the same checks as `mcpflow_validate_tool` and a save).
#[derive(Debug, Clone)]
pub struct Checked {
    /// The definition as read (from text: `None` when the text does not parse).
    pub definition: Option<Value>,
    pub problems: Vec<Value>,
    pub warnings: Vec<Value>,
}

/// Checks `definition` (an object, or YAML text) against the config on disk, `engine` lending
/// its upstream pool; `Err` when the config on disk does not load.
pub fn check(
    engine: &Engine,
    publish: &dyn Publish,
    definition: &Value,
) -> Result<Checked, String> {
    let parsed = match definition {
        Value::String(text) => match mcpflow_config::parse_value(text, SUBMITTED) {
            Ok(value) => value,
            Err(e) => {
                let mut problem = json!({
                    "path": "/",
                    "message": e.message,
                    "fix": e.hint.clone().unwrap_or_else(|| "fix the YAML near the line and column given".into()),
                });
                if e.line > 0 {
                    problem["line"] = json!(e.line);
                    problem["column"] = json!(e.col);
                }
                return Ok(Checked {
                    definition: None,
                    problems: vec![problem],
                    warnings: Vec::new(),
                });
            }
        },
        other => other.clone(),
    };
    if !parsed.is_object() {
        return Ok(Checked {
            definition: Some(parsed),
            problems: vec![json!({
                "path": "/",
                "message": "a tool definition is an object (name, description, inputSchema, nodes)",
                "fix": "start from a template",
            })],
            warnings: Vec::new(),
        });
    }
    let loaded = publish.load().map_err(|e| {
        format!("the config on disk does not load, so a tool cannot be checked against it: {e}")
    })?;
    let served = Served {
        engine: engine.clone(),
        config: std::sync::Arc::new(loaded.config),
        base_dir: loaded.base_dir,
    };
    Ok(match crate::definition::compile(&served, definition) {
        Ok(candidate) => Checked {
            definition: Some(parsed),
            problems: Vec::new(),
            warnings: candidate.warnings,
        },
        Err(problems) => Checked {
            definition: Some(parsed),
            problems,
            warnings: Vec::new(),
        },
    })
}

/// The languages of a node's expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// A transform's `expr`, a foreach's `items`, a script's `input`, a breakpoint condition.
    Jsonata,
    /// A switch condition's `rule`.
    Logic,
    /// An mcp or call node's `args`.
    Args,
}

/// Compiles one expression as a node would: `Err` is what is wrong (message, and for JSONata its
/// code, position and the expression with a caret under the place), with the usual fix.
pub fn check_expression(language: Language, expression: &Value) -> Result<(), Value> {
    let (error, source) = match language {
        Language::Jsonata => {
            let Some(src) = expression.as_str() else {
                return Err(json!({"message": "a JSONata expression is a string"}));
            };
            match Jsonata::compile(src) {
                Ok(_) => return Ok(()),
                Err(e) => (e, Some(src)),
            }
        }
        Language::Logic => match Logic::compile(expression) {
            Ok(_) => return Ok(()),
            Err(e) => (e, None),
        },
        Language::Args => match Template::compile(expression) {
            Ok(_) => return Ok(()),
            Err(e) => (e, None),
        },
    };
    let mut out = json!({
        "message": error.message,
        "fix": crate::expression::fix(error.code.as_deref()),
    });
    if let Some(code) = &error.code {
        out["code"] = json!(code);
    }
    if let Some(position) = error.position {
        out["position"] = json!(position);
        if let Some(src) = source {
            out["at"] = json!(crate::expression::pointer_at(src, position));
        }
    }
    Err(out)
}

/// Every node type with its fields, JSON Schema and examples, and the options every node takes.
pub fn catalog() -> Value {
    let types: Vec<Value> = crate::catalog::NODE_TYPES
        .iter()
        .map(|t| crate::catalog::detail(t, true, true))
        .collect();
    json!({"nodeTypes": types, "commonOptions": crate::catalog::COMMON_OPTIONS})
}

/// Tools to start from, each a complete definition that passes the checks on its own.
pub fn templates() -> Value {
    json!([
        {
            "id": "transform",
            "title": "Arguments in, an object out (one transform)",
            "definition": "name: new_tool\ndescription: What the tool does\ninputSchema:\n  type: object\n  properties:\n    text: {type: string}\n  required: [text]\nnodes:\n  - id: entry\n    type: entry\n    next: shape\n  - id: shape\n    type: transform\n    transform:\n      expr: '{\"text\": entry.text, \"length\": $length(entry.text)}'\n    next: exit\n  - id: exit\n    type: exit\n",
        },
        {
            "id": "switch",
            "title": "Two ways, chosen by a condition (switch)",
            "definition": "name: new_choice\ndescription: Answers differently above and below a limit\ninputSchema:\n  type: object\n  properties:\n    n: {type: number}\n  required: [n]\nnodes:\n  - id: entry\n    type: entry\n    next: route\n  - id: route\n    type: switch\n    conditions:\n      - rule: {\">\": [{var: entry.n}, 100]}\n        next: big\n    next: small\n  - id: big\n    type: transform\n    transform: {expr: '{\"size\": \"big\"}'}\n    next: exit\n  - id: small\n    type: transform\n    transform: {expr: '{\"size\": \"small\"}'}\n    next: exit\n  - id: exit\n    type: exit\n",
        },
        {
            "id": "foreach",
            "title": "Every item of a list (foreach)",
            "definition": "name: new_each\ndescription: Squares every value\ninputSchema:\n  type: object\n  properties:\n    values: {type: array, items: {type: number}}\n  required: [values]\nnodes:\n  - id: entry\n    type: entry\n    next: each\n  - id: each\n    type: foreach\n    items: entry.values\n    body: square\n    next: done\n  - id: square\n    type: transform\n    transform: {expr: 'each.item * each.item'}\n    next: each\n  - id: done\n    type: transform\n    transform: {expr: '{\"squares\": each}'}\n    next: exit\n  - id: exit\n    type: exit\n",
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_file_gives_back_its_text_and_only_when_it_reads_the_same() {
        let file = "# Written by mcpflow_save_tool.\ntools:\n  - name: t # the name\n    nodes:\n      - {id: entry, type: entry, next: exit}\n\n      - {id: exit, type: exit}\n";
        let definition = json!({"name": "t", "nodes": [
            {"id": "entry", "type": "entry", "next": "exit"}, {"id": "exit", "type": "exit"}]});
        let text = single_tool_text(file, &definition).expect("the one tool's text");
        assert!(text.starts_with("name: t # the name\nnodes:\n"), "{text}");
        assert_eq!(single_tool_text(file, &json!({"name": "other"})), None);
        let two = format!("{file}  - name: u\n");
        assert_eq!(single_tool_text(&two, &definition), None);
    }

    #[test]
    fn expressions_are_compiled_as_nodes_compile_them() {
        assert!(check_expression(Language::Jsonata, &json!("entry.n * 2")).is_ok());
        let broken = check_expression(Language::Jsonata, &json!("{\"a\": entry.n *}"))
            .expect_err("a broken expression");
        assert!(
            broken["code"].as_str().is_some_and(|c| c.starts_with('S')),
            "{broken}"
        );
        assert!(
            broken["at"].as_str().is_some_and(|a| a.contains('^')),
            "{broken}"
        );
        assert!(check_expression(Language::Logic, &json!({"<": [{"var": "a"}, 1]})).is_ok());
        assert!(check_expression(Language::Args, &json!({"x": {"expr": "a +"}})).is_err());
        assert!(check_expression(Language::Jsonata, &json!(3)).is_err());
    }

    #[test]
    fn the_catalog_has_every_node_type_with_its_schema() {
        let c = catalog();
        let types = c["nodeTypes"].as_array().expect("a list");
        assert_eq!(types.len(), crate::catalog::NODE_TYPES.len());
        let transform = types
            .iter()
            .find(|t| t["type"] == "transform")
            .expect("transform");
        assert!(
            transform["schema"].to_string().contains("\"expr\""),
            "{transform}"
        );
        assert_eq!(templates().as_array().map(Vec::len), Some(3));
    }
}
