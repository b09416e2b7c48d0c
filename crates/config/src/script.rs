//! The `script` node's files (an mcpflow extension): loading reads `file:` scripts (relative
//! to the config file) and keeps their text in the node, and in the source map, so that the
//! engine, which compiles every script, has its errors placed at their `file:line:col` inside
//! the script file. Its types are [`mcpflow_model::script`]'s, re-exported here.
//!
//! A `file:` must lie inside the config file's directory: no absolute path, no `..`, and its
//! real path (symbolic links resolved) under the directory's real path, unless the node opts
//! out with `fileOutsideConfigDir: true`. A config is often shared or generated, and without
//! this a config could read any file the process can (`../../etc/shadow`) and show pieces of it
//! in its load errors. Even with the opt-out, errors about a file outside the directory name
//! the file and the position but never quote its text.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

pub use mcpflow_model::script::*;

use crate::model::Node;
use crate::source::{Problem, SourceMap};

/// Largest script file read (the same bound as a config file).
const MAX_SCRIPT_BYTES: u64 = crate::yaml::MAX_FILE_BYTES as u64;

/// A `file:` script as read: where it goes once the config is typed (tool index, node index),
/// and its index among the source files (a syntax error in it points there); `None` for a file
/// outside the config's directory, which is never quoted.
#[derive(Debug)]
pub(crate) struct ReadScript {
    pub tool: usize,
    pub node: usize,
    pub source: Option<usize>,
    pub file: ScriptFile,
}

/// Reads every `file:` script, collecting problems. Script files become files of `sources`,
/// so the engine's errors inside one point into it.
pub(crate) fn read_all(
    doc: &Value,
    sources: &mut SourceMap,
    dir: &Path,
    problems: &mut Vec<Problem>,
) -> Vec<ReadScript> {
    let mut files = Vec::new();
    let tools = doc.get("tools").and_then(Value::as_array);
    for (t, tool) in tools.into_iter().flatten().enumerate() {
        let nodes = tool.get("nodes").and_then(Value::as_array);
        for (n, node) in nodes.into_iter().flatten().enumerate() {
            if node.get("type").and_then(Value::as_str) != Some("script") {
                continue;
            }
            // A malformed node has its structural errors already.
            let Ok(Node::Script(script)) = serde_json::from_value::<Node>(node.clone()) else {
                continue;
            };
            let ptr = format!("/tools/{t}/nodes/{n}");
            if let Some((source, file)) = read_one(&script, &ptr, sources, dir, problems) {
                files.push(ReadScript {
                    tool: t,
                    node: n,
                    source,
                    file,
                });
            }
        }
    }
    files
}

/// Hands a script read by [`read_all`] to its node, in the typed config or a lone node.
pub(crate) fn attach(node: Option<&mut Node>, script: &ReadScript) {
    if let Some(Node::Script(node)) = node {
        node.loaded = Some(script.file.clone());
    }
}

fn read_one(
    script: &ScriptNode,
    ptr: &str,
    sources: &mut SourceMap,
    dir: &Path,
    problems: &mut Vec<Problem>,
) -> Option<(Option<usize>, ScriptFile)> {
    let id = &script.id;
    match (&script.source, &script.file) {
        (Some(_), None) => None,
        (None, Some(file)) => {
            let file_ptr = format!("{ptr}/file");
            let (path, inside) = match locate(dir, file, script.file_outside_config_dir) {
                Ok(found) => found,
                Err(why) => {
                    problems.push(
                        Problem::new(
                            file_ptr,
                            format!("the script file of node \"{id}\", {file}, {why}"),
                        )
                        .hint(OUTSIDE_HINT),
                    );
                    return None;
                }
            };
            let text = match read(&path) {
                Ok(text) => text,
                Err(why) => {
                    problems.push(Problem::new(
                        file_ptr,
                        format!(
                            "the script file of node \"{id}\", {}, {why}",
                            path.display()
                        ),
                    ));
                    return None;
                }
            };
            let file = ScriptFile {
                path,
                text,
                inside_config_dir: inside,
            };
            // A file outside the config's directory is never quoted: it gets no place in the
            // source map, so an error in it is named by path and line, not shown.
            let source =
                inside.then(|| sources.add_file(&file.path.display().to_string(), &file.text));
            Some((source, file))
        }
        (Some(_), Some(_)) | (None, None) => {
            problems.push(Problem::new(
                ptr,
                format!("script node \"{id}\" needs exactly one of `source` and `file`"),
            ));
            None
        }
    }
}

const OUTSIDE_HINT: &str = "script files live in the config file's directory or below it; set \
                            `fileOutsideConfigDir: true` on the node to load one from elsewhere";

