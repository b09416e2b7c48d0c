//! The loading pipeline: read → parse with positions → merge `mcp.json` → check structure →
//! interpolate `${VAR}` → check graphs → read script files → build the typed [`Config`] (a
//! [`Draft`]) → place the engine's compile errors ([`Draft::finish`]) → [`Loaded`].
//!
//! Each stage collects problems instead of stopping at the first, so one run shows the author
//! everything that is wrong, the compiler's findings included.

use std::path::{Path, PathBuf};

use serde_json::Value;

use mcpflow_model::{CompileError, CompileErrors, Node, ToolParts, Within};

use crate::error::{ConfigError, ConfigErrors};
use crate::interpolate::{InterpolationError, interpolate, interpolate_header};
use crate::model::Config;
use crate::place::{field_name, in_owner};
use crate::source::{Anchor, Pos, Problem, SourceMap, SourcePos};
use crate::yaml::{self, escape};
use crate::{structure, validate};
use mcpflow_model::caller_header::HeaderTemplate;

/// A loaded, validated config, with what is needed to point back into its files.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The config file as given (for [`load_str`], the name given).
    pub path: PathBuf,
    /// The config file's directory, absolute: relative `cwd`s of stdio servers resolve against it.
    pub base_dir: PathBuf,
    /// Things worth a look that do not stop the config from running (unreachable nodes, …).
    pub warnings: Vec<ConfigError>,
    /// Positions of every value of the config (and of the servers merged from `mcp.json`).
    pub sources: SourceMap,
}

impl Loaded {
    /// `file:line:col` of the value at a JSON pointer into the config (`/tools/0/nodes/2`); for a
    /// pointer to a value that is not in the file (a default), its nearest written ancestor.
    pub fn locate(&self, pointer: &str) -> Option<SourcePos> {
        self.sources.locate(pointer)
    }

    /// Where node `node_id` of tool `tool` is written.
    pub fn locate_node(&self, tool: &str, node_id: &str) -> Option<SourcePos> {
        let (t, tool_def) = self
            .config
            .tools
            .iter()
            .enumerate()
            .find(|(_, t)| t.name == tool)?;
        let n = tool_def.nodes.iter().position(|n| n.id() == node_id)?;
        self.locate(&node_pointer(t, n))
    }
}

/// One YAML (or JSON) text read as a JSON value within the loader's budgets, as an editor
/// shows what it parses to; a syntax error is placed at its line and column in `name`.
pub fn parse_value(text: &str, name: &str) -> Result<Value, ConfigError> {
    let mut sources = SourceMap::default();
    let file = sources.add_file(name, text);
    yaml::parse(text, file)
        .map(|parsed| parsed.value)
        .map_err(|problem| sources.resolve(problem))
}

/// The JSON pointer of node `node` of tool `tool` (both indices).
pub fn node_pointer(tool: usize, node: usize) -> String {
    format!("/tools/{tool}/nodes/{node}")
}

/// Loads a config file, merging the servers of `mcp_json` (the `{"mcpServers": {…}}` file MCP
/// clients use) when given; `${VAR}` in server settings is read from the process environment.
///
/// Expressions, scripts and schemas are not compiled: that is the engine's job, and
/// [`Loader::read`] with [`Draft::finish`] reports its errors next to the loader's.
pub fn load(path: &Path, mcp_json: Option<&Path>) -> Result<Loaded, ConfigErrors> {
    let mut loader = Loader::new();
    if let Some(m) = mcp_json {
        loader = loader.mcp_json(m);
    }
    loader.load(path)
}

/// Loads a config from text; `name` is used in messages. `${VAR}` reads the process environment.
pub fn load_str(text: &str, name: &str) -> Result<Loaded, ConfigErrors> {
    Loader::new().load_str(text, name)
}

type EnvFn<'a> = Box<dyn Fn(&str) -> Option<String> + 'a>;

enum McpJson {
    File(PathBuf),
    Text { text: String, name: String },
}

/// Loading with options: another environment for `${VAR}`, an `mcp.json` from a file or text.
pub struct Loader<'a> {
    env: EnvFn<'a>,
    mcp_json: Option<McpJson>,
    /// The hooks file's text in place of the file on disk (a save's candidate).
    hooks_text: Option<String>,
}

