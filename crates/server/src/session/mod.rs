//! Sessions over MCP: every tool that can wait gets `NAME_continue {sessionId, input}`,
//! `NAME_cancel {sessionId}` and `NAME_status {sessionId}`; a call that reaches an `await`
//! answers `{status: "waiting", sessionId, message, inputSchema, options}`; an await node with
//! `mode: elicit` (or `auto`, when the client can) asks the client inline through
//! `elicitation/create`.

pub(crate) mod call;
pub(crate) mod input;

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use mcpflow_engine::{Answer, Ask, Caller, Engine, SessionError, Waiting};
use mcpflow_store::Session;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ClientResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    ElicitationAction, RequestId, ServerRequest, Tool,
};
use rmcp::service::{OriginatingRequestId, Peer};
use serde_json::{Map, Value, json};

/// Which companion a tool name is, and of which tool.
#[derive(Debug, Clone)]
pub(crate) struct Companion {
    pub tool: String,
    pub kind: CompanionKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompanionKind {
    Continue,
    Cancel,
    Status,
}

/// The companion tools of every tool of `engine` that can wait (when a store is attached),
/// appended to `tools`; returns them by name.
pub(crate) fn companions(engine: &Engine, tools: &mut Vec<Tool>) -> HashMap<String, Companion> {
    let mut out = HashMap::new();
    if engine.durability().is_none() {
        return out;
    }
    let waiting: Vec<String> = engine
        .graphs()
        .filter(|g| g.can_wait())
        .map(|g| g.name().to_owned())
        .collect();
    for name in waiting {
        for (kind, suffix, description, schema) in [
            (
                CompanionKind::Continue,
                "continue",
                format!(
                    "Continue a waiting run of `{name}`: send the input its `inputSchema` asks for. \
                     Answers like `{name}`: the result, or the next wait."
                ),
                json!({
                    "type": "object",
                    "properties": {
                        "sessionId": {"type": "string", "description": "From the waiting answer."},
                        "input": {"description": "Must match the waiting answer's inputSchema."}
                    },
                    "required": ["sessionId", "input"],
                    "additionalProperties": false
                }),
            ),
            (
                CompanionKind::Cancel,
                "cancel",
                format!("Cancel a waiting run of `{name}`."),
                session_only(),
            ),
            (
                CompanionKind::Status,
                "status",
                format!(
                    "Where a run of `{name}` is: its session's status, message and inputSchema."
                ),
                session_only(),
            ),
        ] {
            let tool_name = format!("{name}_{suffix}");
            let Value::Object(schema) = schema else {
                continue;
            };
            tools.push(Tool::new(tool_name.clone(), description, Arc::new(schema)));
            out.insert(
                tool_name,
                Companion {
                    tool: name.clone(),
                    kind,
                },
            );
        }
    }
    out
}

fn session_only() -> Value {
    json!({
        "type": "object",
        "properties": {"sessionId": {"type": "string", "description": "From the waiting answer."}},
        "required": ["sessionId"],
        "additionalProperties": false
    })
}

/// The answer to a call whose run is waiting: the session handle, as structured content and
/// as text.
/// The listed `outputSchema` of a tool that can wait: its declared schema, or the waiting
/// handle. A call that reaches an `await` answers the handle as its structured content, and a
/// client that checks structured content against the listed schema (the Python SDK does, and
/// raises) must accept it. Keywords that belong at the schema's root (`$schema`, `$id`,
/// `$defs`, `definitions`) stay there, so the declared schema's references still resolve.
pub(crate) fn admitting_handle(declared: &Map<String, Value>) -> Map<String, Value> {
    let mut result = declared.clone();
    let mut root = Map::new();
    for key in ["$schema", "$id", "$defs", "definitions"] {
        if let Some(v) = result.remove(key) {
            root.insert(key.to_owned(), v);
        }
    }
    root.insert("type".into(), json!("object"));
    root.insert(
        "anyOf".into(),
        json!([Value::Object(result), handle_schema()]),
    );
    root
}

/// The waiting handle (`mcpflow_engine::Waiting::to_json`), as JSON Schema.
pub(crate) fn handle_schema() -> Value {
    json!({
        "title": "waiting",
        "description": "The run waits for input: continue it with the companion tool \
                        `NAME_continue {sessionId, input}`, input matching `inputSchema`.",
        "type": "object",
        "properties": {
            "status": {"const": "waiting"},
            "sessionId": {"type": "string"},
            "runId": {"type": "string"},
            "nodeId": {"type": "string"},
            "message": {},
            "inputSchema": {"type": "object"},
            "expiresAt": {},
            "options": {}
        },
        "required": ["status", "sessionId"]
    })
}

pub(crate) fn waiting_result(waiting: &Waiting) -> CallToolResult {
    let mut result = CallToolResult::structured(waiting.to_json());
    result.is_error = Some(false);
    result
}

/// A failed session request, as a tool error the model can read.
fn session_error(e: &SessionError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(e.to_string())])
}

