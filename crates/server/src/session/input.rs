//! Await nodes in the 2026-07-28 era, where a server sends its client no requests: a call that
//! reaches an `await` with `mode: elicit` (or `auto`, when the request declares elicitation)
//! answers an "input required" result (`resultType: "input_required"`) whose `inputRequests`
//! hold one form elicitation built from the node's message and inputSchema. The run waits as
//! a session meanwhile; the `requestState` is its session id (unguessable, and any replica on
//! the same store can continue it), and the client's retry of the same `tools/call` with
//! `inputResponses` and that `requestState` continues the session with the answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use mcpflow_engine::{Answer, Ask};
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequest,
    InputRequests, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use crate::call_options::CallOptions;
use crate::server::{Called, GraphServer};
use crate::session::{Companion, CompanionKind};

/// The key of the one elicitation in `inputRequests` (and of its answer in `inputResponses`).
pub(crate) const INPUT_KEY: &str = "input";

/// The asker of a 2026-07-28 request: it never asks inline, it defers the question to the
/// call's result and remembers that it did.
pub(crate) struct DeferredAsk {
    can_elicit: bool,
    deferred: AtomicBool,
}

impl Ask for DeferredAsk {
    fn can_elicit(&self) -> bool {
        self.can_elicit
    }

    fn ask(&self, _message: String, _schema: Value) -> BoxFuture<'static, Answer> {
        if !self.can_elicit {
            return Box::pin(std::future::ready(Answer::Failed(
                "the request did not declare the elicitation capability".into(),
            )));
        }
        self.deferred.store(true, Ordering::Release);
        Box::pin(std::future::ready(Answer::Deferred))
    }
}

/// `Some` for a request of the 2026-07-28 era (or later), which cannot be asked inline.
pub(crate) fn deferred_ask(context: &RequestContext<RoleServer>) -> Option<Arc<DeferredAsk>> {
    let stateless = context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    stateless.then(|| {
        Arc::new(DeferredAsk {
            can_elicit: context
                .client_capabilities()
                .is_some_and(|caps| caps.elicitation.is_some()),
            deferred: AtomicBool::new(false),
        })
    })
}

/// Whether `request` is a retry that may resume a session (it carries a `requestState` or
/// `inputResponses`).
pub(crate) fn may_resume(request: &CallToolRequestParams) -> bool {
    request.request_state.is_some() || request.input_responses.is_some()
}

impl CallOptions {
    /// Who an await node in elicit or auto mode asks for this call.
    pub(crate) fn asker(&self) -> Option<Arc<dyn Ask>> {
        match &self.deferred {
            Some(d) => Some(d.clone()),
            None => self
                .peer
                .clone()
                .map(|peer| crate::session::asker(peer, self.request.clone())),
        }
    }
}

/// The response to a call: its result, or, when the run waits on a question deferred to the
/// client, the "input required" result asking it.
pub(crate) fn respond(called: Called, ask: Option<&DeferredAsk>) -> CallToolResponse {
    let Called::Waiting(waiting) = called else {
        return called.into_result().into();
    };
    if ask.is_some_and(|a| a.deferred.load(Ordering::Acquire)) {
        let s = &waiting.suspension;
        if let Some(asking) = input_required(&waiting.session_id, &s.message, &s.input_schema) {
            return asking.into();
        }
        // Not a form an elicitation can carry: the session stands, and the client can still
        // continue it with NAME_continue.
    }
    crate::session::waiting_result(&waiting).into()
}

/// The "input required" result of session `session_id`; `None` when its inputSchema is not
/// one an elicitation form can carry (a flat object of strings, numbers, booleans and enums).
fn input_required(
    session_id: &str,
    message: &Value,
    schema: &Value,
) -> Option<InputRequiredResult> {
    let text = match message {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let request: InputRequest = match serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": text, "requestedSchema": schema}
    })) {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(session = session_id, error = %e, "inputSchema is not an elicitation form");
            return None;
        }
    };
    let mut requests = InputRequests::new();
    requests.insert(INPUT_KEY.to_owned(), request);
    Some(InputRequiredResult::new(
        Some(requests),
        Some(session_id.to_owned()),
    ))
}

fn tool_error(message: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message)]).into()
}

impl GraphServer {
    /// `Some` when `request` retries a call that answered "input required" (it carries
    /// `inputResponses` or a `requestState`): continues that session with the answer.
    pub(crate) async fn resume(
        &self,
        request: &CallToolRequestParams,
        options: &CallOptions,
    ) -> Option<CallToolResponse> {
        if !may_resume(request) {
            return None;
        }
        let name = &*request.name;
        let engine = self.engine();
        engine.graph(name).filter(|g| g.can_wait())?;
        let Some(session_id) = request.request_state.clone() else {
            return Some(tool_error(format!(
                "`{name}` was retried with inputResponses but without the requestState of its \
                 input-required result"
            )));
        };
        let answer = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(INPUT_KEY));
        let Some(answer) = answer else {
            // Nothing answered: ask again what the session waits for.
            return Some(
                match engine.session(name, &session_id, &options.caller()).await {
                    Ok(s) => {
                        match input_required(&session_id, &s.state["message"], &s.input_schema) {
                            Some(asking) => asking.into(),
                            None => {
                                CallToolResult::structured(crate::session::session_json(&s)).into()
                            }
                        }
                    }
                    Err(e) => tool_error(e.to_string()),
                },
            );
        };
        let action = answer.get("action").and_then(Value::as_str);
        let input = match action {
            Some("accept") => answer.get("content").cloned().unwrap_or_else(|| json!({})),
            Some(action @ ("decline" | "cancel")) => {
                let how = if action == "decline" {
                    "declined"
                } else {
                    "cancelled"
                };
                let caller = options.caller();
                return Some(
                    match engine.cancel_session(name, &session_id, &caller).await {
                        Ok(_) => tool_error(format!(
                            "the client {how} the request for input; session {session_id} is \
                         cancelled"
                        )),
                        Err(e) => tool_error(e.to_string()),
                    },
                );
            }
            _ => {
                return Some(tool_error(format!(
                    "inputResponses.{INPUT_KEY} must be an elicitation result {{action: \
                     \"accept\" | \"decline\" | \"cancel\", content}}; got {answer}"
                )));
            }
        };
        let companion = Companion {
            tool: name.to_owned(),
            kind: CompanionKind::Continue,
        };
        let mut args = serde_json::Map::new();
        args.insert("sessionId".into(), Value::String(session_id));
        args.insert("input".into(), input);
        let result = self
            .call_companion(name, &companion, Some(args), options)
            .await;
        Some(respond(result, options.deferred.as_deref()))
    }
}