impl Default for Loader<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Loader<'a> {
    /// A loader that reads `${VAR}` from the process environment and merges no `mcp.json`.
    pub fn new() -> Self {
        Loader {
            env: Box::new(|name| std::env::var(name).ok()),
            mcp_json: None,
            hooks_text: None,
        }
    }

    /// Reads `${VAR}` from `env` instead of the process environment.
    pub fn env(mut self, env: impl Fn(&str) -> Option<String> + 'a) -> Self {
        self.env = Box::new(env);
        self
    }

    /// Merges the servers of this `mcp.json` file; the config's own servers win on a name clash.
    pub fn mcp_json(mut self, path: impl Into<PathBuf>) -> Self {
        self.mcp_json = Some(McpJson::File(path.into()));
        self
    }

    /// Reads the hooks file (`authoring.hooksFile`) as `text` instead of from disk: the config
    /// as it will load once `text` is written there, checked before it is.
    pub fn hooks_text(mut self, text: impl Into<String>) -> Self {
        self.hooks_text = Some(text.into());
        self
    }

    /// Merges the servers of an `mcp.json` given as text.
    pub fn mcp_json_str(mut self, text: &str, name: &str) -> Self {
        self.mcp_json = Some(McpJson::Text {
            text: text.to_owned(),
            name: name.to_owned(),
        });
        self
    }

    /// [`Loader::read`] and [`Draft::finish`] with nothing compiled.
    pub fn load(&self, path: &Path) -> Result<Loaded, ConfigErrors> {
        self.read(path)?.finish(Vec::new())
    }

    /// [`Loader::read_str`] and [`Draft::finish`] with nothing compiled.
    pub fn load_str(&self, text: &str, name: &str) -> Result<Loaded, ConfigErrors> {
        self.read_str(text, name)?.finish(Vec::new())
    }

    /// Reads and checks a config file, up to what the engine compiles. Fails at once only
    /// when the file cannot be read or parsed; every other problem waits in the [`Draft`].
    pub fn read(&self, path: &Path) -> Result<Draft, ConfigErrors> {
        let name = path.display().to_string();
        let text = read(path, &name)?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        self.run(&text, &name, path.to_path_buf(), dir)
    }

    /// [`Loader::read`] for a config given as text; `name` is used in messages.
    pub fn read_str(&self, text: &str, name: &str) -> Result<Draft, ConfigErrors> {
        let path = PathBuf::from(name);
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        self.run(text, name, path, &dir)
    }

    fn run(
        &self,
        text: &str,
        name: &str,
        path: PathBuf,
        dir: &Path,
    ) -> Result<Draft, ConfigErrors> {
        let mut sources = SourceMap::default();
        let main = sources.add_file(name, text);
        let parsed = match yaml::parse(text, main) {
            Ok(p) => p,
            Err(problem) => return Err(ConfigErrors::single(sources.resolve(problem))),
        };
        for (pointer, span) in parsed.spans {
            sources.insert(pointer, span);
        }
        let mut doc = parsed.value;
        let mut problems = parsed.problems;
        let mut merge_warnings = Vec::new();
        if let Some(m) = &self.mcp_json {
            self.merge_mcp_json(
                m,
                &mut doc,
                &mut sources,
                &mut problems,
                &mut merge_warnings,
            );
        }
        merge_warnings.extend(crate::mcpgraph_0_1_23::recognise(&mut doc, &mut sources));
        let included = crate::include::files(&doc, dir, &mut problems);
        crate::include::merge(&included, &path, &mut doc, &mut sources, &mut problems);
        crate::include::merge_hooks_file(
            &path,
            dir,
            self.hooks_text.as_deref(),
            &mut doc,
            &mut sources,
            &mut problems,
        );
        crate::include::check_save_dir(&doc, &mut problems);
        problems.extend(structure::check(&doc, &sources));
        interpolate_servers(&mut doc, &sources, &*self.env, &mut problems);
        Ok(checked(doc, sources, problems, merge_warnings, path, dir))
    }

    /// Reads one graph tool definition (`text`, YAML or JSON, as an editor or a model submits
    /// it) as a tool of `config`, an already loaded config whose files live in `base_dir`: it
    /// replaces the tool of the same name, or is added after the others. Every check of a
    /// whole config runs (structure, references, reachability, call cycles, `file:` scripts),
    /// and [`Draft::compile`] adds the compiler's. Positions point into `text`, named `name`;
    /// pointers into the whole config, the definition's being `/tools/{index}` with the index
    /// returned. `config`'s servers are taken as already interpolated: `${…}` is not read again.
    pub fn read_tool(
        &self,
        config: &Config,
        base_dir: &Path,
        text: &str,
        name: &str,
    ) -> Result<(Draft, usize), ConfigErrors> {
        let mut sources = SourceMap::default();
        let file = sources.add_file(name, text);
        let parsed = match yaml::parse(text, file) {
            Ok(p) => p,
            Err(problem) => return Err(ConfigErrors::single(sources.resolve(problem))),
        };
        let mut doc = match serde_json::to_value(config) {
            Ok(doc) => doc,
            Err(e) => {
                return Err(ConfigErrors::single(sources.resolve(Problem::new(
                    "",
                    format!("the loaded config cannot be written as JSON: {e}"),
                ))));
            }
        };
        let Some(tools) = doc
            .as_object_mut()
            .map(|root| {
                root.entry("tools")
                    .or_insert_with(|| Value::Array(Vec::new()))
            })
            .and_then(Value::as_array_mut)
        else {
            return Err(ConfigErrors::single(sources.resolve(Problem::new(
                "",
                "the loaded config has no list of tools",
            ))));
        };
        let tool_name = parsed.value.get("name").and_then(Value::as_str);
        let index = tool_name
            .and_then(|n| {
                tools
                    .iter()
                    .position(|t| t.get("name").and_then(Value::as_str) == Some(n))
            })
            .unwrap_or(tools.len());
        match tools.get_mut(index) {
            Some(slot) => *slot = parsed.value,
            None => tools.push(parsed.value),
        }
        let base = format!("/tools/{index}");
        for (pointer, span) in parsed.spans {
            sources.insert(format!("{base}{pointer}"), span);
        }
        let mut problems = parsed
            .problems
            .into_iter()
            .map(|mut p| {
                p.pointer = format!("{base}{}", p.pointer);
                p
            })
            .collect::<Vec<_>>();
        problems.extend(structure::check(&doc, &sources));
        let draft = checked(
            doc,
            sources,
            problems,
            Vec::new(),
            PathBuf::from(name),
            base_dir,
        );
        Ok((draft, index))
    }
}

