//! `mcpflow_validate_tool`, and the check every inline run starts with: one submitted tool
//! definition loaded as a tool of the running config by the config loader
//! ([`mcpflow_config::Loader::read_tool`]: structure, references, reachability, servers, call
//! cycles) and compiled by the engine (every expression, rule, script and schema), the same
//! pipeline as `mcpflow validate`. Every problem comes back at once, each at its path inside
//! the definition, with how to fix it.

use mcpflow_config::{ConfigError, Loaded};
use mcpflow_engine::Engine;
use serde_json::{Value, json};

use crate::Served;
use crate::answer::Answer;
use crate::args::{Args, Malformed};
use crate::tools::{PREFIX, Spec};

/// The name positions in the submitted text are reported under.
const SUBMITTED: &str = "definition";

/// A definition that passed every check: the config with it, and an engine over that config
/// sharing the running engine's upstream pool.
pub(crate) struct Candidate {
    pub loaded: Loaded,
    pub engine: Engine,
    pub name: String,
    pub warnings: Vec<Value>,
    pub replaces: bool,
}

/// Loads and compiles `definition` (an object, or YAML/JSON text) as a tool of `served`'s config.
pub(crate) fn compile(served: &Served, definition: &Value) -> Result<Candidate, Vec<Value>> {
    let mut problems = match compile_all(served, definition) {
        Ok(candidate) => return Ok(candidate),
        Err(problems) => problems,
    };
    let submitted = as_value(definition);
    for p in &mut problems {
        locate(&submitted, p);
    }
    Err(problems)
}

/// Every problem of a definition, from the definition as given and with its misspelt node
/// types read as meant.
fn compile_all(served: &Served, definition: &Value) -> Result<Candidate, Vec<Value>> {
    let mut problems = match compile_once(served, definition) {
        Ok(candidate) => return Ok(candidate),
        Err(problems) => problems,
    };
    // A node whose type is misspelt is not compiled at all, so its expressions would only be
    // checked in the next round. Check a copy with the near-miss types read as meant too, and
    // report what that finds beside the misspelling: every problem at once.
    if let Some((copy, corrected)) = corrected_types(definition)
        && let Err(more) = compile_once(served, &copy)
    {
        for mut p in more {
            let seen = problems
                .iter()
                .any(|q| q["path"] == p["path"] && q["message"] == p["message"]);
            let about_type = p["path"]
                .as_str()
                .is_some_and(|path| path.ends_with("/type"));
            if !seen && !about_type {
                p["note"] = json!(format!("found by reading {corrected} as meant"));
                problems.push(p);
            }
        }
    }
    Err(problems)
}

/// The submitted definition as a value: text is read as YAML (JSON is YAML too).
fn as_value(definition: &Value) -> Value {
    match definition {
        Value::String(text) => serde_saphyr::from_str(text).unwrap_or(Value::Null),
        other => other.clone(),
    }
}

/// What a program needs to apply a problem's fix without reading its prose: for a misspelt
/// node type, the type meant as `suggestion` (the value to write at `path`); for a broken
/// expression, the JSONata `code`, the `position` and an `at` line with a caret under it.
fn locate(submitted: &Value, problem: &mut Value) {
    let Some(path) = problem["path"].as_str() else {
        return;
    };
    let Some(written) = submitted.pointer(path).and_then(Value::as_str) else {
        return;
    };
    if path.starts_with("/nodes/") && path.ends_with("/type") {
        if let crate::catalog::Resolved::Corrected { node, .. } = crate::catalog::resolve(written) {
            problem["suggestion"] = json!(node.name);
        }
    } else if problem["message"]
        .as_str()
        .is_some_and(|m| m.contains("JSONata"))
        && let Err(e) = mcpflow_expr::Jsonata::compile(written)
    {
        if let Some(code) = &e.code {
            problem["code"] = json!(code);
        }
        if let Some(position) = e.position {
            problem["position"] = json!(position);
            problem["at"] = json!(crate::expression::pointer_at(written, position));
            problem["fix"] = json!(format!(
                "{} (`position` is just past where it was found, `at` marks it); try the repaired expression with mcpflow_test_expression",
                crate::expression::fix(e.code.as_deref())
            ));
        }
    }
}

/// A copy of an object definition with near-miss node types (`transfrom`, `MCP_NODE`) read
/// as the types meant, and which were read so; `None` when there is none.
fn corrected_types(definition: &Value) -> Option<(Value, String)> {
    let mut copy = definition.clone();
    let nodes = copy.get_mut("nodes")?.as_array_mut()?;
    let mut corrected = Vec::new();
    for node in nodes {
        let Some(t) = node.get("type").and_then(Value::as_str) else {
            continue;
        };
        if let crate::catalog::Resolved::Corrected { node: meant, .. } = crate::catalog::resolve(t)
        {
            corrected.push(format!("\"{t}\""));
            node["type"] = json!(meant.name);
        }
    }
    (!corrected.is_empty()).then(|| (copy, format!("node type {}", corrected.join(", "))))
}

