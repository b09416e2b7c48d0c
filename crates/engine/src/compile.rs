//! The one compiler of a config's expressions, scripts and schemas.
//!
//! [`Graph::compile`](crate::Graph) builds steps through it; [`check`] runs it over the parts
//! of a config that is broken elsewhere, only to find errors. Every problem is collected, each
//! at the JSON pointer of its value (and, for a parse error, the place inside it), so the
//! config loader can report them with `file:line:col` next to its own. Compiling succeeds
//! on the first try in the common case; only a failure walks the value again to place each
//! bad expression at its own pointer.

use mcpflow_expr::{ExprError, Jsonata, Logic, Template};
use mcpflow_model::{CompileError, ToolParts, Within, describe};
use serde_json::Value as Json;

use crate::graph::{NodeSite, Resolver, compile_step};
use crate::nodes::script::Sandboxes;
use crate::schema::SchemaValidator;

/// Collects compile errors; starts sandboxes for script nodes unless it only checks.
pub(crate) struct Compiler<'s> {
    pub(crate) errors: Vec<CompileError>,
    /// Where compiled scripts run; `None` when only checking (no sandbox is started).
    pub(crate) sandboxes: Option<&'s mut Sandboxes>,
}

/// Compiles what can be compiled of a config that did not load as a whole, for its errors
/// only: the schemas of each tool and its well-formed nodes. References between nodes are
/// the loader's to check and are not followed.
pub fn check(tools: &[ToolParts]) -> Vec<CompileError> {
    let mut c = Compiler {
        errors: Vec::new(),
        sandboxes: None,
    };
    for tool in tools {
        let ptr = format!("/tools/{}", tool.index);
        let owner = tool_label(tool.name.as_deref(), tool.index);
        c.tool_schemas(
            &ptr,
            &owner,
            tool.input_schema.as_ref(),
            tool.output_schema.as_ref(),
        );
        for (j, node) in &tool.nodes {
            let site = NodeSite {
                ptr: format!("{ptr}/nodes/{j}"),
                tool: tool.name.as_deref().unwrap_or(""),
                tool_label: &owner,
                index: *j,
            };
            compile_step(&mut c, node, &site, &Resolver::Unchecked);
        }
    }
    c.errors
}

/// Hook scripts are compiled (and run) by the gateway when the server starts; checked here
/// too, so that `validate` and `run`, which load through the engine alone, refuse what
/// `serve` would.
pub(crate) fn check_hooks(hooks: &[mcpflow_model::proxy::Hook], c: &mut Compiler<'_>) {
    let options = mcpflow_sandbox::SandboxOptions::default();
    for (i, hook) in hooks.iter().enumerate() {
        let Some(source) = &hook.script else { continue };
        let name = format!("hook:{}", hook.id);
        let at = format!("/hooks/{i}/script");
        match mcpflow_sandbox::Script::check(&options, &name, source) {
            Ok(()) => {}
            // Placed inside the script, so the error points at its line in the config's file.
            Err(mcpflow_sandbox::SandboxError::Syntax {
                line,
                column,
                message,
                ..
            }) => c.push(
                CompileError::new(
                    at,
                    format!(
                        "hook \"{}\" does not compile: syntax error: {message}",
                        hook.id
                    ),
                )
                .within(Within::Offset(crate::nodes::script::char_offset(
                    source, line, column,
                ))),
            ),
            Err(e) => c.push(CompileError::new(
                at,
                format!("hook \"{}\" does not compile: {e}", hook.id),
            )),
        }
    }
}

/// `tool "name"`, or `tool #N` for a tool without a usable name.
pub(crate) fn tool_label(name: Option<&str>, index: usize) -> String {
    match name {
        Some(name) => format!("tool \"{name}\""),
        None => format!("tool #{}", index + 1),
    }
}

