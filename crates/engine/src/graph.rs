use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcpflow_config::{ExecutionLimits, Node, ToolDef};
use mcpflow_expr::{Jsonata, Logic, Template};

use crate::error::CompileError;

/// A tool's graph, compiled: node ids resolved to indices, every expression parsed once.
#[derive(Debug)]
pub struct Graph {
    pub tool: ToolDef,
    pub(crate) nodes: Vec<Step>,
    pub(crate) entry: usize,
    pub(crate) max_nodes: u64,
    pub(crate) max_time: Duration,
}

#[derive(Debug)]
pub(crate) struct Step {
    pub id: Arc<str>,
    pub kind: StepKind,
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
}

impl StepKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            StepKind::Entry { .. } => "entry",
            StepKind::Exit => "exit",
            StepKind::Mcp { .. } => "mcp",
            StepKind::Transform { .. } => "transform",
            StepKind::Switch { .. } => "switch",
        }
    }
}

impl Graph {
    pub fn compile(
        tool: &ToolDef,
        limits: Option<&ExecutionLimits>,
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
            };
            nodes.push(Step {
                id: id.into(),
                kind,
            });
        }
        let entry = entry.ok_or_else(|| err("", "the tool has no `entry` node".into()))?;
        let limits = limits.copied().unwrap_or(ExecutionLimits {
            max_node_executions: None,
            max_execution_time_ms: None,
        });
        Ok(Graph {
            tool: tool.clone(),
            nodes,
            entry,
            max_nodes: limits.max_nodes(),
            max_time: Duration::from_millis(limits.max_time_ms()),
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
