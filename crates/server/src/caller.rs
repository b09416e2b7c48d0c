//! Who sent an MCP request: the [`Principal`] the HTTP listener's access control established
//! (on Streamable HTTP inside the request's `http::request::Parts`, which rmcp hands the
//! handler; on legacy SSE put on the message itself). `None` means no access control ran
//! (stdio, in-process): everything is visible, as before `auth:` existed.

use std::sync::Arc;

use mcpflow_auth::{Credential, Principal, RunQuota, Scope, Via};
use mcpflow_engine::{Caller, RunLimit};
use rmcp::RoleServer;
use rmcp::service::RequestContext;

pub(crate) fn principal(context: &RequestContext<RoleServer>) -> Option<Principal> {
    of_request(context)
}

/// What access control put on the request: on the message itself (stdio, legacy SSE), or in
/// the HTTP request's parts (Streamable HTTP).
fn of_request<T: Clone + Send + Sync + 'static>(context: &RequestContext<RoleServer>) -> Option<T> {
    context
        .extensions
        .get::<T>()
        .or_else(|| {
            context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<T>())
        })
        .cloned()
}

/// Whether the tool, prompt or resource `name` is visible to `principal` (`authoring`: it is
/// one of the built-in authoring tools, which need that scope too).
pub(crate) fn sees(principal: Option<&Principal>, name: &str, authoring: bool) -> bool {
    principal.is_none_or(|p| p.sees(name) && (!authoring || p.allows(Scope::Authoring)))
}

/// The engine's view of who calls: what `$caller` and hooks read ([`Principal::to_json`]),
/// whose the run's sessions are, and whether it may act on another's. Without access control
/// (`None`, or the open principal of a server without `auth:`) the open caller, whose runs
/// record no one.
pub fn engine_caller(principal: Option<&Principal>) -> Caller {
    match principal {
        Some(p) if p.via() != Via::Open => {
            let caller = Caller::new(p.subject(), p.allows(Scope::Admin), p.to_json());
            match p.run_quota() {
                Some(quota) => caller.with_run_limit(Arc::new(Runs(quota.clone()))),
                None => caller,
            }
        }
        _ => Caller::open(),
    }
}

/// [`engine_caller`] with the credential the principal presented, which only upstreams marked
/// `forwardCallerToken` are sent (`${caller.token}`).
pub(crate) fn engine_caller_with(
    principal: Option<&Principal>,
    credential: Option<&Credential>,
) -> Caller {
    let caller = engine_caller(principal);
    match credential {
        Some(c) if caller.subject().is_some() => caller.with_token(c.secret()),
        _ => caller,
    }
}

/// The principal's count of runs in flight (kept by `mcpflow_auth`, across reloads), as the
/// engine takes slots of it.
#[derive(Debug)]
struct Runs(RunQuota);

impl RunLimit for Runs {
    fn take(&self) -> Option<Box<dyn Send + Sync>> {
        self.0
            .take()
            .map(|slot| Box::new(slot) as Box<dyn Send + Sync>)
    }

    fn max(&self) -> u32 {
        self.0.max()
    }
}

/// Puts who calls where the gateway's hooks read it (`metadata.caller`): the principal's
/// JSON, the open caller's without access control. The engine's [`Caller`] goes beside it, so
/// the call's run reads the same without making it again ([`run_caller`]).
pub(crate) fn tell_hooks(context: &mut RequestContext<RoleServer>, principal: Option<&Principal>) {
    let credential = of_request::<Credential>(context);
    let caller = engine_caller_with(principal, credential.as_ref());
    context
        .extensions
        .insert(mcpflow_gateway::CallerMetadata(caller.shared_json()));
    // Who the gateway's forwarded requests are made for (a remote upstream's `${caller.…}`
    // headers), as the call's run makes its own.
    context.extensions.insert(caller.identity());
    context.extensions.insert(caller);
}

/// Who a call's run is for: what [`tell_hooks`] put in `context`, else made of the principal.
pub(crate) fn run_caller(context: &RequestContext<RoleServer>) -> Caller {
    match context.extensions.get::<Caller>() {
        Some(caller) => caller.clone(),
        None => engine_caller_with(
            principal(context).as_ref(),
            of_request::<Credential>(context).as_ref(),
        ),
    }
}

/// What [`tell_hooks`] put in `context`.
pub(crate) fn hooks_caller(context: &RequestContext<RoleServer>) -> Option<&serde_json::Value> {
    context
        .extensions
        .get::<mcpflow_gateway::CallerMetadata>()
        .map(|c| &*c.0)
}

/// The run API reads who calls as the engine's [`Caller`], put in the request's extensions
/// here, inside access control (which put the [`Principal`] there).
pub(crate) async fn for_api(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let caller = engine_caller_with(
        request.extensions().get::<Principal>(),
        request.extensions().get::<Credential>(),
    );
    request.extensions_mut().insert(caller);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `$caller` of a server without `auth:` is the open principal, as the engine spells it
    /// when it is given no caller: the two must not drift apart.
    #[test]
    fn the_open_principal_reads_as_the_engines_open_caller() {
        let open = Principal::open();
        assert_eq!(&open.to_json(), Caller::open().json());
        assert_eq!(engine_caller(Some(&open)).subject(), None);
        assert_eq!(engine_caller(None).json(), Caller::open().json());
    }
}
