//! One `tools/call` of a proxied tool: its hooks (the sequence in [`crate::hooks`]), then the
//! call forwarded with progress both ways, cancellation, the upstream's log lines and, for a
//! 2026-07-28 client, its `_meta` and "input required" rounds ([`crate::era`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcpflow_model::future::boxed;
use mcpflow_model::proxy::HookMethod;
use mcpflow_upstream::{UpstreamError, UpstreamLog, UpstreamProgress};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
    ContentBlock, ProgressNotificationParam, ServerResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::era::{Era, send_options};
use crate::expose::Exposed;
use crate::gateway::{Gateway, client_name, lock};
use crate::hooks::Traffic;
use crate::listing::{Route, Target};

impl Gateway {
    /// Forwards one `tools/call` of a proxied tool: hooks, arguments, progress both ways,
    /// cancellation; a 2026-07-28 request with its client's `_meta`, and the upstream's "input
    /// required" answer passed back as is (post hooks see only complete results).
    pub async fn call(
        &self,
        route: &Route,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        match &route.0 {
            Target::Proxied(exposed) => self.call_proxied(exposed, request, context).await,
            Target::Builtin(builtin) => {
                Box::pin(self.call_builtin(*builtin, request, context)).await
            }
        }
    }

    /// One proxied tool's call, as [`Gateway::call`] describes it.
    pub(crate) async fn call_proxied(
        &self,
        exposed: &Exposed,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let era = Era::of_call(&request, context);
        let client = client_name(&context.peer);
        let traffic = Traffic::proxied(
            HookMethod::ToolsCall,
            &exposed.server,
            Some(&exposed.original),
            client.as_deref(),
        )
        .sent_by(crate::hooks::caller_in(context));
        let arguments = exposed.arguments(request.arguments);
        let era = era.as_ref();
        // Without hooks the forwarded call is not nested inside the hooks' future: every
        // level of nesting is another copy of it per call.
        if !self.hooks.wraps(traffic) {
            return self.forward(exposed, arguments, era, context).await;
        }
        boxed(|| {
            self.hooks
                .around_call(traffic, &exposed.original, Some(arguments), |arguments| {
                    self.forward(exposed, arguments.unwrap_or_default(), era, context)
                })
        })
        .await
    }