/// The stages after interpolation, shared by whole files and single tool definitions: the
/// graph checks, `file:` scripts, the typed config.
fn checked(
    doc: Value,
    mut sources: SourceMap,
    mut problems: Vec<Problem>,
    warnings: Vec<Problem>,
    path: PathBuf,
    dir: &Path,
) -> Draft {
    let findings = validate::check(&doc, &sources);
    problems.extend(findings.errors);
    let scripts = crate::script::read_all(&doc, &mut sources, dir, &mut problems);
    let config = if problems.is_empty() {
        match serde_json::from_value::<Config>(doc.clone()) {
            Ok(mut config) => {
                for s in &scripts {
                    let node = config
                        .tools
                        .get_mut(s.tool)
                        .and_then(|t| t.nodes.get_mut(s.node));
                    crate::script::attach(node, s);
                }
                Some(config)
            }
            Err(e) => {
                problems.push(Problem::new("", format!("invalid config: {e}")));
                None
            }
        }
    } else {
        None
    };
    Draft {
        config,
        doc,
        sources,
        problems,
        warnings: warnings.into_iter().chain(findings.warnings).collect(),
        schema_advice: findings.schema_advice,
        scripts,
        path,
        base_dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
    }
}

impl Loader<'_> {
    fn merge_mcp_json(
        &self,
        source: &McpJson,
        doc: &mut Value,
        sources: &mut SourceMap,
        problems: &mut Vec<Problem>,
        warnings: &mut Vec<Problem>,
    ) {
        let (text, name) = match source {
            McpJson::File(path) => {
                let name = path.display().to_string();
                match read(path, &name) {
                    Ok(text) => (text, name),
                    Err(e) => {
                        let file = sources.add_file(&name, "");
                        for err in e.errors {
                            problems.push(
                                Problem::new("", err.message).at(Anchor::At(file, Pos::UNKNOWN)),
                            );
                        }
                        return;
                    }
                }
            }
            McpJson::Text { text, name } => (text.clone(), name.clone()),
        };
        let file = sources.add_file(&name, &text);
        let parsed = match yaml::parse(&text, file) {
            Ok(p) => p,
            Err(problem) => {
                problems.push(problem);
                return;
            }
        };
        problems.extend(parsed.problems);
        let at = |pointer: &str| crate::mcp_json::anchor(file, &parsed.spans, pointer);
        let Some(client) = parsed.value.as_object() else {
            problems.push(
                Problem::new(
                    "",
                    format!(
                        "{name} must be a mapping like {{\"mcpServers\": {{...}}}}, got {}",
                        crate::place::describe(&parsed.value)
                    ),
                )
                .at(Anchor::At(file, Pos::START)),
            );
            return;
        };
        let servers = crate::mcp_json::read(client, &name, &at);
        problems.extend(servers.problems);
        warnings.extend(crate::mcp_json::disabled_warning(
            &name,
            &servers.disabled,
            &at,
        ));
        let Some(root) = doc.as_object_mut() else {
            return;
        };
        let target = root
            .entry("mcpServers")
            .or_insert_with(|| Value::Object(Default::default()));
        if target.is_null() {
            *target = Value::Object(Default::default());
        }
        let Some(target) = target.as_object_mut() else {
            return;
        };
        for (server, def, from) in servers.entries {
            if target.contains_key(&server) {
                continue;
            }
            target.insert(server.clone(), def);
            // The entry's positions, under the config's pointer (VS Code's `servers` too).
            let to = format!("/mcpServers/{}", escape(&server));
            for (pointer, span) in &parsed.spans {
                if let Some(rest) = pointer.strip_prefix(&from)
                    && (rest.is_empty() || rest.starts_with('/'))
                {
                    sources.insert(format!("{to}{rest}"), *span);
                }
            }
        }
    }
}