impl Compiler<'_> {
    pub(crate) fn push(&mut self, error: CompileError) {
        self.errors.push(error);
    }

    /// A tool's `inputSchema` (always present) and `outputSchema`.
    pub(crate) fn tool_schemas(
        &mut self,
        ptr: &str,
        tool_label: &str,
        input: Option<&Json>,
        output: Option<&Json>,
    ) -> (Option<SchemaValidator>, Option<SchemaValidator>) {
        let owner = format!(" in {tool_label}");
        let input = input
            .and_then(|s| self.schema(s, &format!("{ptr}/inputSchema"), "inputSchema", &owner));
        let output = output
            .and_then(|s| self.schema(s, &format!("{ptr}/outputSchema"), "outputSchema", &owner));
        (input, output)
    }

    pub(crate) fn jsonata(&mut self, ptr: &str, src: &str, node: &str) -> Option<Jsonata> {
        match Jsonata::compile(src) {
            Ok(expr) => Some(expr),
            Err(e) => {
                let within = e.position.map_or(Within::Value, Within::Offset);
                self.push(
                    CompileError::new(
                        ptr,
                        format!(
                            "invalid JSONata expression in node \"{node}\": {}",
                            expr_message(&e)
                        ),
                    )
                    .within(within),
                );
                None
            }
        }
    }

    /// Arguments in mcp-node form (literal JSON where `{expr: "…"}` is JSONata).
    pub(crate) fn template(&mut self, value: &Json, ptr: &str, node: &str) -> Option<Template> {
        let e = match Template::compile(value) {
            Ok(t) => return Some(t),
            Err(e) => e,
        };
        let mut found = Vec::new();
        arg_exprs(value, ptr, &mut found);
        self.place_inner(
            found,
            node,
            ptr,
            format!("invalid arguments in node \"{node}\""),
            &e,
        );
        None
    }

    /// A JSON Logic rule; a `{var: "…"}` that is not JSONata is reported at its own place.
    pub(crate) fn logic(&mut self, rule: &Json, ptr: &str, node: &str) -> Option<Logic> {
        let e = match Logic::compile(rule) {
            Ok(l) => return Some(l),
            Err(e) => e,
        };
        let mut vars = Vec::new();
        rule_vars(rule, ptr, &mut vars);
        let what = format!("invalid JSON Logic rule in node \"{node}\"");
        self.place_inner(vars, node, ptr, what, &e);
        None
    }

    /// A value that failed to compile as a whole (`e`) is reported where it failed: at each
    /// JSONata expression inside it (`inner`, with their pointers) that does not compile, or,
    /// when they all do, at the value itself (`ptr`) as `what: e`.
    fn place_inner(
        &mut self,
        inner: Vec<(String, &str)>,
        node: &str,
        ptr: &str,
        what: String,
        e: &ExprError,
    ) {
        let before = self.errors.len();
        for (p, src) in inner {
            self.jsonata(&p, src, node);
        }
        if self.errors.len() == before {
            self.push(CompileError::new(
                ptr,
                format!("{what}: {}", expr_message(e)),
            ));
        }
    }

    /// A JSON Schema at `ptr`, named `key` in messages; `owner` is ` in tool "t"` or the like.
    pub(crate) fn schema(
        &mut self,
        schema: &Json,
        ptr: &str,
        key: &str,
        owner: &str,
    ) -> Option<SchemaValidator> {
        if !schema.is_object() {
            self.push(
                CompileError::new(
                    ptr,
                    format!(
                        "\"{key}\"{owner} must be a JSON Schema object, got {}",
                        describe(schema)
                    ),
                )
                .hint("for example `{type: object, properties: {...}}`"),
            );
            return None;
        }
        match SchemaValidator::new(schema) {
            Ok(v) => Some(v),
            Err(e) => {
                self.push(CompileError::new(
                    format!("{ptr}{}", e.pointer),
                    format!("\"{key}\"{owner} is not a valid JSON Schema: {}", e.message),
                ));
                None
            }
        }
    }
}

fn expr_message(e: &ExprError) -> String {
    match &e.code {
        Some(code) => format!("{} ({code})", e.message),
        None => e.message.clone(),
    }
}

/// Every `{expr: "<string>"}` in arguments (the only objects evaluated as JSONata).
fn arg_exprs<'v>(v: &'v Json, ptr: &str, out: &mut Vec<(String, &'v str)>) {
    single_key_strings(v, "expr", ptr, out);
}

/// Every `{var: "<string>"}` in a JSON Logic rule (mcpGraph evaluates those as JSONata).
fn rule_vars<'v>(v: &'v Json, ptr: &str, out: &mut Vec<(String, &'v str)>) {
    single_key_strings(v, "var", ptr, out);
}

/// Every object whose single key is `key` with a string value, with its pointer.
fn single_key_strings<'v>(v: &'v Json, key: &str, ptr: &str, out: &mut Vec<(String, &'v str)>) {
    match v {
        Json::Object(m) => {
            if m.len() == 1
                && let Some(Json::String(src)) = m.get(key)
            {
                out.push((format!("{ptr}/{key}"), src));
                return;
            }
            for (k, child) in m {
                single_key_strings(child, key, &format!("{ptr}/{}", escape(k)), out);
            }
        }
        Json::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                single_key_strings(child, key, &format!("{ptr}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A key as a JSON pointer segment.
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