    async fn forward(
        &self,
        exposed: &Exposed,
        args: Map<String, Value>,
        era: Option<&Era>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut params = CallToolRequestParams::new(exposed.original.clone()).with_arguments(args);
        if let Some(era) = era {
            params = era.retry(params);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let token = context.meta.get_progress_token();
        let (sink, mut rx) = match token {
            Some(_) => {
                let (tx, rx) = mpsc::unbounded_channel::<UpstreamProgress>();
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let mut logs = self.pool.logs();
        let _counted = InFlight::enter(&self.in_flight, &exposed.server);
        // What the upstream asks while serving the call goes to this client (or is refused);
        // a 2026-07-28 client is asked nothing mid-call.
        let caller: Option<Arc<dyn mcpflow_upstream::Caller>> = match era {
            Some(_) => None,
            None => Some(Arc::new(crate::caller::CallingClient::new(context))),
        };
        let mut options = send_options(era, caller, context).cancel(context.ct.clone());
        if let Some(sink) = sink {
            options = options.progress(sink);
        }
        // The sink moves into the call and is dropped when it ends, which ends the relay
        // below. Boxed here, and built in its box: moved around unboxed, its state (rmcp's
        // request futures) was most of the bytes a pass-through call copied.
        let call = boxed(|| self.pool.send(&exposed.server, request, options));
        let relay = async {
            let (Some(rx), Some(token)) = (rx.as_mut(), token) else {
                return;
            };
            let notifier = crate::notify::Notifier::of(context);
            while let Some(p) = rx.recv().await {
                let mut param = ProgressNotificationParam::new(token.clone(), p.progress);
                if let Some(total) = p.total {
                    param = param.with_total(total);
                }
                if let Some(message) = p.message {
                    param = param.with_message(message);
                }
                if !notifier.progress(param).await {
                    return;
                }
            }
        };
        let forwarded = async {
            // Owned here, so that a cancelled call is dropped (and its sink with it) as soon
            // as this ends.
            let mut call = call;
            loop {
                tokio::select! {
                    r = &mut call => {
                        // Lines logged before the answer were published before the pool
                        // returned it: they go out before it.
                        while let Ok(log) = logs.try_recv() {
                            self.relay_log(&exposed.server, Ok(log), context).await;
                        }
                        // Boxed: rmcp's ServerResult is several KB, and the join moves its
                        // output three times.
                        return r.map(Box::new);
                    }
                    log = logs.recv() => self.relay_log(&exposed.server, log, context).await,
                }
            }
        };
        let (outcome, ()) = tokio::join!(forwarded, relay);
        let answer = match outcome {
            // The pool sent `notifications/cancelled` upstream; the client expects no answer,
            // and rmcp sends none for a cancelled request.
            Err(UpstreamError::Cancelled { .. }) => {
                return Err(McpError::internal_error("cancelled by the client", None));
            }
            Err(e @ UpstreamError::Rejected { .. }) => return upstream_failure(e),
            // Only this upstream's tools fail: a tool error the model can read.
            Err(e) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into());
            }
            Ok(answer) => answer,
        };
        match *answer {
            ServerResult::CallToolResult(mut result) => {
                // Upstreams speak 2025-11-25 to us; rmcp drops the field again for such clients.
                result
                    .result_type
                    .get_or_insert(rmcp::model::ResultType::COMPLETE);
                Ok(result.into())
            }
            // Only a 2026-07-28 request gets one: the client answers it and retries.
            ServerResult::InputRequiredResult(asking) if era.is_some() => {
                Ok(CallToolResponse::InputRequired(asking))
            }
            other => Err(McpError::internal_error(
                format!(
                    "upstream `{}` answered tools/call with something else: {other:?}",
                    exposed.server
                ),
                None,
            )),
        }
    }

    #[expect(deprecated, reason = "servers and clients on 2025-11-25 still log")]
    async fn relay_log(
        &self,
        server: &Arc<str>,
        log: Result<UpstreamLog, tokio::sync::broadcast::error::RecvError>,
        context: &RequestContext<RoleServer>,
    ) {
        let Ok(UpstreamLog {
            server: from,
            params,
        }) = log
        else {
            return;
        };
        if from != *server || lock(&self.in_flight).get(server).copied() != Some(1) {
            return;
        }
        if let Ok(params) =
            serde_json::from_value::<rmcp::model::LoggingMessageNotificationParam>(params)
        {
            crate::notify::Notifier::of(context).logging(params).await;
        }
    }
}

/// Counts one call in flight on an upstream for as long as it lives.
struct InFlight<'a> {
    map: &'a Mutex<HashMap<Arc<str>, usize>>,
    server: Arc<str>,
}

impl<'a> InFlight<'a> {
    fn enter(map: &'a Mutex<HashMap<Arc<str>, usize>>, server: &Arc<str>) -> InFlight<'a> {
        *lock(map).entry(server.clone()).or_default() += 1;
        InFlight {
            map,
            server: server.clone(),
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(n) = lock(self.map).get_mut(&self.server) {
            *n = n.saturating_sub(1);
        }
    }
}

/// How an upstream failure reaches the client: the upstream's own JSON-RPC refusal as is (the
/// gateway is transparent), anything else as an internal error that says what happened.
pub(crate) fn upstream_failure<T>(e: UpstreamError) -> Result<T, McpError> {
    match e {
        UpstreamError::Rejected {
            code,
            message,
            data,
            ..
        } => Err(McpError::new(
            rmcp::model::ErrorCode(code),
            message,
            data.map(|data| *data),
        )),
        other => Err(McpError::internal_error(other.to_string(), None)),
    }
}
