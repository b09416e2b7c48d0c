//! [`Graph`]: a tool compiled into [`Step`]s, node ids resolved to indices and every
//! expression, script and schema compiled once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcpflow_expr::{Jsonata, Logic, Template, Value};
use mcpflow_model::{
    CompileErrors, ExecutionLimits, ForeachNode, Node, ParallelMode, Retry, ToolDef,
};

use crate::compile::{Compiler, escape, tool_label};
use crate::nodes::script::{Sandboxes, ScriptStep};
use crate::schema::SchemaValidator;

/// A tool's graph, compiled: node ids resolved to indices, every expression parsed once.
#[derive(Debug)]
pub struct Graph {
    pub tool: ToolDef,
    /// The tool's `inputSchema` and `outputSchema`, compiled.
    input: SchemaValidator,
    output: Option<SchemaValidator>,
    pub(crate) nodes: Vec<Step>,
    pub(crate) entry: usize,
    pub(crate) max_nodes: u64,
    pub(crate) max_time: Duration,
    /// The tool's own `timeoutMs`: a bound on a whole run, checked while nodes wait too.
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_depth: u32,
}

#[derive(Debug)]
pub(crate) struct Step {
    pub id: Arc<str>,
    /// The id as a JSON string: what a switch that routes here outputs, made once and shared
    /// by every record of it (a loop's switch routes here once per iteration).
    pub routed: Value,
    pub kind: StepKind,
    pub options: StepOptions,
}

/// The node options, resolved.
#[derive(Debug, Default)]
pub(crate) struct StepOptions {
    pub timeout: Option<Duration>,
    pub retry: Option<Retry>,
    pub on_error: Option<usize>,
    pub optional: bool,
}

/// A `foreach` node: the array it maps, how many items run at once, where its body starts
/// and where the node goes when every item is done.
#[derive(Debug)]
pub(crate) struct ForeachStep {
    pub items: Jsonata,
    pub concurrency: usize,
    pub body: usize,
    pub next: usize,
}

#[derive(Debug)]
pub(crate) enum StepKind {
    Entry {
        next: usize,
    },
    Exit,
    Mcp {
        server: Arc<str>,
        tool: Arc<str>,
        args: Template,
        next: usize,
    },
    Transform {
        expr: Jsonata,
        next: usize,
    },
    Switch {
        conditions: Vec<(Logic, usize)>,
        default: usize,
    },
    Parallel {
        branches: Vec<(Arc<str>, usize)>,
        join: usize,
        fail_fast: bool,
    },
    Foreach(ForeachStep),
    Call {
        tool: Arc<str>,
        args: Template,
        next: usize,
    },
    Await(Box<crate::nodes::await_node::AwaitStep>),
    Script(Box<crate::nodes::script::ScriptStep>),
}

impl StepKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            StepKind::Entry { .. } => "entry",
            StepKind::Exit => "exit",
            StepKind::Mcp { .. } => "mcp",
            StepKind::Transform { .. } => "transform",
            StepKind::Switch { .. } => "switch",
            StepKind::Parallel { .. } => "parallel",
            StepKind::Foreach(_) => "foreach",
            StepKind::Call { .. } => "call",
            StepKind::Await(_) => "await",
            StepKind::Script(_) => "script",
        }
    }

    /// Where an `optional` node goes after a failure: where it goes when nothing is chosen.
    pub fn default_next(&self) -> Option<usize> {
        match self {
            StepKind::Entry { next }
            | StepKind::Mcp { next, .. }
            | StepKind::Transform { next, .. }
            | StepKind::Foreach(ForeachStep { next, .. })
            | StepKind::Call { next, .. } => Some(*next),
            StepKind::Await(a) => Some(a.next),
            StepKind::Script(s) => Some(s.next),
            StepKind::Switch { default, .. } => Some(*default),
            StepKind::Parallel { join, .. } => Some(*join),
            StepKind::Exit => None,
        }
    }
}

