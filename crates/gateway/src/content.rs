//! Resources and prompts of proxied upstreams: lists merged in config order, reads and gets
//! routed to the upstream that listed the URI or prompt.
//!
//! Resource URIs are passed through unchanged (they are addresses, not names a model picks);
//! prompt names get the upstream's tool naming (prefix or none) so two upstreams' prompts
//! cannot collide silently.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientRequest, CompleteRequest, CompleteRequestParams, CompleteResult, GetPromptRequest,
    GetPromptRequestParams, GetPromptResponse, ListPromptsRequest, ListPromptsResult,
    ListResourceTemplatesRequest, ListResourceTemplatesResult, ListResourcesRequest,
    ListResourcesResult, PaginatedRequestParams, Prompt, ReadResourceRequest,
    ReadResourceRequestParams, ReadResourceResponse, Reference, Resource, ResourceTemplate,
    ResultType, ServerResult, SubscribeRequestParams, UnsubscribeRequestParams,
};
#[expect(deprecated, reason = "clients on 2025-11-25 still subscribe this way")]
use rmcp::model::{SubscribeRequest, UnsubscribeRequest};

use mcpflow_upstream::passthrough::SendOptions;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

use crate::call::upstream_failure;
use crate::era::{Era, send_options};
use crate::gateway::{Gateway, Offer, lock};

/// Which upstream listed which resource URI and prompt name.
#[derive(Default)]
pub(crate) struct Routes {
    resources: Mutex<HashMap<String, Arc<str>>>,
    prompts: Mutex<HashMap<String, (Arc<str>, String)>>,
}

impl Gateway {
    fn passing(&self, prompts: bool) -> Vec<Arc<str>> {
        self.config
            .upstreams
            .iter()
            .filter(|(_, u)| if prompts { u.prompts } else { u.resources } != Some(false))
            .map(|(name, _)| name.as_str().into())
            .collect()
    }

    /// Whether any upstream passes resources (`prompts == false`) or prompts through.
    pub fn passes(&self, prompts: bool) -> bool {
        !self.passing(prompts).is_empty()
    }

    /// All pages of `method` from every passing upstream, concurrently; failures are logged
    /// and leave that upstream out, and so does an upstream that is (re)starting: a listing
    /// never waits for one.
    async fn collect<T>(
        &self,
        prompts: bool,
        request: impl Fn(Option<PaginatedRequestParams>) -> ClientRequest,
        page: impl Fn(ServerResult) -> Option<(Vec<T>, Option<String>)>,
    ) -> Vec<(Arc<str>, Vec<T>)> {
        let jobs = self.passing(prompts).into_iter().map(|server| {
            let (request, page) = (&request, &page);
            async move {
                let mut items = Vec::new();
                let mut cursor: Option<String> = None;
                loop {
                    let params = cursor.take().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
                    match self.pool.send(&server, request(params), SendOptions::default().if_connected()).await {
                        Ok(result) => match page(result) {
                            Some((mut got, next)) => {
                                items.append(&mut got);
                                match next {
                                    Some(next) => cursor = Some(next),
                                    None => break,
                                }
                            }
                            None => break,
                        },
                        Err(e) => {
                            tracing::debug!(server = %server, error = %e, "upstream listing skipped");
                            break;
                        }
                    }
                }
                (server, items)
            }
        });
        futures::future::join_all(jobs).await
    }

    pub async fn list_resources(&self) -> Result<ListResourcesResult, McpError> {
        self.offers(Offer::Resources)?;
        let all = self
            .collect(
                false,
                |p| {
                    ClientRequest::ListResourcesRequest(ListResourcesRequest {
                        params: p,
                        ..Default::default()
                    })
                },
                |r| match r {
                    ServerResult::ListResourcesResult(r) => Some((r.resources, r.next_cursor)),
                    _ => None,
                },
            )
            .await;
        let mut routes = lock(&self.content.resources);
        let mut out: Vec<Resource> = Vec::new();
        for (server, resources) in all {
            for r in resources {
                routes
                    .entry(r.uri.clone())
                    .or_insert_with(|| server.clone());
                out.push(r);
            }
        }
        Ok(ListResourcesResult::with_all_items(out))
    }

