//! `include:`: graph tools kept in files of their own (a config split by hand, and the tools
//! `mcpflow_save_tool` writes, so that a save never rewrites the file a person wrote). Each
//! included file holds `tools:` only; its tools are appended to the config's, in `include`
//! order and, within a `DIR/*.yaml` entry, in file name order, with their own positions, so an
//! error in an included tool points into its file. The hooks file (`authoring.hooksFile`, the
//! web UI's hook flows) is merged the same way: `hooks:` only, after the config's own hooks.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::source::{Anchor, Pos, Problem, SourceMap};
use crate::yaml;

/// Most files one config may include: far above any hand-split config, and it bounds the work
/// a `DIR/*.yaml` over a huge directory can cause.
pub const MAX_INCLUDED_FILES: usize = 1000;

/// The files an `include` list names, as found on disk now; every entry that cannot be used
/// is a problem at its place in the config.
pub(crate) fn files(doc: &Value, dir: &Path, problems: &mut Vec<Problem>) -> Vec<PathBuf> {
    let Some(entries) = doc.get("include").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        // A non-string entry is the structure check's to report.
        let Some(entry) = entry.as_str() else {
            continue;
        };
        let pointer = format!("/include/{i}");
        match expand(entry, dir) {
            Ok(paths) => {
                for p in paths {
                    if !found.contains(&p) {
                        found.push(p);
                    }
                }
            }
            Err(message) => problems.push(Problem::new(pointer, message)),
        }
    }
    if found.len() > MAX_INCLUDED_FILES {
        problems.push(Problem::new(
            "/include",
            format!(
                "`include` names {} files; the limit is {MAX_INCLUDED_FILES}",
                found.len()
            ),
        ));
        found.truncate(MAX_INCLUDED_FILES);
    }
    found
}

/// The files one entry names: a path (which must exist), or `DIR/PATTERN` with `*`/`?` in the
/// file name only (a directory that does not exist yet names no file: the first save makes it).
fn expand(entry: &str, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let path = Path::new(entry);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("`{entry}` names no file; write a path like `tools/*.yaml`"))?;
    let parent = path.parent().unwrap_or(Path::new(""));
    if parent.to_string_lossy().contains(['*', '?']) {
        return Err(format!(
            "`{entry}`: only the file name may hold `*` or `?`; write one entry per directory, \
             like `tools/*.yaml`"
        ));
    }
    let base = dir.join(parent);
    if !name.contains(['*', '?']) {
        let file = base.join(name);
        if !file.is_file() {
            return Err(format!(
                "cannot read the included file {}: no such file",
                file.display()
            ));
        }
        return Ok(vec![file]);
    }
    let listing = match std::fs::read_dir(&base) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot list {}: {e}", base.display())),
    };
    let mut names: Vec<String> = listing
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        // Editors' and our own temporary files start with a dot.
        .filter(|n| !n.starts_with('.') && mcpflow_model::proxy::glob_match(name, n))
        .collect();
    names.sort();
    Ok(names.into_iter().map(|n| base.join(n)).collect())
}

/// Appends the tools of each file to `doc`'s `tools`, with their positions; a file that cannot
/// be read or is not `tools:` only is a problem in that file.
pub(crate) fn merge(
    files: &[PathBuf],
    config_path: &Path,
    doc: &mut Value,
    sources: &mut SourceMap,
    problems: &mut Vec<Problem>,
) {
    for path in files {
        let name = path.display().to_string();
        if same_file(path, config_path) {
            problems.push(Problem::new(
                "/include",
                format!("`include` names the config itself ({name}); name other files only"),
            ));
            continue;
        }
        let text = match crate::load::read(path, &name) {
            Ok(text) => text,
            Err(e) => {
                let file = sources.add_file(&name, "");
                for err in e.errors {
                    problems.push(Problem::new("", err.message).at(Anchor::At(file, Pos::UNKNOWN)));
                }
                continue;
            }
        };
        let part = Part {
            key: "tools",
            what: "graph tools",
            owner: "an included file",
            config_path,
        };
        if !part.merge(&name, &text, doc, sources, problems) {
            return;
        }
    }
}

