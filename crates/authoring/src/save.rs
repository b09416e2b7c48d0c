//! `mcpflow_save_tool` and `mcpflow_delete_tool`: a graph tool written to a file of its own
//! (`DIR/NAME.yaml`, DIR being the config's first `include: [DIR/*.yaml]` entry), so the file
//! a person wrote is never rewritten. A save is checked against the whole config as it is on
//! disk now (another client's save included), written atomically (a temporary file renamed
//! over the old one), and then served through [`Publish::reload`]; a save that is refused at
//! any step leaves every file as it was, byte for byte. Saves are taken one at a time, so two
//! clients saving at once both land. The web UI's editor saves through the same path
//! ([`save_definition`]) with the [`version`] of the file it opened ([`Expected`]): a file
//! changed on disk since then is reported, not overwritten.

use std::path::{Path, PathBuf};

use mcpflow_config::Loaded;
use serde_json::{Value, json};

use crate::answer::Answer;
use crate::args::{Args, Malformed};
use crate::tools::Spec;
use crate::{Publish, Served};

/// The first line of every file a save writes.
const HEADER: &str = "# Written by mcpflow_save_tool. Editing it by hand is fine; the next save \
                      of this tool replaces it whole.\n";

/// What the saver expects of the tool's file before it writes: nothing (the MCP tool: saves
/// are taken in turn, the last one wins), or that it is still as the editor read it, so a
/// change on disk made meanwhile (by hand, by another client) is reported, not overwritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    Anything,
    /// A new tool: its file must not exist.
    Absent,
    /// The file's [`version`] when it was read.
    Version(String),
}

/// A save that was written and is served.
#[derive(Debug, Clone)]
pub struct Saved {
    pub name: String,
    pub file: PathBuf,
    pub created: bool,
    pub warnings: Vec<Value>,
    /// The graph tools served now.
    pub tools: Vec<String>,
    /// [`version`] of the file as written.
    pub version: String,
}

/// Why a save did not happen; every file is as it was (or the message says which is not).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SaveError {
    /// The config on disk does not load, so nothing can be saved into it.
    #[error("{0}")]
    BrokenOnDisk(String),
    /// The definition does not pass the checks.
    #[error("the definition does not pass the checks; nothing was written")]
    Invalid(Vec<Value>),
    /// The tool's file changed since the editor read it.
    #[error("{0}")]
    Conflict(String),
    /// The config does not let tools be saved (`authoring.save`).
    #[error("{0}")]
    Disabled(String),
    /// It cannot be saved there, or writing or serving it failed.
    #[error("{0}")]
    Refused(String),
}