    pub async fn list_resource_templates(&self) -> Result<ListResourceTemplatesResult, McpError> {
        self.offers(Offer::Resources)?;
        let all = self
            .collect(
                false,
                |p| {
                    ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest {
                        params: p,
                        ..Default::default()
                    })
                },
                |r| match r {
                    ServerResult::ListResourceTemplatesResult(r) => {
                        Some((r.resource_templates, r.next_cursor))
                    }
                    _ => None,
                },
            )
            .await;
        let out: Vec<ResourceTemplate> = all.into_iter().flat_map(|(_, t)| t).collect();
        Ok(ListResourceTemplatesResult::with_all_items(out))
    }

    /// Reads from the upstream that listed `uri`; an unlisted URI (a template's, say) is tried
    /// on each passing upstream in order.
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.offers(Offer::Resources)?;
        let era = Era::of(context);
        let era = era.as_ref();
        let known = lock(&self.content.resources).get(&params.uri).cloned();
        let candidates = match known {
            Some(server) => vec![server],
            None => self.passing(false),
        };
        let mut last = None;
        for server in candidates {
            let request =
                ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params.clone()));
            match self
                .pool
                .send(&server, request, send_options(era, None, context))
                .await
            {
                Ok(ServerResult::ReadResourceResult(mut r)) => {
                    r.result_type.get_or_insert(ResultType::COMPLETE);
                    return Ok(r.into());
                }
                Ok(ServerResult::InputRequiredResult(asking)) if era.is_some() => {
                    return Ok(ReadResourceResponse::InputRequired(asking));
                }
                Ok(_) => {}
                Err(e) => last = Some(e),
            }
        }
        match last {
            Some(e) => upstream_failure(e),
            None => Err(McpError::resource_not_found(
                format!("no proxied upstream has resource `{}`", params.uri),
                None,
            )),
        }
    }

    pub async fn list_prompts(&self) -> Result<ListPromptsResult, McpError> {
        self.offers(Offer::Prompts)?;
        Ok(self.prompts().await)
    }

    /// Every passing upstream's prompts under their exposed names, the routes refreshed.
    async fn prompts(&self) -> ListPromptsResult {
        let all = self
            .collect(
                true,
                |p| {
                    ClientRequest::ListPromptsRequest(ListPromptsRequest {
                        params: p,
                        ..Default::default()
                    })
                },
                |r| match r {
                    ServerResult::ListPromptsResult(r) => Some((r.prompts, r.next_cursor)),
                    _ => None,
                },
            )
            .await;
        let mut routes = lock(&self.content.prompts);
        let mut out: Vec<Prompt> = Vec::new();
        for (server, prompts) in all {
            let Some(rules) = self.config.upstreams.get(&*server) else {
                continue;
            };
            for mut p in prompts {
                let original = p.name.clone();
                p.name = rules.exposed_name(&server, &original);
                if routes.contains_key(&p.name)
                    && routes.get(&p.name).is_some_and(|(s, _)| *s != server)
                {
                    continue;
                }
                routes.insert(p.name.clone(), (server.clone(), original));
                out.push(p);
            }
        }
        ListPromptsResult::with_all_items(out)
    }

    pub async fn get_prompt(
        &self,
        mut params: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.offers(Offer::Prompts)?;
        let era = Era::of(context);
        let era = era.as_ref();
        let mut route = lock(&self.content.prompts).get(&params.name).cloned();
        if route.is_none() {
            self.prompts().await;
            route = lock(&self.content.prompts).get(&params.name).cloned();
        }
        let Some((server, original)) = route else {
            return Err(McpError::invalid_params(
                format!("unknown prompt `{}`", params.name),
                None,
            ));
        };
        params.name = original;
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        match self
            .pool
            .send(&server, request, send_options(era, None, context))
            .await
        {
            Ok(ServerResult::GetPromptResult(mut r)) => {
                r.result_type.get_or_insert(ResultType::COMPLETE);
                Ok(r.into())
            }
            // A 2026-07-28 client answers it and retries with `inputResponses`.
            Ok(ServerResult::InputRequiredResult(asking)) if era.is_some() => {
                Ok(GetPromptResponse::InputRequired(asking))
            }
            Ok(_) => Err(McpError::internal_error(
                format!("upstream `{server}` answered prompts/get with something else"),
                None,
            )),
            Err(e) => upstream_failure(e),
        }
    }
}