impl Graph {
    /// Compiles tool `index` of a config (the index places errors: `/tools/{index}/…`).
    pub fn compile(
        tool: &ToolDef,
        index: usize,
        limits: Option<&ExecutionLimits>,
    ) -> Result<Graph, CompileErrors> {
        let mut sandboxes = Sandboxes::default();
        let mut c = Compiler {
            errors: Vec::new(),
            sandboxes: Some(&mut sandboxes),
        };
        match Self::compile_with(tool, index, limits, &mut c) {
            Some(graph) if c.errors.is_empty() => Ok(graph),
            _ => Err(CompileErrors(c.errors)),
        }
    }

    /// [`Graph::compile`] into `c`, whose sandboxes an engine's tools share; `None` when the
    /// tool has errors (they are in `c`).
    pub(crate) fn compile_with(
        tool: &ToolDef,
        index: usize,
        limits: Option<&ExecutionLimits>,
        c: &mut Compiler<'_>,
    ) -> Option<Graph> {
        let before = c.errors.len();
        let ptr = format!("/tools/{index}");
        let label = tool_label(Some(&tool.name), index);
        let (input, output) = c.tool_schemas(
            &ptr,
            &label,
            Some(&tool.input_schema),
            tool.output_schema.as_ref(),
        );
        let resolver = Resolver::Index(
            tool.nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id(), i))
                .collect(),
        );
        let mut nodes = Vec::with_capacity(tool.nodes.len());
        let mut entry = None;
        for (j, node) in tool.nodes.iter().enumerate() {
            let site = NodeSite {
                ptr: format!("{ptr}/nodes/{j}"),
                tool: &tool.name,
                tool_label: &label,
                index: j,
            };
            if matches!(node, Node::Entry(_)) {
                entry = Some(j);
            }
            if let Some(step) = compile_step(c, node, &site, &resolver) {
                nodes.push(step);
            }
        }
        let Some(entry) = entry else {
            c.push(mcpflow_model::CompileError::new(
                format!("{ptr}/nodes"),
                format!("{label} has no entry node"),
            ));
            return None;
        };
        let input = input?;
        if c.errors.len() > before {
            return None;
        }
        let limits = limits.copied().unwrap_or(ExecutionLimits {
            max_node_executions: None,
            max_execution_time_ms: None,
            max_call_depth: None,
        });
        Some(Graph {
            tool: tool.clone(),
            input,
            output,
            nodes,
            entry,
            max_nodes: limits.max_nodes(),
            max_time: Duration::from_millis(limits.max_time_ms()),
            timeout: tool.timeout_ms.map(Duration::from_millis),
            max_depth: limits.max_depth(),
        })
    }

    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// Node ids in declaration order.
    pub fn node_ids(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|s| &*s.id)
    }

    /// The tool's `inputSchema`, compiled.
    pub fn input_validator(&self) -> &SchemaValidator {
        &self.input
    }

    /// The tool's `outputSchema`, compiled, when it has one.
    pub fn output_validator(&self) -> Option<&SchemaValidator> {
        self.output.as_ref()
    }
}

/// Where a node sits in its config, for the pointers and messages of its errors.
pub(crate) struct NodeSite<'a> {
    /// `/tools/{t}/nodes/{j}`.
    pub ptr: String,
    pub tool: &'a str,
    /// `tool "name"` (or `tool #N`).
    pub tool_label: &'a str,
    pub index: usize,
}

impl NodeSite<'_> {
    /// `node "a" of tool "t"` (`node #N` for a node without an id).
    pub(crate) fn label(&self, id: &str) -> String {
        if id.is_empty() {
            format!("node #{} of {}", self.index + 1, self.tool_label)
        } else {
            format!("node \"{id}\" of {}", self.tool_label)
        }
    }
}

/// How node ids become indices: through the tool's ids, or not at all when only checking a
/// broken config (its loader reports dangling references, with suggestions).
pub(crate) enum Resolver<'a> {
    Index(HashMap<&'a str, usize>),
    Unchecked,
}

impl Resolver<'_> {
    fn resolve(&self, c: &mut Compiler<'_>, ptr: String, to: &str) -> usize {
        match self {
            Resolver::Unchecked => 0,
            Resolver::Index(index) => index.get(to).copied().unwrap_or_else(|| {
                c.push(mcpflow_model::CompileError::new(
                    ptr,
                    format!("`{to}` is not a node of this tool"),
                ));
                0
            }),
        }
    }
}

