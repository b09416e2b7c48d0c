//! mcpflow's HTTP run API: watch, start and debug runs over plain JSON and SSE, described by
//! an OpenAPI 3.1 document (`openapi.json` beside this crate, served at `/api/openapi.json`).
//!
//! ```ignore
//! let api = Api::new(move || live.current().engine().clone(), |_pointer| None);
//! api.attach(&engine);                  // hear of every run the engine starts
//! let app = router.merge(api.router()); // `server` mounts it behind its Host/Origin guard
//! ```
//!
//! What it offers: runs listed (live ones from the [`Registry`], ended ones from it and from
//! the engine's store), one run with its history and per-node timing, a tool's time per node
//! over its recent runs (where its time goes), the context at any history index, a live event
//! stream of one run and of all runs, graph tools as drawable graphs, the upstreams and their
//! tools with their schemas, runs started with debug options, pause/resume/step/stop,
//! breakpoints (conditional ones too) set and cleared while a run goes, and waiting sessions
//! continued or cancelled (only by the principal that started them, or an admin: the request's
//! [`Caller`](mcpflow_engine::Caller), which `server` puts in its extensions).
//!
//! **What it costs when nobody listens.** The engine's [`Observe`](mcpflow_engine::Observe)
//! hook registers each run (an entry in a map and a `Control` handle) at its start and removes
//! it at its end: per run, never per node. A run gets an event channel from this API only when
//! it is recorded: started here, watched, or started while someone watches all runs. Until
//! then the engine builds no event for it (per event it could emit, one atomic load finds that
//! no channel was attached); nothing is cloned, serialised or kept, and an ended run is kept
//! in memory only if it was recorded. A server without `--http` has no registry at all.
//!
//! **Bounded memory.** A recorded run's events are serialised once into a log of at most
//! [`registry::LOG_LIMIT`] events and [`registry::LOG_BYTES`] bytes, shared by its watchers;
//! each watcher holds a cursor. A watcher that falls behind the log is dropped with an `end`
//! event that says why; the stream of all runs drops one that falls behind its channel.
//!
//! **A fleet.** Replicas on one PostgreSQL store serve as one run API ([`fleet`]): one run's
//! stream and its debug control reach it on whichever replica executes it, and the stream of
//! all runs carries every replica's runs; nothing crosses the fleet while nobody watches.
//!
//! `GET /api/whoami` tells a caller who it is and its scopes (`whoami.rs`), which the web UI
//! reads to offer only what they allow.
//!
//! The graph editor's endpoints ([`edit`]: a tool as on disk, checks as you type, a save) and
//! the hook flow editor's ([`hooks`]: the hooks, a hook checked, tried in the sandbox, the
//! hooks file saved) are calls of `mcpflow-authoring` (a trial, of the gateway's
//! [`Trials`](mcpflow_gateway::Trials)), over the config on disk the binary hands over
//! ([`Api::with_publish`]).
//!
//! `/metrics` (Prometheus, OpenMetrics text) is here too, beside the API ([`metrics`]), and
//! the REST face of the MCP endpoint ([`rest`], under `/rest/v1`, in the same document), which
//! `server` mounts with its own MCP endpoint to ask.
//!
//! This crate frames no MCP message; `server` mounts its router.

pub mod admin;
mod debug;
mod edit;
mod error;
mod fleet;
mod graph;
mod hooks;
mod http;
pub mod metrics;
pub mod registry;
pub mod rest;
mod runs;
mod sessions;
mod stream;
mod timing;
mod ui;
mod upstreams;
mod whoami;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use mcpflow_engine::{Engine, Observe};

pub use error::ApiError;
pub use registry::Registry;

/// Who calls: the engine's [`Caller`](mcpflow_engine::Caller) that `server` puts in each
/// request's extensions from its access control; the open caller when nothing was put there
/// (a router mounted without access control answers as before it existed).
pub(crate) fn caller(
    extension: Option<axum::Extension<mcpflow_engine::Caller>>,
) -> mcpflow_engine::Caller {
    extension.map(|axum::Extension(c)| c).unwrap_or_default()
}