/// What one file beside the config holds: a list under one key (`tools:` for an included file,
/// `hooks:` for the hooks file), appended to the config's own list with its own positions.
struct Part<'a> {
    key: &'static str,
    what: &'static str,
    owner: &'static str,
    config_path: &'a Path,
}

impl Part<'_> {
    /// Appends the file's list to `doc`'s; every problem of the file is placed in it. `false`
    /// when `doc` cannot take a list (its root is not a mapping): nothing more can be merged.
    fn merge(
        &self,
        name: &str,
        text: &str,
        doc: &mut Value,
        sources: &mut SourceMap,
        problems: &mut Vec<Problem>,
    ) -> bool {
        let key = self.key;
        let file = sources.add_file(name, text);
        let parsed = match yaml::parse(text, file) {
            Ok(p) => p,
            Err(problem) => {
                problems.push(problem);
                return true;
            }
        };
        let span_of = |pointer: &str| {
            parsed
                .spans
                .iter()
                .find(|(p, _)| p == pointer)
                .map(|(_, s)| *s)
        };
        let at = |pointer: &str, key: bool| {
            let pos = span_of(pointer)
                .and_then(|s| if key { s.key } else { Some(s.value) })
                .unwrap_or(Pos::START);
            Anchor::At(file, pos)
        };
        let Some(root) = parsed.value.as_object() else {
            problems.push(
                Problem::new(
                    "",
                    format!(
                        "{name} must be a mapping with `{key}:`, a list of {}",
                        self.what
                    ),
                )
                .at(Anchor::At(file, Pos::START)),
            );
            return true;
        };
        for other in root.keys().filter(|k| *k != key) {
            problems.push(
                Problem::new(
                    "",
                    format!(
                        "unknown key \"{other}\" in {}, which holds `{key}:` only; move it to {}",
                        self.owner,
                        self.config_path.display()
                    ),
                )
                .at(at(&format!("/{}", crate::yaml::escape(other)), true)),
            );
        }
        let items = match root.get(key) {
            Some(Value::Array(items)) => items,
            Some(Value::Null) | None => return true,
            Some(other) => {
                problems.push(
                    Problem::new(
                        "",
                        format!(
                            "`{key}` must be a list of {}, got {}",
                            self.what,
                            crate::place::describe(other)
                        ),
                    )
                    .at(at(&format!("/{key}"), false)),
                );
                return true;
            }
        };
        let Some(target) = list_of(doc, key) else {
            return false;
        };
        let first = target.len();
        target.extend(items.iter().cloned());
        let prefix = format!("/{key}/");
        let moved = |pointer: &str| -> Option<String> {
            let rest = pointer.strip_prefix(&prefix)?;
            let (index, tail) = rest.split_once('/').unwrap_or((rest, ""));
            let k = index.parse::<usize>().ok()?;
            let sep = if tail.is_empty() { "" } else { "/" };
            Some(format!("{prefix}{}{sep}{tail}", first + k))
        };
        for (pointer, span) in &parsed.spans {
            if let Some(moved) = moved(pointer) {
                sources.insert(moved, *span);
            }
        }
        for mut p in parsed.problems {
            match moved(&p.pointer) {
                Some(pointer) => p.pointer = pointer,
                None => {
                    if !matches!(p.anchor, Anchor::At(..)) {
                        p.anchor = Anchor::At(file, Pos::START);
                    }
                }
            }
            problems.push(p);
        }
        true
    }
}

/// The hooks file (`authoring.hooksFile`) of `doc`, relative to `dir`, when the config names one.
pub(crate) fn hooks_file_of(doc: &Value, dir: &Path) -> Option<PathBuf> {
    let name = doc.pointer("/authoring/hooksFile")?.as_str()?;
    (!name.is_empty()).then(|| dir.join(name))
}

/// The hooks file's path as the config names it, relative to the config's directory `base_dir`.
pub fn hooks_file(config: &mcpflow_model::Config, base_dir: &Path) -> Option<PathBuf> {
    let name = config.authoring.as_ref()?.hooks_file.as_deref()?;
    (!name.is_empty()).then(|| base_dir.join(name))
}

