//! The web UI's hook flows: the hooks of the config on disk, one hook checked as it is typed, a
//! flow file read for an import, and a save of the hooks file (`authoring.hooksFile`), the one
//! file of hooks mcpflow writes (a person's `hooks:` in the config are shown, never rewritten).
//! A save takes the tools' save path ([`crate::save`]): under the save lock, every hook checked,
//! the whole config on disk loaded with the candidate file in place before anything is
//! written ([`Publish::load_with_hooks`]), the file as the editor opened it ([`Expected`]),
//! written atomically, read back, served; put back on any failure.

use std::path::{Path, PathBuf};

use mcpflow_model::proxy::Hook;
use mcpflow_sandbox::{SandboxError, SandboxOptions, Script};
use serde_json::{Value, json};

use crate::Publish;
use crate::save::{Expected, SaveError, Written, commit, same_file, unchanged, version};

/// The first line of the hooks file.
const HEADER: &str = "# Written by mcpflow's hook flow editor (authoring.hooksFile). Editing it by \
                      hand is fine; the next save replaces it whole.\n";

/// Where a problem of submitted text is placed (the checks' own name for it).
const SUBMITTED: &str = "flow";

/// Every hook of the config on disk, and where the editor may save.
#[derive(Debug, Clone)]
pub struct HookFlows {
    /// In config order: the config's own, then the hooks file's.
    pub hooks: Vec<ListedHook>,
    /// The hooks file, when the config names one.
    pub file: Option<PathBuf>,
    /// [`version`] of the hooks file; `None` while it does not exist.
    pub version: Option<String>,
    /// Whether hooks can be saved here, or why not.
    pub save: Result<(), String>,
    /// The proxied upstreams (whose flows the hooks make), in the config's order.
    pub upstreams: Vec<String>,
    /// The graph tools a `graphTool` hook may name.
    pub graph_tools: Vec<String>,
}

/// One hook as configured.
#[derive(Debug, Clone)]
pub struct ListedHook {
    pub hook: Value,
    /// In the hooks file, so a save may change it (else written by a person).
    pub editable: bool,
    /// `file:line:col`.
    pub written_at: Option<String>,
}

/// The hook flows of the config on disk; `Err` when it does not load.
pub fn hook_flows(publish: &dyn Publish) -> Result<HookFlows, String> {
    let loaded = publish.load().map_err(|e| e.to_string())?;
    let file = mcpflow_config::hooks_file(&loaded.config, &loaded.base_dir);
    let save = saving_hooks_allowed(&loaded);
    let bytes = file.as_ref().and_then(|f| std::fs::read(f).ok());
    let hooks = loaded
        .config
        .hooks
        .iter()
        .enumerate()
        .map(|(i, hook)| {
            let place = loaded.locate(&format!("/hooks/{i}"));
            let editable = match (&file, &place) {
                (Some(file), Some(place)) => same_file(Path::new(&place.file), file),
                _ => false,
            };
            ListedHook {
                hook: serde_json::to_value(hook).unwrap_or(Value::Null),
                editable,
                written_at: place.map(|p| p.to_string()),
            }
        })
        .collect();
    let upstreams = loaded
        .config
        .proxy
        .as_ref()
        .map(|p| p.upstreams.keys().cloned().collect())
        .unwrap_or_default();
    let graph_tools = loaded.config.tools.iter().map(|t| t.name.clone()).collect();
    Ok(HookFlows {
        hooks,
        file,
        version: bytes.as_deref().map(version),
        save,
        upstreams,
        graph_tools,
    })
}

/// Why hooks cannot be saved into `loaded`, if they cannot.
fn saving_hooks_allowed(loaded: &mcpflow_config::Loaded) -> Result<(), String> {
    crate::edit::saving_allowed(loaded)?;
    if mcpflow_config::hooks_file(&loaded.config, &loaded.base_dir).is_none() {
        return Err(
            "saving hook flows needs a file of their own: add `hooksFile: hooks.yaml` \
                    under `authoring:` (the editor writes only that file)"
                .into(),
        );
    }
    Ok(())
}