/// What identifies a tool file's contents, to tell whether it changed: `sha256:<hex>` of its
/// bytes (stable across builds and processes, unlike the standard hasher).
pub fn version(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in Sha256::digest(bytes) {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

pub(crate) async fn save(
    served: &Served,
    publish: Option<&dyn Publish>,
    spec: &Spec,
    args: &Args<'_>,
) -> Answer {
    let Some(publish) = publish else {
        return not_servable();
    };
    let Some(definition) = args.value("definition") else {
        return Malformed::new(spec, "missing `definition`").into();
    };
    match save_definition(&served.engine, publish, definition, Expected::Anything).await {
        Ok(saved) => Answer::Ok(json!({
            "saved": saved.name,
            "file": saved.file.display().to_string(),
            "created": saved.created,
            "warnings": saved.warnings,
            "tools": saved.tools,
            "next": "the tool is listed now (clients were sent notifications/tools/list_changed); call it like any tool",
        })),
        Err(SaveError::Invalid(problems)) => Answer::Failed(json!({
            "saved": false,
            "why": "the definition does not pass the checks; nothing was written",
            "problemCount": problems.len(),
            "problems": problems,
            "next": "fix each problem (each has a path and a fix), check with mcpflow_validate_tool, then save again",
        })),
        Err(e) => Answer::Refused(e.to_string()),
    }
}

/// One save, the path of `mcpflow_save_tool` and of the web UI's editor: under the save lock,
/// `definition` (an object, or YAML text whose layout and comments are kept) is checked against
/// the whole config as it is on disk now, its file checked against `expected`, written
/// atomically, read back as the tool checked, and served through [`Publish::reload`].
/// `engine` lends its upstream pool to the check.
pub async fn save_definition(
    engine: &mcpflow_engine::Engine,
    publish: &dyn Publish,
    definition: &Value,
    expected: Expected,
) -> Result<Saved, SaveError> {
    let _one_at_a_time = publish.saving().lock().await;
    let on_disk = publish
        .load()
        .map_err(|e| SaveError::BrokenOnDisk(broken_on_disk(&e)))?;
    // The config being written into says whether it may be (turned off since it was served,
    // it is off).
    crate::edit::saving_allowed(&on_disk).map_err(SaveError::Disabled)?;
    let current = Served {
        engine: engine.clone(),
        config: std::sync::Arc::new(on_disk.config.clone()),
        base_dir: on_disk.base_dir.clone(),
    };
    let candidate = crate::definition::compile(&current, definition).map_err(SaveError::Invalid)?;
    let name = candidate.name.clone();
    let file = target(&on_disk, &name).map_err(SaveError::Refused)?;
    let text =
        file_text(definition).map_err(|e| SaveError::Refused(format!("mcpflow_save_tool: {e}")))?;
    let before = std::fs::read(&file).ok();
    if expected == Expected::Absent && before.is_some() {
        return Err(SaveError::Conflict(format!(
            "a tool named `{name}` exists already ({}): open it to change it, or choose \
             another name; nothing was written",
            file.display()
        )));
    }
    unchanged(&file, before.as_deref(), &expected, "the tool")?;
    // The file must read back as the tool that was checked (YAML text moved under `tools:`
    // could, in a corner, read otherwise).
    let checked = candidate
        .loaded
        .config
        .tools
        .iter()
        .find(|t| t.name == name)
        .cloned();
    let reads_back = |loaded: mcpflow_config::Loaded| {
        let tool = loaded.config.tools.into_iter().find(|t| t.name == name);
        tool.is_some() && tool == checked
    };
    let written = Written {
        file: &file,
        before: before.as_deref(),
        text: &text,
        by: "mcpflow_save_tool",
        hint: "submit the definition as a JSON object instead of text",
    };
    let tools = commit(publish, written, reads_back).await?;
    Ok(Saved {
        name,
        file,
        created: before.is_none(),
        warnings: candidate.warnings,
        tools,
        version: version(text.as_bytes()),
    })
}

/// Refuses a save whose file is not as the saver expects it: changed or removed since it was
/// opened (`noun` names what was opened, for the message). [`Expected::Absent`] is the
/// caller's to word.
pub(crate) fn unchanged(
    file: &Path,
    before: Option<&[u8]>,
    expected: &Expected,
    noun: &str,
) -> Result<(), SaveError> {
    match (expected, before) {
        (Expected::Version(v), Some(bytes)) if *v != version(bytes) => {
            Err(SaveError::Conflict(format!(
                "{} changed on disk since it was opened (by hand or by another save); nothing \
                 was written: reload {noun} to see the change, then make your edit again",
                file.display()
            )))
        }
        (Expected::Version(_), None) => Err(SaveError::Conflict(format!(
            "{} was removed from disk since it was opened; nothing was written: save {noun} \
             as new to write it again",
            file.display()
        ))),
        _ => Ok(()),
    }
}

/// One file a save writes, once what goes in it is checked.
pub(crate) struct Written<'a> {
    pub(crate) file: &'a Path,
    /// Its bytes before the save (`None`: it did not exist), put back on a failure.
    pub(crate) before: Option<&'a [u8]>,
    pub(crate) text: &'a str,
    /// Who writes, for messages (`mcpflow_save_tool`).
    pub(crate) by: &'a str,
    /// What to try when the file does not read back as checked.
    pub(crate) hint: &'a str,
}

/// The steps every save shares, under the save lock its caller holds: `written` written
/// atomically, the config on disk read back (`reads_back` says whether it holds what was
/// checked), then served through [`Publish::reload`]; a failure at any step puts the file back.
/// Answers the graph tools served now.
pub(crate) async fn commit(
    publish: &dyn Publish,
    written: Written<'_>,
    reads_back: impl FnOnce(mcpflow_config::Loaded) -> bool,
) -> Result<Vec<String>, SaveError> {
    let Written {
        file,
        before,
        text,
        by,
        hint,
    } = written;
    if let Err(e) = write_atomically(file, text.as_bytes()) {
        return Err(SaveError::Refused(format!(
            "{by}: cannot write {}: {e}; nothing was changed",
            file.display()
        )));
    }
    if !publish.load().is_ok_and(reads_back) {
        let restored = restore(file, before);
        return Err(SaveError::Refused(format!(
            "{by}: {} did not read back as what was checked; {restored}; {hint}",
            file.display()
        )));
    }
    match publish.reload().await {
        Ok(tools) => Ok(tools),
        Err(why) => {
            let restored = restore(file, before);
            Err(SaveError::Refused(format!(
                "{by}: the saved config could not be served ({why}); {restored}"
            )))
        }
    }
}

pub(crate) async fn delete(publish: Option<&dyn Publish>, spec: &Spec, args: &Args<'_>) -> Answer {
    let Some(publish) = publish else {
        return not_servable();
    };
    let Some(name) = args.str("name") else {
        return Malformed::new(spec, "missing `name`").into();
    };
    let _one_at_a_time = publish.saving().lock().await;
    let on_disk = match publish.load() {
        Ok(loaded) => loaded,
        Err(e) => return Answer::Refused(broken_on_disk(&e)),
    };
    if !on_disk.config.tools.iter().any(|t| t.name == name) {
        let names: Vec<&str> = on_disk
            .config
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        return Answer::Refused(format!(
            "mcpflow_delete_tool: no graph tool named `{name}`; the config has: {}",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ));
    }
    let file = match target(&on_disk, name) {
        Ok(file) => file,
        Err(refusal) => return Answer::Refused(refusal),
    };
    let before = match std::fs::read(&file) {
        Ok(bytes) => bytes,
        Err(e) => {
            return Answer::Refused(format!(
                "mcpflow_delete_tool: cannot read {}: {e}",
                file.display()
            ));
        }
    };
    if let Err(e) = std::fs::remove_file(&file) {
        return Answer::Refused(format!(
            "mcpflow_delete_tool: cannot remove {}: {e}; nothing was changed",
            file.display()
        ));
    }
    // What still calls the tool (a `call` node, a hook) makes the config fail to load.
    if let Err(e) = publish.load() {
        let restored = restore(&file, Some(&before));
        return Answer::Failed(json!({
            "deleted": false,
            "why": format!("without `{name}` the config does not load; {restored}"),
            "problems": e.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "next": "change or delete what uses the tool first",
        }));
    }
    match publish.reload().await {
        Ok(served_tools) => Answer::Ok(json!({
            "deleted": name,
            "file": file.display().to_string(),
            "tools": served_tools,
        })),
        Err(why) => {
            let restored = restore(&file, Some(&before));
            Answer::Refused(format!(
                "mcpflow_delete_tool: the config without `{name}` could not be served ({why}); {restored}"
            ))
        }
    }
}

/// The file tool `name` is saved in, or why it cannot be: no save directory, a name that
/// cannot be a file name, or a tool written by hand in another file.
pub(crate) fn target(loaded: &Loaded, name: &str) -> Result<PathBuf, String> {
    let Some(dir) = mcpflow_config::save_dir(&loaded.config.include) else {
        return Err(
            "saving needs a directory of tool files the config includes: add \
                    `include: [\"tools/*.yaml\"]` to the config (the first `DIR/*.yaml` entry \
                    is where tools are saved)"
                .into(),
        );
    };
    if name.is_empty()
        || name.len() > 128
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(format!(
            "the tool name \"{name}\" becomes its file name when saved: use at most 128 ASCII \
             letters, digits, `_`, `-` and `.`, not starting with `.`"
        ));
    }
    let file = loaded.base_dir.join(dir).join(format!("{name}.yaml"));
    let written_in = loaded
        .config
        .tools
        .iter()
        .position(|t| t.name == name)
        .and_then(|i| loaded.locate(&format!("/tools/{i}")));
    if let Some(place) = written_in
        && !same_file(Path::new(&place.file), &file)
    {
        return Err(format!(
            "`{name}` is written at {place}, which mcpflow never rewrites; edit it there, or \
             move it out of that file and save it again"
        ));
    }
    Ok(file)
}

