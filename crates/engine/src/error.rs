//! Why a run failed ([`RunError`]). Compile errors are the model's
//! [`mcpflow_model::CompileError`]: they point into the config. A run that waits for its client
//! has not failed: that is [`crate::RunEnd::Waiting`].

use thiserror::Error;

/// Why a run failed. Always names the node it failed at, when there is one.
#[derive(Debug, Clone, Error, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[error("{}", self.render())]
pub struct RunError {
    pub kind: RunErrorKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    pub message: String,
    /// A JSONata error code (e.g. `T2001`) when an expression failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Structured detail: for a `parallel` or `foreach`, the error of each failed branch or item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Box<serde_json::Value>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RunErrorKind {
    /// No such tool in the config.
    UnknownTool,
    /// `maxNodeExecutions` or `maxExecutionTimeMs` reached.
    Limit,
    /// A JSONata or JSON Logic expression failed.
    Expression,
    /// The upstream answered `isError: true`.
    ToolError,
    /// The upstream could not be reached, crashed or broke the protocol.
    Upstream,
    /// A node's `timeoutMs` or the upstream's call timeout expired.
    Timeout,
    /// Stopped through [`crate::Control::stop`] or cancelled by the client.
    Stopped,
    /// The client declined or cancelled an inline (elicited) request for input.
    Declined,
    /// The store could not record a step: the run stops rather than go on unrecorded.
    Store,
    /// A script node's JavaScript threw, spent its CPU or memory budget, overflowed its stack,
    /// never settled its promise or returned something that is not JSON.
    Script,
    /// Refused at its start: its caller already had as many runs in flight as it may
    /// (`maxConcurrentRuns`).
    TooManyRuns,
}

impl RunErrorKind {
    /// The name used in error objects (`onError`) and in serialized runs.
    pub fn as_str(self) -> &'static str {
        match self {
            RunErrorKind::UnknownTool => "unknownTool",
            RunErrorKind::Limit => "limit",
            RunErrorKind::Expression => "expression",
            RunErrorKind::ToolError => "toolError",
            RunErrorKind::Upstream => "upstream",
            RunErrorKind::Timeout => "timeout",
            RunErrorKind::Stopped => "stopped",
            RunErrorKind::Declined => "declined",
            RunErrorKind::Store => "store",
            RunErrorKind::Script => "script",
            RunErrorKind::TooManyRuns => "tooManyRuns",
        }
    }

    /// Whether `onError` and `optional` may handle it: stops and limits end the run.
    pub fn is_routable(self) -> bool {
        !matches!(
            self,
            RunErrorKind::Stopped | RunErrorKind::Limit | RunErrorKind::Store
        )
    }
}

impl RunError {
    pub(crate) fn new(
        kind: RunErrorKind,
        node_id: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        RunError {
            kind,
            node_id: node_id.map(str::to_owned),
            message: message.into(),
            code: None,
            details: None,
        }
    }

    pub(crate) fn expression(node_id: &str, err: mcpflow_expr::ExprError) -> Self {
        let code = err.code.clone();
        RunError {
            kind: RunErrorKind::Expression,
            node_id: Some(node_id.to_owned()),
            message: err.to_string(),
            code,
            details: None,
        }
    }

    fn render(&self) -> String {
        let mut s = match &self.node_id {
            Some(node) => format!("node `{node}`: {}", self.message),
            None => self.message.clone(),
        };
        if let Some(code) = &self.code {
            s.push_str(&format!(" [{code}]"));
        }
        s
    }
}