/// A config (or included) file's text, within the size limit.
pub(crate) fn read(path: &Path, name: &str) -> Result<String, ConfigErrors> {
    let fail = |message: String| {
        ConfigErrors::single(ConfigError {
            file: name.to_owned(),
            line: 0,
            col: 0,
            pointer: String::new(),
            message,
            hint: None,
        })
    };
    crate::read::read_text(path, yaml::MAX_FILE_BYTES as u64).map_err(|e| fail(e.to_string()))
}

/// A config read and checked by the loader, waiting for the engine to compile it.
///
/// ```ignore
/// let (loaded, engine) = mcpflow_config::Loader::new().read(path)?.compile(
///     |config, base_dir| Engine::new(config, UpstreamPool::new(config.mcp_servers.clone(), base_dir.into())),
///     mcpflow_engine::check,
/// )?; // or every problem, the compiler's too, with file:line:col
/// ```
#[derive(Debug)]
pub struct Draft {
    config: Option<Config>,
    doc: Value,
    sources: SourceMap,
    problems: Vec<Problem>,
    warnings: Vec<Problem>,
    schema_advice: Vec<Problem>,
    scripts: Vec<crate::script::ReadScript>,
    path: PathBuf,
    base_dir: PathBuf,
}

impl Draft {
    /// The typed config, when the loader found nothing wrong (the compiler still may).
    pub fn config(&self) -> Option<&Config> {
        self.config.as_ref()
    }

    /// The config file's directory, absolute.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// What can still be compiled of a config the loader found problems in: each tool's schemas
    /// and its nodes that are well-formed on their own, `file:` scripts attached.
    pub fn parts(&self) -> Vec<ToolParts> {
        let tools = self.doc.get("tools").and_then(Value::as_array);
        let mut parts = Vec::new();
        for (t, tool) in tools.into_iter().flatten().enumerate() {
            let Some(tool) = tool.as_object() else {
                continue;
            };
            let nodes = tool.get("nodes").and_then(Value::as_array);
            let mut typed = Vec::new();
            for (n, node) in nodes.into_iter().flatten().enumerate() {
                let Ok(mut node) = serde_json::from_value::<Node>(node.clone()) else {
                    continue;
                };
                for s in self.scripts.iter().filter(|s| (s.tool, s.node) == (t, n)) {
                    crate::script::attach(Some(&mut node), s);
                }
                typed.push((n, node));
            }
            parts.push(ToolParts {
                index: t,
                name: tool.get("name").and_then(Value::as_str).map(str::to_owned),
                input_schema: tool.get("inputSchema").cloned(),
                output_schema: tool.get("outputSchema").cloned(),
                nodes: typed,
            });
        }
        parts
    }