/// One load and compile of a definition as given.
fn compile_once(served: &Served, definition: &Value) -> Result<Candidate, Vec<Value>> {
    // Lines and columns mean something only in text the model wrote itself.
    let (text, positions) = match definition {
        Value::String(s) => (s.clone(), true),
        other => (
            serde_json::to_string_pretty(other).unwrap_or_default(),
            false,
        ),
    };
    let pool = served.engine.pool().clone();
    let read =
        mcpflow_config::Loader::new().read_tool(&served.config, &served.base_dir, &text, SUBMITTED);
    let (draft, index) = match read {
        Ok(x) => x,
        Err(e) => {
            return Err(e
                .errors
                .iter()
                .map(|e| problem(e, None, positions))
                .collect());
        }
    };
    let compiled = draft.compile(|config, _| Engine::new(config, pool), mcpflow_engine::check);
    let mut problems = Vec::new();
    let name = definition_name(definition, &text);
    if let Some(n) = &name
        && crate::is_reserved(n)
    {
        problems.push(json!({
            "path": "/name",
            "message": format!("the name \"{n}\" starts with `{PREFIX}`, which is reserved for the built-in authoring tools"),
            "fix": "choose a name without that prefix",
        }));
    }
    match compiled {
        Ok((loaded, engine)) if problems.is_empty() => {
            let warnings = loaded
                .warnings
                .iter()
                .map(|w| problem(w, Some(index), positions))
                .collect();
            let replaces = index < served.config.tools.len();
            let name = loaded
                .config
                .tools
                .get(index)
                .map(|t| t.name.clone())
                .unwrap_or_default();
            Ok(Candidate {
                loaded,
                engine,
                name,
                warnings,
                replaces,
            })
        }
        Ok(_) => Err(problems),
        Err(errors) => {
            problems.extend(
                errors
                    .errors
                    .iter()
                    .map(|e| problem(e, Some(index), positions)),
            );
            Err(problems)
        }
    }
}

/// The submitted name, read leniently (for the reserved-prefix check).
fn definition_name(definition: &Value, text: &str) -> Option<String> {
    if let Some(n) = definition.get("name").and_then(Value::as_str) {
        return Some(n.to_owned());
    }
    text.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix("name:")?;
        Some(rest.trim().trim_matches(['"', '\'']).to_owned())
    })
}

/// One problem as the model reads it: the path inside its definition (or where else in the
/// config), the message, how to fix it, and the line and column in submitted text.
fn problem(e: &ConfigError, index: Option<usize>, positions: bool) -> Value {
    let base = index.map(|i| format!("/tools/{i}"));
    let inside = base.as_deref().and_then(|b| {
        let rest = e.pointer.strip_prefix(b)?;
        (rest.is_empty() || rest.starts_with('/')).then_some(rest)
    });
    let mut out = json!({"message": e.message});
    match inside {
        Some("") => out["path"] = json!("/"),
        Some(rest) => out["path"] = json!(rest),
        None if e.pointer.is_empty() => out["path"] = json!("/"),
        None => {
            out["elsewhere"] = json!(format!(
                "{} (in the running config, not in your definition)",
                e.pointer
            ))
        }
    }
    out["fix"] = json!(
        e.hint
            .clone()
            .unwrap_or_else(|| default_fix(&e.pointer, &e.message))
    );
    if positions && e.file == SUBMITTED && e.line > 0 {
        out["line"] = json!(e.line);
        out["column"] = json!(e.col);
    }
    out
}

/// A fix for problems the loader gives no hint for, by where they are.
fn default_fix(pointer: &str, message: &str) -> String {
    let last = pointer.rsplit('/').next().unwrap_or_default();
    if message.contains("JSONata") {
        "test the expression with mcpflow_test_expression; mcpflow_syntax topic \"jsonata\" has the rules".into()
    } else if message.contains("JSON Logic") {
        "test the rule with mcpflow_test_expression {\"logic\": ...}; mcpflow_syntax topic \"jsonlogic\"".into()
    } else if message.contains("JSON Schema") {
        "write a JSON Schema object such as {\"type\": \"object\", \"properties\": {...}}".into()
    } else if pointer.contains("/nodes/") {
        format!("see the node's fields with mcpflow_node_details (problem at `{last}`)")
    } else {
        "see mcpflow_syntax topic \"graph\" for a tool's fields".into()
    }
}

pub(crate) fn validate(served: &Served, spec: &Spec, args: &Args<'_>) -> Answer {
    let Some(definition) = args.value("definition") else {
        return Malformed::new(spec, "missing `definition`").into();
    };
    match compile(served, definition) {
        Ok(c) => {
            let mut out = json!({
                "valid": true,
                "tool": c.name,
                "nodes": c.loaded.config.tools.iter().find(|t| t.name == c.name).map_or(0, |t| t.nodes.len()),
                "next": "run it with mcpflow_run_tool {\"definition\": ..., \"arguments\": {...}}",
            });
            if c.replaces {
                out["replaces"] = json!(format!(
                    "a saved tool is named \"{}\"; this definition would replace it",
                    c.name
                ));
            }
            if !c.warnings.is_empty() {
                out["warnings"] = json!(c.warnings);
            }
            Answer::Ok(out)
        }
        Err(problems) => Answer::Ok(json!({
            "valid": false,
            "problemCount": problems.len(),
            "problems": problems,
        })),
    }
}