/// Appends the hooks of the hooks file (`authoring.hooksFile`) to `doc`'s `hooks`, read from
/// `text` when given (a save's candidate, checked before it is written), else from disk; a file
/// that does not exist yet holds none. The file may be neither the config nor one `include:`
/// reads as tools.
pub(crate) fn merge_hooks_file(
    config_path: &Path,
    dir: &Path,
    text: Option<&str>,
    doc: &mut Value,
    sources: &mut SourceMap,
    problems: &mut Vec<Problem>,
) {
    let Some(path) = hooks_file_of(doc, dir) else {
        return;
    };
    const AT: &str = "/authoring/hooksFile";
    let name = path.display().to_string();
    if same_file(&path, config_path) {
        problems.push(Problem::new(
            AT,
            format!("`hooksFile` names the config itself ({name}); name a file of its own, like `hooks.yaml`"),
        ));
        return;
    }
    let entries: Vec<&str> = doc
        .get("include")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(entry) = entries.iter().find(|e| names(e, dir, &path)) {
        problems.push(
            Problem::new(
                AT,
                format!("`hooksFile` ({name}) is also read as a file of graph tools by the include entry `{entry}`"),
            )
            .hint("keep the hooks file outside the directories `include` reads, like `hooks.yaml` beside the config"),
        );
        return;
    }
    let text = match text {
        Some(text) => text.to_owned(),
        None if !path.exists() => return,
        None => match crate::load::read(&path, &name) {
            Ok(text) => text,
            Err(e) => {
                let file = sources.add_file(&name, "");
                for err in e.errors {
                    problems.push(Problem::new("", err.message).at(Anchor::At(file, Pos::UNKNOWN)));
                }
                return;
            }
        },
    };
    let part = Part {
        key: "hooks",
        what: "hooks",
        owner: "the hooks file (`authoring.hooksFile`)",
        config_path,
    };
    part.merge(&name, &text, doc, sources, problems);
}

/// Whether the include entry `entry` names the file `path` (existing or not).
fn names(entry: &str, dir: &Path, path: &Path) -> bool {
    let entry = Path::new(entry);
    let (Some(glob), Some(name)) = (
        entry.file_name().and_then(|n| n.to_str()),
        path.file_name().and_then(|n| n.to_str()),
    ) else {
        return false;
    };
    let parent = dir.join(entry.parent().unwrap_or(Path::new("")));
    let same_dir = match (
        std::path::absolute(&parent),
        path.parent().map(std::path::absolute),
    ) {
        (Ok(a), Some(Ok(b))) => normal(&a) == normal(&b),
        _ => false,
    };
    same_dir && mcpflow_model::proxy::glob_match(glob, name)
}

/// `path` without `.` components (`absolute` keeps them).
fn normal(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}

/// The config's list under `key`, made one if absent or null.
fn list_of<'d>(doc: &'d mut Value, key: &str) -> Option<&'d mut Vec<Value>> {
    let root = doc.as_object_mut()?;
    let list = root.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    if list.is_null() {
        *list = Value::Array(Vec::new());
    }
    list.as_array_mut()
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The directory tools are saved to: the first `DIR/*.yaml` (or `*.yml`) entry's, relative to
/// the config's directory; `None` when no entry has that shape.
pub fn save_dir(include: &[String]) -> Option<PathBuf> {
    include.iter().find_map(|entry| {
        let path = Path::new(entry);
        let name = path.file_name()?.to_str()?;
        let parent = path.parent().unwrap_or(Path::new(""));
        (matches!(name, "*.yaml" | "*.yml") && !parent.to_string_lossy().contains(['*', '?']))
            .then(|| parent.to_path_buf())
    })
}

/// With `authoring.save` on, where saved tools go must be included, or a saved tool would be
/// written and then not served.
pub(crate) fn check_save_dir(doc: &Value, problems: &mut Vec<Problem>) {
    let save = doc.pointer("/authoring/save").and_then(Value::as_bool);
    if save != Some(true) {
        return;
    }
    let include: Vec<String> = doc
        .get("include")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if save_dir(&include).is_none() {
        problems.push(
            Problem::new(
                "/authoring/save",
                "`authoring.save` writes each saved tool to a file of its own, in a directory \
                 this config must include, and it includes none",
            )
            .hint("add `include: [\"tools/*.yaml\"]` at the top level (any `DIR/*.yaml` works; the first one is where tools are saved)"),
        );
    }
}
