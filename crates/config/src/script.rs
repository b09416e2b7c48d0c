//! The `script` node (an mcpflow extension): a sandboxed JavaScript function, input in, output
//! out. Loading reads `file:` scripts (relative to the config file) and compiles every script
//! once in the sandbox, so a syntax error is reported like any other config error, at its
//! `file:line:col` (inside the YAML block for an inline `source`, or in the script file).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpflow_sandbox::{SandboxError, SandboxOptions, Script};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Config, Node, NodeOptions};
use crate::source::{Anchor, Pos, Problem, SourceMap};

/// Runs a JavaScript function in the sandbox (QuickJS: no I/O, a memory cap, a CPU budget).
/// The source is an expression that evaluates to a function (`(input) => ({total: input.n * 2})`)
/// or an ES module whose default export is one; `async` functions are awaited. Its return value
/// is the node's output (`undefined` leaves it undefined); `console.log` lines are kept in the
/// node's record. A throw, an exhausted budget or a result that is not JSON fails the node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ScriptNode {
    /// Unique in the tool; expressions read the script's result as `$.<id>`.
    #[schemars(length(min = 1))]
    pub id: String,
    /// The script itself. Exactly one of `source` and `file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A file holding the script, relative to the config file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub file: Option<String>,
    /// What the function is called with: a JSONata expression over the context (default: the
    /// whole context `{nodeId: latest output}`, what a transform node sees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<ScriptInput>,
    /// The sandbox's limits for one run of this script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ScriptLimits>,
    /// Id of the node to run next.
    #[schemars(length(min = 1))]
    pub next: String,
    #[serde(flatten)]
    pub options: NodeOptions,
    /// The text of a `file:` script, read when the config was loaded.
    #[serde(skip)]
    #[schemars(skip)]
    pub loaded: Option<ScriptFile>,
}

/// A script file as read at load time.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptFile {
    /// The path as it is shown in messages and stack traces (config directory joined).
    pub path: PathBuf,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptInput {
    /// JSONata expression over the context `{nodeId: latest output}`; its value (null when
    /// undefined) is the function's argument.
    pub expr: String,
}

/// Limits of one run of a script. Defaults: 32 MiB of heap, 100 ms of CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptLimits {
    /// Heap cap in bytes: the input, everything the script allocates and its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1048576, max = 1073741824))]
    pub memory_bytes: Option<u64>,
    /// CPU time in milliseconds (thread CPU time, so waiting for a worker does not count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 60000))]
    pub cpu_ms: Option<u64>,
}

impl ScriptNode {
    /// The sandbox options this script runs under: the defaults with this node's limits.
    pub fn sandbox_options(&self) -> SandboxOptions {
        let mut options = SandboxOptions::default();
        let limits = self.limits.unwrap_or(ScriptLimits {
            memory_bytes: None,
            cpu_ms: None,
        });
        if let Some(bytes) = limits.memory_bytes {
            options.memory_limit_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        if let Some(ms) = limits.cpu_ms {
            options.cpu_time = Duration::from_millis(ms);
        }
        options
    }

    /// The script's text: `source`, or the `file` read at load time.
    pub fn text(&self) -> Option<&str> {
        self.source
            .as_deref()
            .or(self.loaded.as_ref().map(|f| f.text.as_str()))
    }

    /// The name stack traces and errors use for the script: its file, or `tool/node`.
    pub fn script_name(&self, tool: &str) -> String {
        match &self.loaded {
            Some(f) => f.path.display().to_string(),
            None => format!("{tool}/{}", self.id),
        }
    }
}

/// Largest script file read (the same bound as a config file).
const MAX_SCRIPT_BYTES: u64 = crate::yaml::MAX_FILE_BYTES as u64;

/// Where a `file:` script goes once the config is typed: (tool index, node index).
pub(crate) type ScriptFiles = Vec<((usize, usize), ScriptFile)>;

/// Reads every `file:` script and compiles every script, collecting problems. Script files
/// become files of `sources`, so an error inside one points into it.
pub(crate) fn check(
    doc: &Value,
    sources: &mut SourceMap,
    dir: &Path,
    problems: &mut Vec<Problem>,
) -> ScriptFiles {
    let mut files = Vec::new();
    let tools = doc.get("tools").and_then(Value::as_array);
    for (t, tool) in tools.into_iter().flatten().enumerate() {
        let tool_name = tool.get("name").and_then(Value::as_str).unwrap_or("");
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
            if let Some(file) = check_one(&script, tool_name, &ptr, sources, dir, problems) {
                files.push(((t, n), file));
            }
        }
    }
    files
}