/// Where `file` is, and whether it is inside the config's directory; an error when it is not
/// and `outside_allowed` is false. Checked on the path as written (absolute, `..`) and on the
/// real path, so a symbolic link cannot lead out either.
fn locate(dir: &Path, file: &str, outside_allowed: bool) -> Result<(PathBuf, bool), String> {
    let written = Path::new(file);
    let path = dir.join(written);
    let lexically_inside = !written.is_absolute()
        && written
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let base = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let really_inside = lexically_inside
        && match (std::fs::canonicalize(base), std::fs::canonicalize(&path)) {
            (Ok(base), Ok(real)) => real.starts_with(base),
            // A missing file is reported by the read, by the name it was given.
            (_, Err(_)) => true,
            (Err(e), _) => return Err(format!("cannot be checked: {e}")),
        };
    if really_inside || outside_allowed {
        return Ok((path, really_inside));
    }
    Err(if written.is_absolute() {
        "is an absolute path outside the config's directory".to_owned()
    } else if !lexically_inside {
        "leads out of the config's directory (`..`)".to_owned()
    } else {
        "resolves (through a symbolic link) outside the config's directory".to_owned()
    })
}

fn read(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("is not a file".into());
    }
    // The reported size may lie (a file under /proc, one that grows while read): the read
    // itself stops past the limit.
    crate::read::read_text(path, MAX_SCRIPT_BYTES).map_err(|e| match e {
        crate::ReadError::Io(e) => format!("cannot be read: {e}"),
        crate::ReadError::TooLarge {
            size: Some(size),
            limit,
        } => format!("is {size} bytes; the limit is {limit}"),
        crate::ReadError::TooLarge { size: None, limit } => {
            format!("is larger than the limit of {limit} bytes")
        }
        crate::ReadError::NotUtf8 => "is not UTF-8 text".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::locate;
    use crate::load::load;

    /// A config whose one script node reads `file`, in `dir`.
    fn config_with_script(dir: &std::path::Path, file: &str, outside: bool) -> std::path::PathBuf {
        let opt_out = if outside {
            "\n        fileOutsideConfigDir: true"
        } else {
            ""
        };
        let yaml = format!(
            r#"version: "1.0"
server: {{ name: "s", version: "1.0.0" }}
tools:
  - name: "t"
    nodes:
      - {{ id: entry, type: entry, next: js }}
      - id: js
        type: script
        file: {file:?}
        next: exit{opt_out}
      - {{ id: exit, type: exit }}
"#
        );
        let path = dir.join("config.yaml");
        std::fs::write(&path, yaml).unwrap();
        path
    }

    #[test]
    fn script_files_outside_the_config_directory_are_refused_without_being_read() {
        let root = tempfile::tempdir().unwrap();
        let config_dir = root.path().join("config");
        std::fs::create_dir(&config_dir).unwrap();
        // A "secret" outside, shaped so that a parser would quote it in a syntax error.
        let secret = root.path().join("secret.txt");
        std::fs::write(&secret, "root:SECRET-HASH:0:0\n").unwrap();
        std::fs::write(config_dir.join("ok.js"), "(x) => x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&secret, config_dir.join("link.js")).unwrap();
        let absolute = secret.display().to_string();
        let mut cases = vec!["../secret.txt", absolute.as_str(), "./../secret.txt"];
        if cfg!(unix) {
            cases.push("link.js");
        }
        for file in cases {
            let path = config_with_script(&config_dir, file, false);
            let errors = match load(&path, None) {
                Ok(_) => panic!("{file}: loaded a script outside the config's directory"),
                Err(e) => e.to_string(),
            };
            assert!(
                errors.contains("outside the config's directory") || errors.contains("leads out"),
                "{file}: {errors}"
            );
            assert!(!errors.contains("SECRET"), "{file}: {errors}");
        }
        let path = config_with_script(&config_dir, "ok.js", false);
        assert!(load(&path, None).is_ok());
        // Opting out loads it, marked as outside so that the compiler's errors never quote it
        // (crates/engine/tests/script.rs checks the message).
        let path = config_with_script(&config_dir, "../secret.txt", true);
        let loaded = load(&path, None).expect("opted out");
        let node = &loaded.config.tools[0].nodes[1];
        let mcpflow_model::Node::Script(script) = node else {
            panic!("not a script node: {node:?}")
        };
        let file = script.loaded.as_ref().expect("the file was read");
        assert!(!file.inside_config_dir);
        // Only the config itself is in the source map: an outside file must not join it.
        assert_eq!(loaded.sources.file_name(1), "<config>");
    }

    #[test]
    fn locating_checks_the_written_path_and_the_real_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.js"), "x => x").unwrap();
        assert!(matches!(locate(dir.path(), "a.js", false), Ok((_, true))));
        assert!(locate(dir.path(), "sub/../a.js", false).is_err());
        assert!(matches!(
            locate(dir.path(), "../a.js", true),
            Ok((_, false))
        ));
    }
}