    /// Compiles the config with `compile` (the engine) when the loader found it sound, else
    /// runs `check` over what can still be compiled ([`Draft::parts`]); then
    /// [`Draft::finish`]es with the compiler's errors, so every problem is reported at once.
    pub fn compile<T>(
        self,
        compile: impl FnOnce(&Config, &Path) -> Result<T, CompileErrors>,
        check: impl FnOnce(&[ToolParts]) -> Vec<CompileError>,
    ) -> Result<(Loaded, T), ConfigErrors> {
        let (compiled, errors) = match &self.config {
            Some(config) => match compile(config, &self.base_dir) {
                Ok(t) => (Some(t), Vec::new()),
                Err(e) => (None, e.0),
            },
            None => (None, check(&self.parts())),
        };
        let loaded = self.finish(errors)?;
        match compiled {
            Some(t) => Ok((loaded, t)),
            None => Err(ConfigErrors::single(loaded.sources.resolve(Problem::new(
                "",
                "the config did not compile, and the compiler did not say why",
            )))),
        }
    }

    /// Places the compiler's errors in the files and reports them with the loader's own, all
    /// at once; a config with neither is [`Loaded`].
    pub fn finish(self, compiled: Vec<CompileError>) -> Result<Loaded, ConfigErrors> {
        let Draft {
            config,
            doc,
            sources,
            mut problems,
            mut warnings,
            schema_advice,
            scripts,
            path,
            base_dir,
        } = self;
        // Advice about a schema the compiler rejected would only distract from its error.
        warnings.extend(schema_advice.into_iter().filter(|w| {
            !compiled.iter().any(|e| {
                e.pointer
                    .strip_prefix(&w.pointer)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
        }));
        for e in compiled {
            let anchor = match e.within {
                Within::Value => Anchor::Value,
                Within::Offset(offset) => doc
                    .pointer(&e.pointer)
                    .and_then(Value::as_str)
                    .and_then(|src| sources.offset_in_string(&e.pointer, src, offset))
                    .unwrap_or(Anchor::Value),
                Within::FileLine { line, col } => script_source(&scripts, &e.pointer)
                    .map_or(Anchor::Value, |file| Anchor::At(file, Pos { line, col })),
            };
            problems.push(Problem {
                pointer: e.pointer,
                anchor,
                message: e.message,
                hint: e.hint,
            });
        }
        let warnings = resolve_all(&sources, warnings);
        match config {
            Some(config) if problems.is_empty() => Ok(Loaded {
                config,
                path,
                base_dir,
                warnings,
                sources,
            }),
            _ => Err(ConfigErrors {
                errors: resolve_all(&sources, problems),
                warnings,
            }),
        }
    }
}

/// The source file of the `file:` script whose pointer is `/tools/T/nodes/N/file`.
fn script_source(scripts: &[crate::script::ReadScript], pointer: &str) -> Option<usize> {
    scripts
        .iter()
        .find(|s| pointer == format!("{}/file", node_pointer(s.tool, s.node)))
        .and_then(|s| s.source)
}

/// Sorted by file (the config first), then line and column.
fn resolve_all(sources: &SourceMap, problems: Vec<Problem>) -> Vec<ConfigError> {
    let main = sources.file_name(0).to_owned();
    let mut errors: Vec<ConfigError> = problems.into_iter().map(|p| sources.resolve(p)).collect();
    errors.sort_by(|a, b| {
        (a.file != main, &a.file, a.line, a.col).cmp(&(b.file != main, &b.file, b.line, b.col))
    });
    errors.dedup();
    errors
}

/// Replaces `${VAR}` in the settings of every server, where secrets live.
fn interpolate_servers(
    doc: &mut Value,
    sources: &SourceMap,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) {
    let snapshot = doc.clone();
    let Some(servers) = doc.get_mut("mcpServers").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, server) in servers.iter_mut() {
        let Some(server) = server.as_object_mut() else {
            continue;
        };
        let base = format!("/mcpServers/{}", escape(name));
        let forwards_token = server.get("forwardCallerToken") == Some(&Value::Bool(true));
        for (key, value) in server.iter_mut() {
            let ptr = format!("{base}/{}", escape(key));
            match (key.as_str(), value) {
                ("command" | "cwd" | "url", v @ Value::String(_)) => {
                    interpolate_one(v, &ptr, &snapshot, sources, env, problems);
                }
                ("args", Value::Array(items)) => {
                    for (i, v) in items.iter_mut().enumerate() {
                        let p = format!("{ptr}/{i}");
                        interpolate_one(v, &p, &snapshot, sources, env, problems);
                    }
                }
                ("env", Value::Object(map)) => {
                    for (k, v) in map.iter_mut() {
                        let p = format!("{ptr}/{}", escape(k));
                        interpolate_one(v, &p, &snapshot, sources, env, problems);
                    }
                }
                ("headers", Value::Object(map)) => {
                    for (k, v) in map.iter_mut() {
                        let p = format!("{ptr}/{}", escape(k));
                        let header = Header {
                            ptr: &p,
                            forwards_token,
                        };
                        interpolate_header_value(v, header, &snapshot, sources, env, problems);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Where a header value is, and whether its server may forward the caller's credential.
#[derive(Clone, Copy)]
struct Header<'a> {
    ptr: &'a str,
    forwards_token: bool,
}

/// A remote upstream's header value: `${VAR}` replaced, then read as the template it is per
/// request (`${caller.…}`), whose mistakes are the config's.
fn interpolate_header_value(
    value: &mut Value,
    header: Header<'_>,
    doc: &Value,
    sources: &SourceMap,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) {
    let Value::String(text) = value else { return };
    let original = text.clone();
    match interpolate_header(text, env) {
        Ok(s) => *text = s,
        Err(e) => {
            problems.push(interpolation_problem(
                header.ptr, &original, &e, doc, sources,
            ));
            return;
        }
    }
    let problem = match HeaderTemplate::parse(text) {
        // The offset is in the interpolated text: the value as written is pointed at whole.
        Err(e) => Problem::new(
            header.ptr,
            format!("{e} (used in {})", field_name(header.ptr)),
        )
        .hint("write ${caller.subject}, ${caller.claims.NAME}, …; $${ is a literal ${"),
        Ok(t) if t.forwards_token() && !header.forwards_token => Problem::new(
            header.ptr,
            format!(
                "${{caller.token}} sends the caller's own credential upstream (used in {})",
                field_name(header.ptr)
            ),
        )
        .hint("set `forwardCallerToken: true` on this server if it must receive it"),
        Ok(_) => return,
    };
    problems.push(problem);
}

fn interpolate_one(
    value: &mut Value,
    ptr: &str,
    doc: &Value,
    sources: &SourceMap,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) {
    let Value::String(text) = value else { return };
    match interpolate(text, env) {
        Ok(s) => *text = s,
        Err(e) => problems.push(interpolation_problem(ptr, text, &e, doc, sources)),
    }
}

/// What is wrong with the `${…}` of `text`, the value at `ptr`, pointed at in the file.
fn interpolation_problem(
    ptr: &str,
    text: &str,
    e: &InterpolationError,
    doc: &Value,
    sources: &SourceMap,
) -> Problem {
    let anchor = sources
        .offset_in_string(ptr, text, e.offset())
        .unwrap_or(Anchor::Value);
    let hint = match e {
        InterpolationError::Unset { names, .. } => format!(
            "set {}, or give a default with ${{{}:-default}}; $${{…}} is a literal ${{…}}",
            names.join(", "),
            names[0]
        ),
        InterpolationError::BadName { text, .. } if text.starts_with("caller.") => {
            "${caller.…} is read only in the `headers` of a remote server".to_owned()
        }
        _ => "write ${NAME} or ${NAME:-default}; $${ is a literal ${".to_owned(),
    };
    Problem::new(
        ptr,
        format!("{e} (used in {}{})", field_name(ptr), in_owner(ptr, doc)),
    )
    .at(anchor)
    .hint(hint)
}