/// The OpenAPI 3.1 document of this API.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// Where a node of a graph tool is written: a JSON pointer into the config, and its place in
/// the file when known.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Position {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

type EngineSource = dyn Fn() -> Engine + Send + Sync;
type Locate = dyn Fn(&str) -> Option<Position> + Send + Sync;

/// The run API of one server. Cheap to clone.
#[derive(Clone)]
pub struct Api {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Box<EngineSource>,
    locate: Box<Locate>,
    registry: Arc<Registry>,
    reload: Option<Box<admin::Reload>>,
    /// The config on disk, for the editor's endpoints.
    publish: Option<Arc<dyn mcpflow_authoring::Publish>>,
    /// Where the hook flow editor's hooks are tried.
    trials: mcpflow_gateway::Trials,
    /// This replica in the fleet's stream of all runs, once it joined a fleet.
    fleet: std::sync::OnceLock<Arc<fleet::all::FleetAll>>,
}

impl Api {
    /// An API over the engine `engine` returns: the current one (a reload replaces it).
    /// `locate` places graph nodes in the config file, from a JSON pointer
    /// (`/tools/0/nodes/2`); the drawable graphs carry it (`|_| None` when unknown).
    pub fn new(
        engine: impl Fn() -> Engine + Send + Sync + 'static,
        locate: impl Fn(&str) -> Option<Position> + Send + Sync + 'static,
    ) -> Api {
        Api {
            inner: Arc::new(Inner {
                engine: Box::new(engine),
                locate: Box::new(locate),
                registry: Registry::new(),
                reload: None,
                publish: None,
                trials: mcpflow_gateway::Trials::new(),
                fleet: std::sync::OnceLock::new(),
            }),
        }
    }