/// The problems of one hook (an object, as in `hooks:`), each `{path, message, fix}` with a
/// pointer into the hook, and for a script's syntax error its `line` and `column` in the
/// script. The checks a load makes of a hook that need only the hook: its keys and their types,
/// one body, a script that compiles in the sandbox. Blocks while the script compiles.
pub fn check_hook(hook: &Value) -> Vec<Value> {
    if !hook.is_object() {
        return vec![problem(
            "",
            "a hook is an object: id, method, phase, script (or graphTool)",
            "start from a new hook",
        )];
    }
    let parsed: Hook = match serde_json::from_value(hook.clone()) {
        Ok(h) => h,
        Err(e) => {
            return vec![problem(
                "",
                &e.to_string(),
                "a hook has `id`, `method` (tools/call or tools/list), `phase` (pre or post) and \
                 `script`; `upstream`, `tool`, `blocking`, `onHookError`, `timeoutMs`, `enabled` \
                 are optional",
            )];
        }
    };
    let mut problems = Vec::new();
    if parsed.id.trim().is_empty() {
        problems.push(problem("/id", "a hook's `id` is empty", "name the hook"));
    }
    if parsed.timeout_ms == Some(0) {
        problems.push(problem(
            "/timeoutMs",
            "`timeoutMs` must be at least 1",
            "leave it out for the default of 100 ms",
        ));
    }
    match (&parsed.script, &parsed.graph_tool) {
        (Some(source), None) => {
            let name = format!("hook:{}", parsed.id);
            if let Err(e) = Script::check(&SandboxOptions::default(), &name, source) {
                problems.push(script_problem(&e));
            }
        }
        (None, Some(_)) => {}
        _ => problems.push(problem(
            "",
            "a hook needs exactly one of `script` and `graphTool`",
            "write a script, like `(ctx) => undefined` (let everything through)",
        )),
    }
    problems
}

fn script_problem(e: &SandboxError) -> Value {
    let fix = "a hook's script is a function of the context, like `(ctx) => \
               ctx.request.params.arguments.text === 'no' ? {reject: 'refused'} : undefined`";
    match e {
        SandboxError::Syntax {
            line,
            column,
            message,
            ..
        } => {
            let mut p = problem("/script", &format!("syntax error: {message}"), fix);
            p["line"] = json!(line);
            p["column"] = json!(column);
            p
        }
        other => problem("/script", &other.to_string(), fix),
    }
}

fn problem(path: &str, message: &str, fix: &str) -> Value {
    json!({"path": if path.is_empty() { "/" } else { path }, "message": message, "fix": fix})
}

/// A hook flow file (`hooks:`, as an export writes it) read for an import: its hooks, or the
/// problems that keep it out (YAML that does not parse at its line, each hook's own problems at
/// `/hooks/N/…`).
pub fn read_flow(text: &str) -> Result<Vec<Value>, Vec<Value>> {
    let value = mcpflow_config::parse_value(text, SUBMITTED).map_err(|e| {
        let mut p = problem(
            "/",
            &e.message,
            "fix the YAML near the line and column given",
        );
        if e.line > 0 {
            p["line"] = json!(e.line);
            p["column"] = json!(e.col);
        }
        vec![p]
    })?;
    let Some(hooks) = value.get("hooks").and_then(Value::as_array) else {
        return Err(vec![problem(
            "/",
            "a hook flow file is a mapping with `hooks:`, a list of hooks",
            "export a flow from the hook flow editor to see the shape",
        )]);
    };
    if let Some(other) = value
        .as_object()
        .and_then(|root| root.keys().find(|k| *k != "hooks"))
    {
        return Err(vec![problem(
            &format!("/{other}"),
            &format!("unknown key \"{other}\" in a hook flow file, which holds `hooks:` only"),
            "remove it",
        )]);
    }
    let problems = prefixed(hooks);
    if problems.is_empty() {
        Ok(hooks.clone())
    } else {
        Err(problems)
    }
}

/// Every hook's problems, placed at `/hooks/N/…`.
fn prefixed(hooks: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, hook) in hooks.iter().enumerate() {
        for mut p in check_hook(hook) {
            let path = p["path"].as_str().unwrap_or("/").trim_end_matches('/');
            p["path"] = json!(format!("/hooks/{i}{path}"));
            out.push(p);
        }
    }
    out
}

/// A save of the hook flows that was written and is served.
#[derive(Debug, Clone)]
pub struct SavedHooks {
    pub file: PathBuf,
    pub created: bool,
    /// [`version`] of the file as written.
    pub version: String,
    /// Hooks in the file.
    pub hooks: usize,
    /// The graph tools served now.
    pub tools: Vec<String>,
}