/// Hands the scripts read by [`check`] to the typed config.
pub(crate) fn attach(config: &mut Config, files: ScriptFiles) {
    for ((t, n), file) in files {
        if let Some(Node::Script(node)) = config
            .tools
            .get_mut(t)
            .and_then(|tool| tool.nodes.get_mut(n))
        {
            node.loaded = Some(file);
        }
    }
}

fn check_one(
    script: &ScriptNode,
    tool: &str,
    ptr: &str,
    sources: &mut SourceMap,
    dir: &Path,
    problems: &mut Vec<Problem>,
) -> Option<ScriptFile> {
    let id = &script.id;
    let options = script.sandbox_options();
    match (&script.source, &script.file) {
        (Some(source), None) => {
            let source_ptr = format!("{ptr}/source");
            let name = script.script_name(tool);
            if let Err(e) = Script::check(&options, &name, source) {
                let anchor = match &e {
                    SandboxError::Syntax { line, column, .. } => {
                        let offset = char_offset(source, *line, *column);
                        sources.offset_in_string(&source_ptr, source, offset)
                    }
                    _ => None,
                };
                problems.push(
                    Problem::new(source_ptr, compile_message(id, &e))
                        .at(anchor.unwrap_or(Anchor::Value))
                        .hint(HINT),
                );
            }
            None
        }
        (None, Some(file)) => {
            let file_ptr = format!("{ptr}/file");
            let path = dir.join(file);
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
            let shown = path.display().to_string();
            let file_index = sources.add_file(&shown, &text);
            if let Err(e) = Script::check(&options, &shown, &text) {
                let problem = match &e {
                    SandboxError::Syntax { line, column, .. } => {
                        Problem::new(file_ptr, compile_message(id, &e)).at(Anchor::At(
                            file_index,
                            Pos {
                                line: *line,
                                col: *column,
                            },
                        ))
                    }
                    _ => Problem::new(
                        file_ptr,
                        format!("{} (in {shown})", compile_message(id, &e)),
                    ),
                };
                problems.push(problem.hint(HINT));
                return None;
            }
            Some(ScriptFile { path, text })
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

const HINT: &str = "a script is an expression that evaluates to a function, like \
                    `(input) => ({total: input.entry.n * 2})`, or a module with \
                    `export default function (input) {...}`";

fn compile_message(id: &str, e: &SandboxError) -> String {
    match e {
        SandboxError::Syntax { message, .. } => {
            format!("syntax error in the script of node \"{id}\": {message}")
        }
        other => format!("the script of node \"{id}\" cannot be used: {other}"),
    }
}

/// The character offset of 1-based `line`:`column` (counted in characters) in `text`.
fn char_offset(text: &str, line: u32, column: u32) -> usize {
    let before: usize = text
        .split('\n')
        .take(line.saturating_sub(1) as usize)
        .map(|l| l.chars().count() + 1)
        .sum();
    before + column.saturating_sub(1) as usize
}

fn read(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("is not a file".into());
    }
    if meta.len() > MAX_SCRIPT_BYTES {
        return Err(format!(
            "is {} bytes; the limit is {MAX_SCRIPT_BYTES}",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot be read: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_owned())
}

#[cfg(test)]
mod tests {
    use super::char_offset;

    #[test]
    fn offsets_count_characters_across_lines() {
        let text = "é => {\n  x y\n}";
        assert_eq!(char_offset(text, 1, 1), 0);
        assert_eq!(char_offset(text, 2, 5), 11);
        assert_eq!(text.chars().nth(11), Some('y'));
    }
}