/// Compiles one node; `None` when it has errors (they are in `c`).
pub(crate) fn compile_step(
    c: &mut Compiler<'_>,
    node: &Node,
    site: &NodeSite<'_>,
    resolver: &Resolver<'_>,
) -> Option<Step> {
    let before = c.errors.len();
    let id = node.id();
    let ptr = &site.ptr;
    let next = |c: &mut Compiler<'_>, field: &str, to: &str| {
        resolver.resolve(c, format!("{ptr}/{field}"), to)
    };
    let kind = match node {
        Node::Entry(n) => Some(StepKind::Entry {
            next: next(c, "next", &n.next),
        }),
        Node::Exit(_) => Some(StepKind::Exit),
        Node::Mcp(n) => {
            let args = c.template(&n.args, &format!("{ptr}/args"), id);
            args.map(|args| StepKind::Mcp {
                server: n.server.as_str().into(),
                tool: n.tool.as_str().into(),
                args,
                next: next(c, "next", &n.next),
            })
        }
        Node::Transform(n) => {
            let expr = c.jsonata(&format!("{ptr}/transform/expr"), &n.transform.expr, id);
            expr.map(|expr| StepKind::Transform {
                expr,
                next: next(c, "next", &n.next),
            })
        }
        Node::Switch(n) => {
            let mut conditions = Vec::with_capacity(n.conditions.len());
            for (k, cond) in n.conditions.iter().enumerate() {
                let logic = c.logic(&cond.rule, &format!("{ptr}/conditions/{k}/rule"), id);
                let to = next(c, &format!("conditions/{k}/next"), &cond.next);
                conditions.extend(logic.map(|l| (l, to)));
            }
            Some(StepKind::Switch {
                conditions,
                default: next(c, "next", &n.next),
            })
        }
        Node::Parallel(n) => Some(StepKind::Parallel {
            branches: n
                .branches
                .iter()
                .map(|(name, first)| {
                    let field = format!("branches/{}", escape(name));
                    (name.as_str().into(), next(c, &field, first))
                })
                .collect(),
            join: next(c, "next", &n.next),
            fail_fast: n.mode.unwrap_or_default() == ParallelMode::FailFast,
        }),
        Node::Foreach(n) => {
            let items = c.jsonata(&format!("{ptr}/items"), &n.items, id);
            items.map(|items| {
                StepKind::Foreach(ForeachStep {
                    items,
                    concurrency: n
                        .concurrency
                        .unwrap_or(ForeachNode::DEFAULT_CONCURRENCY)
                        .clamp(1, ForeachNode::MAX_CONCURRENCY)
                        as usize,
                    body: next(c, "body", &n.body),
                    next: next(c, "next", &n.next),
                })
            })
        }
        Node::Call(n) => {
            let args = c.template(&n.args, &format!("{ptr}/args"), id);
            args.map(|args| StepKind::Call {
                tool: n.tool.as_str().into(),
                args,
                next: next(c, "next", &n.next),
            })
        }
        Node::Await(n) => {
            let to = next(c, "next", &n.next);
            crate::nodes::await_node::AwaitStep::compile(n, site, to, c)
                .map(|a| StepKind::Await(Box::new(a)))
        }
        Node::Script(n) => {
            let to = next(c, "next", &n.next);
            ScriptStep::compile(n, site, to, c).map(|s| StepKind::Script(Box::new(s)))
        }
    };
    let opts = node.options();
    let options = StepOptions {
        timeout: opts.timeout_ms.map(Duration::from_millis),
        retry: opts.retry.clone(),
        on_error: opts.on_error.as_deref().map(|to| next(c, "onError", to)),
        optional: opts.is_optional(),
    };
    if c.errors.len() > before {
        return None;
    }
    let id: Arc<str> = id.into();
    Some(Step {
        routed: Value::from_json(serde_json::Value::String(id.to_string())),
        id,
        kind: kind?,
        options,
    })
}
