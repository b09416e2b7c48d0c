use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcpflow_config::{ExecutionLimits, ForeachNode, Node, ParallelMode, Retry, ToolDef};
use mcpflow_expr::{Jsonata, Logic, Template};

use crate::error::CompileError;
use crate::script_node::{Sandboxes, ScriptStep};

/// A tool's graph, compiled: node ids resolved to indices, every expression parsed once.
#[derive(Debug)]
pub struct Graph {
    pub tool: ToolDef,
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
    Foreach {
        items: Jsonata,
        concurrency: usize,
        body: usize,
        next: usize,
    },
    Call {
        tool: Arc<str>,
        args: Template,
        next: usize,
    },
    Await(Box<crate::await_node::AwaitStep>),
    Script(Box<crate::script_node::ScriptStep>),
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
            StepKind::Foreach { .. } => "foreach",
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
            | StepKind::Foreach { next, .. }
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
    pub fn compile(
        tool: &ToolDef,
        limits: Option<&ExecutionLimits>,
    ) -> Result<Graph, CompileError> {
        Self::compile_with(tool, limits, &mut Sandboxes::default())
    }

    /// [`Graph::compile`] with script nodes run by `sandboxes` (shared by an engine's tools).
    pub(crate) fn compile_with(
        tool: &ToolDef,
        limits: Option<&ExecutionLimits>,
        sandboxes: &mut Sandboxes,
    ) -> Result<Graph, CompileError> {
        let err = |node: &str, message: String| CompileError {
            tool: tool.name.clone(),
            node: node.to_owned(),
            message,
        };
        let index: HashMap<&str, usize> = tool
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id(), i))
            .collect();
        let resolve = |from: &str, to: &str| {
            index.get(to).copied().ok_or_else(|| {
                err(
                    from,
                    format!("`next` names `{to}`, which is not a node of this tool"),
                )
            })
        };
        let mut nodes = Vec::with_capacity(tool.nodes.len());
        let mut entry = None;
        for node in &tool.nodes {
            let id = node.id();
            let kind = match node {
                Node::Entry(n) => {
                    entry = Some(nodes.len());
                    StepKind::Entry {
                        next: resolve(id, &n.next)?,
                    }
                }
                Node::Exit(_) => StepKind::Exit,
                Node::Mcp(n) => StepKind::Mcp {
                    server: n.server.as_str().into(),
                    tool: n.tool.as_str().into(),
                    args: Template::compile(&n.args).map_err(|e| err(id, format!("args: {e}")))?,
                    next: resolve(id, &n.next)?,
                },
                Node::Transform(n) => StepKind::Transform {
                    expr: Jsonata::compile(&n.transform.expr)
                        .map_err(|e| err(id, format!("transform.expr: {e}")))?,
                    next: resolve(id, &n.next)?,
                },
                Node::Switch(n) => StepKind::Switch {
                    conditions: n
                        .conditions
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            let logic = Logic::compile(&c.rule)
                                .map_err(|e| err(id, format!("conditions[{i}].rule: {e}")))?;
                            Ok((logic, resolve(id, &c.next)?))
                        })
                        .collect::<Result<_, CompileError>>()?,
                    default: resolve(id, &n.next)?,
                },
                Node::Parallel(n) => StepKind::Parallel {
                    branches: n
                        .branches
                        .iter()
                        .map(|(name, first)| Ok((name.as_str().into(), resolve(id, first)?)))
                        .collect::<Result<_, CompileError>>()?,
                    join: resolve(id, &n.next)?,
                    fail_fast: n.mode.unwrap_or_default() == ParallelMode::FailFast,
                },
                Node::Foreach(n) => StepKind::Foreach {
                    items: Jsonata::compile(&n.items)
                        .map_err(|e| err(id, format!("items: {e}")))?,
                    concurrency: n
                        .concurrency
                        .unwrap_or(ForeachNode::DEFAULT_CONCURRENCY)
                        .clamp(1, ForeachNode::MAX_CONCURRENCY)
                        as usize,
                    body: resolve(id, &n.body)?,
                    next: resolve(id, &n.next)?,
                },
                Node::Call(n) => StepKind::Call {
                    tool: n.tool.as_str().into(),
                    args: Template::compile(&n.args).map_err(|e| err(id, format!("args: {e}")))?,
                    next: resolve(id, &n.next)?,
                },
                Node::Await(n) => StepKind::Await(Box::new(
                    crate::await_node::AwaitStep::compile(n, resolve(id, &n.next)?)
                        .map_err(|m| err(id, m))?,
                )),
                Node::Script(n) => StepKind::Script(Box::new(
                    ScriptStep::compile(n, &tool.name, resolve(id, &n.next)?, sandboxes)
                        .map_err(|m| err(id, m))?,
                )),
            };
            let opts = node.options();
            let options = StepOptions {
                timeout: opts.timeout_ms.map(Duration::from_millis),
                retry: opts.retry.clone(),
                on_error: opts
                    .on_error
                    .as_deref()
                    .map(|to| resolve(id, to))
                    .transpose()?,
                optional: opts.is_optional(),
            };
            nodes.push(Step {
                id: id.into(),
                kind,
                options,
            });
        }
        let entry = entry.ok_or_else(|| err("", "the tool has no `entry` node".into()))?;
        let limits = limits.copied().unwrap_or(ExecutionLimits {
            max_node_executions: None,
            max_execution_time_ms: None,
            max_call_depth: None,
        });
        Ok(Graph {
            tool: tool.clone(),
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
}