fn usage_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// What `NAME_status` and `NAME_cancel` answer.
pub(crate) fn session_json(s: &Session) -> Value {
    let mut out = json!({
        "sessionId": s.id,
        "runId": s.run_id,
        "tool": s.tool,
        "status": s.status,
        "nodeId": s.node_id,
        "createdAt": s.created_at,
        "updatedAt": s.updated_at,
        "expiresAt": s.expires_at,
    });
    if let (Value::Object(map), Value::Object(state)) = (&mut out, &s.state) {
        for key in ["message", "options"] {
            if let Some(v) = state.get(key).filter(|v| !v.is_null()) {
                map.insert(key.into(), v.clone());
            }
        }
        if !s.input_schema.is_null() && s.status.is_live() {
            map.insert("inputSchema".into(), s.input_schema.clone());
        }
    }
    out
}

/// The arguments of a companion call.
pub(crate) struct CompanionArgs {
    pub session_id: String,
    pub input: Option<Value>,
}

// The error is the tool result itself, built once per refused call: boxing buys nothing.
#[allow(clippy::result_large_err)]
pub(crate) fn parse_args(
    name: &str,
    c: &Companion,
    arguments: Option<serde_json::Map<String, Value>>,
) -> Result<CompanionArgs, CallToolResult> {
    let mut args = arguments.unwrap_or_default();
    let session_id = match args.remove("sessionId") {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(other) => {
            return Err(usage_error(format!(
                "invalid arguments for `{name}`: at /sessionId: expected the session id string \
                 from the waiting answer, got {other}"
            )));
        }
        None => {
            return Err(usage_error(format!(
                "invalid arguments for `{name}`: at /: \"sessionId\" is a required property"
            )));
        }
    };
    let input = args.remove("input");
    if c.kind == CompanionKind::Continue && input.is_none() {
        return Err(usage_error(format!(
            "invalid arguments for `{name}`: at /: \"input\" is a required property (what the \
             waiting answer's inputSchema asks for)"
        )));
    }
    if let Some(extra) = args.keys().next() {
        return Err(usage_error(format!(
            "invalid arguments for `{name}`: at /{extra}: unexpected property (only sessionId{} \
             are accepted)",
            if c.kind == CompanionKind::Continue {
                " and input"
            } else {
                ""
            }
        )));
    }
    Ok(CompanionArgs { session_id, input })
}

/// `NAME_status` or `NAME_cancel`, for `caller` (another principal's session is refused).
pub(crate) async fn inspect(
    engine: &Engine,
    c: &Companion,
    session_id: &str,
    caller: &Caller,
) -> CallToolResult {
    let result = match c.kind {
        CompanionKind::Cancel => engine.cancel_session(&c.tool, session_id, caller).await,
        _ => engine.session(&c.tool, session_id, caller).await,
    };
    match result {
        Ok(s) => CallToolResult::structured(session_json(&s)),
        Err(e) => session_error(&e),
    }
}

/// Turns a refused continue into the tool error the client sees.
pub(crate) fn continue_error(e: &SessionError) -> CallToolResult {
    session_error(e)
}

/// Asks the client through MCP elicitation (form mode).
pub(crate) struct ElicitAsk {
    pub peer: Peer<RoleServer>,
    /// The client's request being answered: the question rides its response stream on a
    /// Streamable HTTP session (SEP-2260). Named here rather than left to rmcp, which knows
    /// it only inside the task its serve loop spawned for the request.
    pub call: Option<RequestId>,
}

/// The asker for call `call` from `peer`.
pub(crate) fn asker(peer: Peer<RoleServer>, call: Option<RequestId>) -> Arc<dyn Ask> {
    Arc::new(ElicitAsk { peer, call })
}

impl Ask for ElicitAsk {
    fn can_elicit(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some())
    }

    fn ask(&self, message: String, schema: Value) -> BoxFuture<'static, Answer> {
        let can = self.can_elicit();
        let peer = self.peer.clone();
        let call = self.call.clone();
        Box::pin(async move {
            if !can {
                return Answer::Failed(
                    "the client did not declare the elicitation capability".into(),
                );
            }
            let params: ElicitRequestParams = match serde_json::from_value(json!({
                "mode": "form",
                "message": message,
                "requestedSchema": schema,
            })) {
                Ok(p) => p,
                Err(e) => {
                    return Answer::Failed(format!(
                        "the inputSchema cannot be sent as an elicitation form (a flat object of \
                         strings, numbers, booleans and enums): {e}"
                    ));
                }
            };
            let mut request = ElicitRequest::new(params);
            if let Some(call) = call {
                request.extensions.insert(OriginatingRequestId(call));
            }
            let answer = match peer
                .send_request(ServerRequest::ElicitRequest(request))
                .await
            {
                Ok(ClientResult::ElicitResult(r)) => Ok(r),
                Ok(_) => Err(rmcp::ServiceError::UnexpectedResponse),
                Err(e) => Err(e),
            };
            match answer {
                Ok(r) => match r.action {
                    ElicitationAction::Accept => {
                        Answer::Accepted(r.content.unwrap_or_else(|| json!({})))
                    }
                    ElicitationAction::Decline => Answer::Declined,
                    ElicitationAction::Cancel => Answer::Cancelled,
                    other => Answer::Failed(format!("unexpected elicitation action {other:?}")),
                },
                Err(e) => Answer::Failed(e.to_string()),
            }
        })
    }
}