    /// `POST /api/admin/reload` calls `reload`: the server's one reload path. Without it that
    /// endpoint answers 404. Set before the API is cloned (its router, its attachment).
    pub fn with_reload(
        mut self,
        reload: impl Fn() -> futures::future::BoxFuture<'static, admin::ReloadOutcome>
        + Send
        + Sync
        + 'static,
    ) -> Api {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.reload = Some(Box::new(reload)),
            None => tracing::warn!("the run API was shared before its reload path was set"),
        }
        self
    }

    /// The editor's endpoints (`/api/authoring/…`, `/api/tools/{tool}/source`) read, check
    /// and save tools of the config on disk through `publish`, the path of the authoring tools'
    /// saves. Without it they answer 404. Set before the API is cloned.
    pub fn with_publish(mut self, publish: Arc<dyn mcpflow_authoring::Publish>) -> Api {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.publish = Some(publish),
            None => tracing::warn!("the run API was shared before its editor was given the config"),
        }
        self
    }

    pub(crate) fn publish(&self) -> Option<Arc<dyn mcpflow_authoring::Publish>> {
        self.inner.publish.clone()
    }

    pub(crate) fn trials(&self) -> &mcpflow_gateway::Trials {
        &self.inner.trials
    }

    pub(crate) fn reload(&self) -> Option<&admin::Reload> {
        self.inner.reload.as_deref()
    }

    /// Makes every run of `engine` (and of the engines that succeed it on a reload) known to
    /// this API. Once per engine; an engine already observed keeps its observer.
    pub fn attach(&self, engine: &Engine) {
        let observer: Arc<dyn Observe> = Arc::new(registry::Hook(self.inner.registry.clone()));
        if engine.observe(observer).is_err() {
            tracing::debug!("the engine is already observed; the run API sees its runs there");
        }
    }

    /// Serves the fleet's requests (live events and debug control of the runs this replica
    /// holds, for watchers on other replicas on the same PostgreSQL store), for the life of
    /// the process. Nothing on a store without a fleet (SQLite). Call after [`Api::attach`].
    pub fn join_fleet(&self) {
        tokio::spawn(fleet::serve(self.clone()));
    }

    pub(crate) fn fleet(&self) -> Option<&Arc<fleet::all::FleetAll>> {
        self.inner.fleet.get()
    }

    pub(crate) fn set_fleet(&self, fleet: Arc<fleet::all::FleetAll>) {
        let _ = self.inner.fleet.set(fleet);
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    pub(crate) fn engine(&self) -> Engine {
        (self.inner.engine)()
    }

    pub(crate) fn locate(&self, pointer: &str) -> Option<Position> {
        (self.inner.locate)(pointer)
    }

    /// The routes, all under `/api`.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/api/openapi.json", get(openapi))
            .route("/api/whoami", get(whoami::whoami))
            .route("/api/tools", get(graph::list_tools))
            .route("/api/tools/{tool}/graph", get(graph::tool_graph))
            .route("/api/tools/{tool}/timing", get(timing::tool_timing))
            .route("/api/upstreams", get(upstreams::list))
            .route("/api/runs", get(runs::list).post(runs::start))
            .route("/api/runs/{id}", get(runs::show))
            .route("/api/runs/{id}/context", get(runs::context))
            .route("/api/runs/{id}/events", get(events_of_run))
            .route("/api/events", get(events_of_all))
            .route("/api/runs/{id}/pause", post(debug::pause))
            .route("/api/runs/{id}/resume", post(debug::resume))
            .route("/api/runs/{id}/step", post(debug::step))
            .route("/api/runs/{id}/stop", post(debug::stop))
            .route("/api/runs/{id}/breakpoints", get(debug::breakpoints))
            .route(
                "/api/runs/{id}/breakpoints/{node}",
                delete(debug::clear_breakpoint).put(debug::set_breakpoint),
            )
            .route("/api/sessions", get(sessions::list))
            .route(
                "/api/sessions/{id}/continue",
                post(sessions::continue_session),
            )
            .route("/api/sessions/{id}/cancel", post(sessions::cancel_session))
            .route("/api/admin/reload", post(admin::reload))
            .route("/api/authoring", get(edit::overview))
            .route("/api/authoring/check", post(edit::check))
            .route("/api/authoring/expression", post(edit::expression))
            .route("/api/authoring/save", post(edit::save))
            .route("/api/tools/{tool}/source", get(edit::source))
            .route("/api/hooks", get(hooks::list))
            .route("/api/hooks/check", post(hooks::check))
            .route("/api/hooks/try", post(hooks::try_hook))
            .route("/api/hooks/save", post(hooks::save))
            .layer(axum::middleware::map_response(error::as_json))
            .with_state(self.clone())
            .merge(self.metrics_router())
            .merge(ui::router())
    }

    /// `/metrics` alone, over the same engine (a stdio server's own metrics listener).
    pub fn metrics_router(&self) -> Router {
        let api = self.clone();
        metrics::router(move || api.engine())
    }
}

async fn openapi() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        OPENAPI,
    )
        .into_response()
}

async fn events_of_run(State(api): State<Api>, Path(id): Path<String>) -> Response {
    match api.registry().get(&id) {
        Some(run) => stream::run_stream(api.registry(), run),
        None => match fleet::watch(&api, &id).await {
            // Held live by another replica on the same store.
            Some(remote) => remote,
            None => ApiError::not_found(format!(
                "no live or recently watched run {id:?}: only those have an event stream (GET \
             /api/runs/{id} shows a stored run's history)"
            ))
            .into_response(),
        },
    }
}

async fn events_of_all(State(api): State<Api>, RawQuery(_): RawQuery) -> Response {
    match api.fleet() {
        // Every replica's runs, over the fleet's channel.
        Some(fleet) => fleet::all::all_stream(&api, fleet).await,
        None => stream::all_stream(api.registry()),
    }
}