impl Gateway {
    /// Completion of a prompt argument goes to the prompt's upstream (under its own name); of
    /// a resource template's, to the first passing upstream that answers.
    pub async fn complete(
        &self,
        mut params: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        self.offers(Offer::Completions)?;
        let candidates = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let mut route = lock(&self.content.prompts).get(&prompt.name).cloned();
                if route.is_none() {
                    self.prompts().await;
                    route = lock(&self.content.prompts).get(&prompt.name).cloned();
                }
                let Some((server, original)) = route else {
                    return Err(McpError::invalid_params(
                        format!("unknown prompt `{}`", prompt.name),
                        None,
                    ));
                };
                prompt.name = original;
                vec![server]
            }
            // Resource templates, and any reference kind newer than this code.
            _ => self.passing(false),
        };
        let mut last = None;
        for server in candidates {
            let request = ClientRequest::CompleteRequest(CompleteRequest::new(params.clone()));
            match self
                .pool
                .send(&server, request, SendOptions::default())
                .await
            {
                Ok(ServerResult::CompleteResult(mut r)) => {
                    r.result_type.get_or_insert(ResultType::COMPLETE);
                    return Ok(r);
                }
                Ok(_) => {}
                Err(e) => last = Some(e),
            }
        }
        match last {
            Some(e) => upstream_failure(e),
            None => Ok(CompleteResult::default()),
        }
    }

    /// `resources/subscribe` (or unsubscribe) at the upstream that listed the URI, else at
    /// every passing upstream until one accepts. Legacy in 2026-07-28, still what clients of
    /// 2025-11-25 send.
    #[expect(deprecated, reason = "clients on 2025-11-25 still subscribe this way")]
    pub async fn subscription(&self, uri: String, subscribe: bool) -> Result<(), McpError> {
        self.offers(Offer::Resources)?;
        let known = lock(&self.content.resources).get(&uri).cloned();
        let candidates = match known {
            Some(server) => vec![server],
            None => self.passing(false),
        };
        let mut last = None;
        for server in candidates {
            let request = if subscribe {
                ClientRequest::SubscribeRequest(SubscribeRequest::new(SubscribeRequestParams::new(
                    uri.clone(),
                )))
            } else {
                ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(
                    UnsubscribeRequestParams::new(uri.clone()),
                ))
            };
            match self
                .pool
                .send(&server, request, SendOptions::default())
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        match last {
            Some(e) => upstream_failure(e),
            None => Err(McpError::resource_not_found(
                format!("no proxied upstream has resource `{uri}`"),
                None,
            )),
        }
    }

    /// `logging/setLevel` goes to every proxied upstream; one that refuses is only logged.
    /// Without `proxy:` the server declares no logging, and the method is not found.
    #[expect(deprecated, reason = "servers and clients on 2025-11-25 still log")]
    pub async fn set_level(
        &self,
        params: rmcp::model::SetLevelRequestParams,
    ) -> Result<(), McpError> {
        if !self.active {
            return Err(McpError::method_not_found::<
                rmcp::model::SetLevelRequestMethod,
            >());
        }
        let jobs = self.config.upstreams.keys().map(|server| {
            let request = ClientRequest::SetLevelRequest(rmcp::model::SetLevelRequest::new(
                params.clone(),
            ));
            async move {
                if let Err(e) = self.pool.send(server, request, SendOptions::default()).await {
                    tracing::debug!(server = %server, error = %e, "upstream refused logging/setLevel");
                }
            }
        });
        futures::future::join_all(jobs).await;
        Ok(())
    }
}
