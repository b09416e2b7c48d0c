//! Requests of the 2026-07-28 era through the gateway (the crate's README tells the whole
//! crossing) (see `mcpflow_upstream`'s
//! `SendOptions::stateless`): the client's per-request `_meta` goes upstream with the request, an
//! "input required" result comes back to the client unchanged, and the client's retry (its
//! `inputResponses` and `requestState`) goes upstream as it came. mcpflow keeps no state
//! between the rounds: the upstream's `requestState` is the upstream's to check.

use std::sync::Arc;

use mcpflow_upstream::passthrough::SendOptions;
use mcpflow_upstream::{Caller, ContentList, Identity};
use rmcp::model::{
    CallToolRequestParams, InputResponses, ProtocolVersion, RequestMetaObject, ServerNotification,
    SubscriptionFilter,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer};
use tokio::sync::broadcast;

use crate::gateway::Gateway;

/// What a 2026-07-28 request brings that the upstream must see.
#[derive(Debug, Clone)]
pub(crate) struct Era {
    /// The request's `_meta`, whole: protocol version, client info and capabilities, log level.
    meta: RequestMetaObject,
    /// A `tools/call` retry's answers and the state the upstream handed out with its question.
    input_responses: Option<InputResponses>,
    request_state: Option<String>,
}

impl Era {
    /// `Some` when the request being served is of the 2026-07-28 era (or later).
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Option<Era> {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        modern.then(|| Era {
            meta: context.meta.clone(),
            input_responses: None,
            request_state: None,
        })
    }

    /// [`Era::of`] for a `tools/call`, whose retry fields the gateway rebuilds the request
    /// without (it renames the tool and rewrites the arguments).
    pub(crate) fn of_call(
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Option<Era> {
        Era::of(context).map(|era| Era {
            input_responses: request.input_responses.clone(),
            request_state: request.request_state.clone(),
            ..era
        })
    }

    /// Puts the retry fields of the client's call on the forwarded one.
    pub(crate) fn retry(&self, mut params: CallToolRequestParams) -> CallToolRequestParams {
        params.input_responses = self.input_responses.clone();
        params.request_state = self.request_state.clone();
        params
    }
}

/// How a request is sent upstream: in the 2026-07-28 era's terms with `era`, else as a
/// 2025-11-25 session request whose server-to-client requests go to `caller`; made for the
/// identity the server put on `context` (a remote upstream's `${caller.…}` headers).
pub(crate) fn send_options(
    era: Option<&Era>,
    caller: Option<Arc<dyn Caller>>,
    context: &RequestContext<RoleServer>,
) -> SendOptions {
    let options = match (era, caller) {
        (Some(era), _) => SendOptions::default().stateless(era.meta.clone()),
        (None, Some(caller)) => SendOptions::default().caller(caller),
        (None, None) => SendOptions::default(),
    };
    match context.extensions.get::<Identity>() {
        Some(identity) => options.identity(identity.clone()),
        None => options,
    }
}

impl Gateway {
    /// What a 2026-07-28 `subscriptions/listen` stream may carry here: the proxied tools'
    /// list changes (the one list change the gateway follows and declares); `None` without
    /// `proxy:`, which declares none.
    pub fn subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        if !self.active {
            return None;
        }
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed;
        if self.passes(false) {
            accepted.resources_list_changed = requested.resources_list_changed;
        }
        if self.passes(true) {
            accepted.prompts_list_changed = requested.prompts_list_changed;
        }
        Some(accepted)
    }

    /// Feeds one `subscriptions/listen` stream with the upstreams' list changes (tools,
    /// resources, prompts) until the client ends it. rmcp has acknowledged it already and
    /// filters what it carries; what the client did not ask for is not sent.
    pub async fn listen(&self, context: &SubscriptionContext) -> Result<(), McpError> {
        use broadcast::error::RecvError;
        if !self.active {
            context.cancelled().await;
            return Ok(());
        }
        let mut changes = self.pool.list_changes();
        let mut contents = self.pool.content_changes();
        loop {
            let (server, list) = tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(server) => (server, None),
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => {
                        context.cancelled().await;
                        return Ok(());
                    }
                },
                change = contents.recv() => match change {
                    Ok(c) => (c.server, Some(c.list)),
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => {
                        context.cancelled().await;
                        return Ok(());
                    }
                },
            };
            // The pool dropped its list before announcing the change, so a client that lists
            // again on the news never gets the old one.
            if !self.announces(&server, list) {
                continue;
            }
            let accepted = context.accepted();
            let changed = match list {
                None if accepted.tools_list_changed == Some(true) => {
                    ServerNotification::ToolListChangedNotification(Default::default())
                }
                Some(ContentList::Resources) if accepted.resources_list_changed == Some(true) => {
                    ServerNotification::ResourceListChangedNotification(Default::default())
                }
                Some(ContentList::Prompts) if accepted.prompts_list_changed == Some(true) => {
                    ServerNotification::PromptListChangedNotification(Default::default())
                }
                _ => continue,
            };
            if context.sink().send(changed).await.is_err() {
                // The stream closed (the client went away); rmcp ends the request.
                return Ok(());
            }
        }
    }
}