/// The file's text: the definition under `tools:`, as submitted (comments and layout of YAML
/// text kept) or, for an object, as YAML.
fn file_text(definition: &Value) -> Result<String, String> {
    let body = match definition {
        Value::String(text) => text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .strip_prefix("---")
            .unwrap_or(text)
            .to_owned(),
        other => serde_saphyr::to_string(other)
            .map_err(|e| format!("the definition cannot be written as YAML: {e}"))?,
    };
    let mut out = String::from(HEADER);
    out.push_str("tools:\n");
    let mut first = true;
    for line in body.trim_end().lines() {
        if first {
            if line.trim().is_empty() {
                continue;
            }
            out.push_str("  - ");
            first = false;
        } else if !line.is_empty() {
            out.push_str("    ");
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// Writes `bytes` to `file` so that a reader sees the old file or the new one, never a part.
pub(crate) fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // A dot name: the `DIR/*.yaml` include never reads a half-written file.
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        file.file_name().and_then(|n| n.to_str()).unwrap_or("tool"),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, file)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Puts `file` back as it was (absent when `before` is `None`); says how that went.
fn restore(file: &Path, before: Option<&[u8]>) -> String {
    let restored = match before {
        Some(bytes) => write_atomically(file, bytes),
        None => std::fs::remove_file(file),
    };
    match restored {
        Ok(()) => "every file is as it was".into(),
        Err(e) => format!(
            "and {} could not be put back ({e}): check it by hand",
            file.display()
        ),
    }
}

pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn not_servable() -> Answer {
    Answer::Refused(
        "saving is not available here: this server was not started from a config file it can \
         reload (`mcpflow serve CONFIG` with `authoring: {save: true}`)"
            .into(),
    )
}

fn broken_on_disk(e: &mcpflow_config::ConfigErrors) -> String {
    format!("the config on disk does not load, so nothing can be saved into it; fix it first:\n{e}")
}
