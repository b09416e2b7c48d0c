//! The `script` node (an mcpflow extension): a sandboxed JavaScript function, input in,
//! output out. `file:` scripts are read by the config loader, which keeps their text here.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::node::NodeOptions;

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
    /// A file holding the script, relative to the config file's directory and inside it (no
    /// absolute path, no `..`, no symbolic link leading out) unless `fileOutsideConfigDir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub file: Option<String>,
    /// Allows `file` to name a script outside the config file's directory (an absolute path,
    /// `..`, a symbolic link leading out). Off by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub file_outside_config_dir: bool,
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
    /// Whether the file lies inside the config file's directory. Errors about a file outside it
    /// name the file and line but never quote its text.
    pub inside_config_dir: bool,
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
