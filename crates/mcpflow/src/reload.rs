//! Serving the config anew while clients stay connected: the config on disk is loaded and
//! compiled against the running upstream pool, pinned to the same store under its new
//! version (the new engine succeeds the old one, so sessions started before keep their
//! graph), and swapped into the [`LiveServer`]. The authoring tools' saves publish through
//! it ([`Publish`]); changing the upstream servers themselves still takes a restart.

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use mcpflow_authoring::Publish;
use mcpflow_config::{ConfigErrors, Loaded};
use mcpflow_engine::Engine;
use mcpflow_server::{GraphServer, LiveServer, ServerError};
use tokio::task::JoinHandle;

use crate::cli::ServeArgs;

/// What a reload replaces, and how it builds the next server.
pub struct Reloader {
    /// Itself, for the authoring tools of each server it composes.
    me: std::sync::Weak<Reloader>,
    args: ServeArgs,
    owner: String,
    /// The server being served; set once it exists.
    live: OnceLock<LiveServer>,
    running: tokio::sync::Mutex<Running>,
    saving: tokio::sync::Mutex<()>,
    /// Where the served config's values are written, for the run API's drawable graphs:
    /// replaced with the config on each reload.
    sources: std::sync::RwLock<Arc<mcpflow_config::SourceMap>>,
}

struct Running {
    loaded: Loaded,
    engine: Engine,
    upkeep: Option<JoinHandle<()>>,
}

impl Reloader {
    pub fn new(
        args: &ServeArgs,
        owner: String,
        loaded: Loaded,
        engine: Engine,
        upkeep: Option<JoinHandle<()>>,
    ) -> Arc<Reloader> {
        let sources = std::sync::RwLock::new(Arc::new(loaded.sources.clone()));
        Arc::new_cyclic(|me| Reloader {
            me: me.clone(),
            sources,
            args: clone_args(args),
            owner,
            live: OnceLock::new(),
            running: tokio::sync::Mutex::new(Running {
                loaded,
                engine,
                upkeep,
            }),
            saving: tokio::sync::Mutex::new(()),
        })
    }

    /// The graph server of `loaded` over `engine`, with the authoring tools when the flag or
    /// the config asks (their saves publish through `this`).
    pub fn compose(&self, loaded: &Loaded, engine: Engine) -> Result<GraphServer, ServerError> {
        let server = GraphServer::new(&loaded.config, engine)?;
        let settings = loaded.config.authoring;
        if !self.args.authoring && settings.is_none() {
            return Ok(server);
        }
        let served = mcpflow_authoring::Served {
            engine: server.engine().clone(),
            config: Arc::new(loaded.config.clone()),
            base_dir: loaded.base_dir.clone(),
        };
        let mut authoring = mcpflow_authoring::Authoring::new(settings.unwrap_or_default(), served);
        if let Some(me) = self.me.upgrade() {
            authoring = authoring.with_publish(me);
        }
        server.with_authoring(authoring)
    }

    /// Whether the tool list can change while serving (saves are on).
    pub fn reloads(loaded: &Loaded) -> bool {
        loaded.config.authoring.is_some_and(|a| a.save())
    }

    /// Positions in the config being served (the one loaded last).
    pub fn sources(&self) -> Arc<mcpflow_config::SourceMap> {
        self.sources
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn serve(&self, live: LiveServer) {
        let _ = self.live.set(live);
    }

    /// Stops the background upkeep of the engine served last.
    pub async fn stop(&self) {
        if let Some(task) = self.running.lock().await.upkeep.take() {
            task.abort();
        }
    }

    async fn reload_now(&self) -> Result<Vec<String>, String> {
        let live = self
            .live
            .get()
            .ok_or("the server is not serving yet")?
            .clone();
        let mut running = self.running.lock().await;
        let pool = running.engine.pool().clone();
        let (loaded, engine) = self
            .read()
            .and_then(|draft| {
                draft.compile(
                    |config, _| Engine::new(config, pool.clone()),
                    mcpflow_engine::check,
                )
            })
            .map_err(|e| format!("the config does not load: {e}"))?;
        if loaded.config.mcp_servers != running.loaded.config.mcp_servers {
            return Err(
                "the config's mcpServers changed on disk; upstream servers change only on a \
                 restart of mcpflow"
                    .into(),
            );
        }
        match running.engine.durability() {
            Some(d) => {
                crate::state::pin(&engine, &loaded, d.store.clone(), self.owner.clone()).await?
            }
            None => {
                crate::state::attach(&engine, &loaded, &self.args.state, self.owner.clone())
                    .await?;
            }
        }
        engine.succeed(&running.engine);
        let server = self
            .compose(&loaded, engine.clone())
            .map_err(|e| e.to_string())?;
        server.check_names().await.map_err(|e| e.to_string())?;
        let tools = loaded.config.tools.iter().map(|t| t.name.clone()).collect();
        live.replace(server).await;
        if let Some(task) = running.upkeep.take() {
            task.abort();
        }
        let upkeep = engine.spawn_upkeep();
        tracing::info!(
            tools = loaded.config.tools.len(),
            "serving the config as saved"
        );
        *self.sources.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(loaded.sources.clone());
        *running = Running {
            loaded,
            engine,
            upkeep,
        };
        Ok(tools)
    }

    fn read(&self) -> Result<mcpflow_config::Draft, ConfigErrors> {
        let mut loader = mcpflow_config::Loader::new();
        if let Some(mcp) = &self.args.config.mcp {
            loader = loader.mcp_json(mcp);
        }
        loader.read(&self.args.config.config)
    }
}

impl Publish for Reloader {
    fn load(&self) -> Result<Loaded, ConfigErrors> {
        self.read()?.finish(Vec::new())
    }

    fn reload(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        Box::pin(self.reload_now())
    }

    fn saving(&self) -> &tokio::sync::Mutex<()> {
        &self.saving
    }
}

fn clone_args(args: &ServeArgs) -> ServeArgs {
    ServeArgs {
        config: args.config.clone(),
        authoring: args.authoring,
        http: args.http,
        allowed_hosts: args.allowed_hosts.clone(),
        stdio_write_timeout: args.stdio_write_timeout,
        state: args.state.clone(),
        instance: args.instance.clone(),
    }
}