/// Writes `hooks` (the hooks file's whole list, in order) as the hooks file, through the save
/// path every save takes: checked (each hook, then the whole config on disk with this file in
/// place), the file as `expected`, written atomically, read back, served.
pub async fn save_hooks(
    publish: &dyn Publish,
    hooks: &[Value],
    expected: Expected,
) -> Result<SavedHooks, SaveError> {
    let _one_at_a_time = publish.saving().lock().await;
    let on_disk = publish.load().map_err(|e| {
        SaveError::BrokenOnDisk(format!(
            "the config on disk does not load, so nothing can be saved into it; fix it first:\n{e}"
        ))
    })?;
    saving_hooks_allowed(&on_disk).map_err(SaveError::Disabled)?;
    let Some(file) = mcpflow_config::hooks_file(&on_disk.config, &on_disk.base_dir) else {
        return Err(SaveError::Disabled("no hooks file".into()));
    };
    let problems = prefixed(hooks);
    if !problems.is_empty() {
        return Err(SaveError::Invalid(problems));
    }
    let body = serde_saphyr::to_string(&json!({ "hooks": hooks }))
        .map_err(|e| SaveError::Refused(format!("the hooks cannot be written as YAML: {e}")))?;
    let text = format!("{HEADER}{body}");
    // The whole config as it will load with this file, before a byte is written: a duplicate
    // id, a graph tool that does not exist, hooks without `proxy:` are refused here.
    let candidate = publish.load_with_hooks(&text).map_err(|e| {
        SaveError::Invalid(
            e.errors
                .iter()
                .map(|err| {
                    json!({
                        "path": err.pointer,
                        "message": err.message,
                        "fix": err.hint.clone().unwrap_or_else(|| "fix the hook it names".into()),
                        "at": format!("{}:{}:{}", err.file, err.line, err.col),
                    })
                })
                .collect(),
        )
    })?;
    let before = std::fs::read(&file).ok();
    if expected == Expected::Absent && before.is_some() {
        return Err(SaveError::Conflict(format!(
            "{} was written since the hook flows were opened (by hand or by another save); \
             nothing was written: reload the hook flows to see it, then make your edit again",
            file.display()
        )));
    }
    unchanged(&file, before.as_deref(), &expected, "the hook flows")?;
    let checked = candidate.config.hooks;
    let written = Written {
        file: &file,
        before: before.as_deref(),
        text: &text,
        by: "saving the hook flows",
        hint: "save again",
    };
    let tools = commit(publish, written, |loaded| loaded.config.hooks == checked).await?;
    Ok(SavedHooks {
        file,
        created: before.is_none(),
        version: version(text.as_bytes()),
        hooks: hooks.len(),
        tools,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_is_checked_with_its_script_errors_placed() {
        let good = json!({"id": "g", "method": "tools/call", "phase": "pre",
            "script": "(ctx) => undefined"});
        assert_eq!(check_hook(&good), Vec::<Value>::new());
        let broken = json!({"id": "g", "method": "tools/call", "phase": "pre",
            "script": "(ctx) => {\n  return {reject: 'x'\n}"});
        let problems = check_hook(&broken);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0]["path"], "/script");
        assert!(
            problems[0]["line"].as_u64().is_some_and(|l| l >= 2),
            "{problems:?}"
        );
        assert!(problems[0]["column"].is_u64(), "{problems:?}");
        let both = json!({"id": "g", "method": "tools/call", "phase": "pre"});
        assert!(
            check_hook(&both)[0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("exactly one"))
        );
        let typo = json!({"id": "g", "method": "tools/call", "phase": "pre", "scrpt": "x"});
        assert!(
            check_hook(&typo)[0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("scrpt"))
        );
    }

    #[test]
    fn a_flow_file_is_read_or_refused_with_its_problems() {
        let flow = "hooks:\n  - id: a\n    method: tools/call\n    phase: pre\n    script: '(ctx) => undefined'\n";
        assert_eq!(read_flow(flow).map(|h| h.len()), Ok(1));
        let broken = flow.replace("undefined'", "{'");
        let problems = read_flow(&broken).expect_err("a broken script");
        assert_eq!(problems[0]["path"], "/hooks/0/script", "{problems:?}");
        let unparsed = read_flow("hooks: [\n  - {id: a").expect_err("not YAML");
        assert!(unparsed[0]["line"].is_u64(), "{unparsed:?}");
        assert!(read_flow("tools: []").is_err());
    }
}
