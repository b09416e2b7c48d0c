//! Serving the config anew while clients stay connected: the config on disk is loaded and
//! compiled against the running upstream pool, pinned to the same store under its new
//! version (the new engine succeeds the old one, so sessions started before keep their
//! graph), and swapped into the [`LiveServer`]. One path for every trigger: the authoring
//! tools' saves ([`Publish`]), SIGHUP, and the watch on the config's files. Only upstreams
//! whose definition changed start anew; a config that does not load changes nothing (the
//! error is logged, counted and shown by `/readyz`).

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
    /// The last reload that was refused, while the config on disk is still that one.
    refused: std::sync::Mutex<Option<Refused>>,
}

struct Running {
    loaded: Loaded,
    /// [`mcpflow_config::version`] of `loaded`: a read that gives the same one changes nothing.
    version: String,
    engine: Engine,
    upkeep: Option<JoinHandle<()>>,
}

/// A config on disk that did not load: why, when, and its [`key`] (the watch does not try
/// the same config twice).
#[derive(Clone)]
struct Refused {
    error: String,
    at: std::time::Instant,
    key: String,
}

/// What identifies the config on disk as read: its version, or, when it does not read or
/// check, what was wrong with it.
fn key(read: &Result<mcpflow_config::Draft, ConfigErrors>) -> String {
    use std::hash::{Hash, Hasher};
    match read {
        Ok(draft) => match draft.config() {
            Some(config) => mcpflow_config::version(config),
            None => {
                // `DefaultHasher::new()` has fixed keys: the same problems give the same key.
                let mut h = std::collections::hash_map::DefaultHasher::new();
                format!("{draft:?}").hash(&mut h);
                format!("invalid:{:x}", h.finish())
            }
        },
        Err(e) => format!("unreadable:{e}"),
    }
}

/// What started a reload, for the log.
#[derive(Debug, Clone, Copy)]
pub enum Trigger {
    Save,
    Signal,
    Watch,
    /// `POST /api/admin/reload`.
    Admin,
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
        let version = mcpflow_config::version(&loaded.config);
        Arc::new_cyclic(|me| Reloader {
            me: me.clone(),
            sources,
            refused: std::sync::Mutex::new(None),
            args: clone_args(args),
            owner,
            live: OnceLock::new(),
            running: tokio::sync::Mutex::new(Running {
                loaded,
                version,
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
        let settings = loaded.config.authoring.clone();
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

    /// What `/readyz` adds under "ready": the reload refused last, while the config on disk
    /// is still that one (the previous config goes on serving meanwhile).
    pub fn note(&self) -> String {
        let refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        match &*refused {
            None => String::new(),
            Some(r) => {
                format!(
                    "config reload refused {} s ago, the previous config is still served: {}",
                    r.at.elapsed().as_secs(),
                    r.error
                )
            }
        }
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

    /// Stops the background upkeep of the engine served last, and waits (10 s at most) for
    /// the records of the runs it finished to reach the store: a server stopping (a rolling
    /// restart) answered those calls, so their records must not be lost with the process.
    pub async fn stop(&self) {
        let mut running = self.running.lock().await;
        if let Some(task) = running.upkeep.take() {
            task.abort();
        }
        if let Some(durability) = running.engine.durability()
            && !durability
                .settle_records(std::time::Duration::from_secs(10))
                .await
        {
            tracing::error!("records of finished runs were still waiting for the store at exit");
        }
    }

    /// Loads the config on disk and serves it if it differs from the one served; logs and
    /// counts the outcome. `Ok(None)`: nothing changed.
    pub async fn reload(&self, trigger: Trigger) -> Result<Option<Vec<String>>, String> {
        let result = self.reload_now(trigger).await;
        match &result {
            Ok(Some(_)) => {
                mcpflow_telemetry::metrics::config_reload("applied");
                *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            Ok(None) => {
                *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            Err(e) => {
                mcpflow_telemetry::metrics::config_reload("refused");
                tracing::error!(
                    ?trigger,
                    "config reload refused, the previous config is still served: {e}"
                );
            }
        }
        result
    }

    async fn reload_now(&self, trigger: Trigger) -> Result<Option<Vec<String>>, String> {
        let live = self
            .live
            .get()
            .ok_or("the server is not serving yet")?
            .clone();
        let mut running = self.running.lock().await;
        let pool = running.engine.pool().clone();
        // Read and checked first: a config that does not load touches nothing.
        let read = self.read();
        let key = key(&read);
        if key == running.version {
            return Ok(None);
        }
        let draft = read.map_err(|e| self.refuse(key.clone(), e.to_string()))?;
        let (loaded, engine) = draft
            .compile(
                |config, _| Engine::new(config, pool.clone()),
                mcpflow_engine::check,
            )
            .map_err(|e| self.refuse(key.clone(), e.to_string()))?;
        // A config that compiled is keyed by its version: no second hash of it.
        let version = key.clone();
        let mcp_json = self.args.config.mcp.as_deref();
        let owner = self.owner.clone();
        match running.engine.durability() {
            Some(d) => {
                crate::state::pin(&engine, &loaded, d.store.clone(), mcp_json, owner).await?
            }
            None => {
                crate::state::attach(&engine, &loaded, &self.args.state, mcp_json, owner).await?;
            }
        }
        let server = self
            .compose(&loaded, engine.clone())
            .map_err(|e| self.refuse(key.clone(), e.to_string()))?;
        // The upstreams change with the config (all engines share the pool): proxied names
        // are checked on the new ones, and a clash puts the old definitions back.
        let upstreams = pool.reconfigure(loaded.config.mcp_servers.clone());
        if let Err(e) = server.check_names().await {
            pool.reconfigure(running.loaded.config.mcp_servers.clone());
            return Err(self.refuse(key, e.to_string()));
        }
        engine.succeed(&running.engine);
        let tools = loaded.config.tools.iter().map(|t| t.name.clone()).collect();
        live.replace(server).await;
        if let Some(task) = running.upkeep.take() {
            task.abort();
        }
        let upkeep = engine.spawn_upkeep();
        tracing::info!(
            ?trigger,
            tools = loaded.config.tools.len(),
            restarted = ?upstreams.restarted,
            added = ?upstreams.added,
            removed = ?upstreams.removed,
            version = %version,
            "config reloaded"
        );
        *self.sources.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(loaded.sources.clone());
        *running = Running {
            loaded,
            version,
            engine,
            upkeep,
        };
        Ok(Some(tools))
    }

    /// Notes a refused reload for `/readyz` and returns its message.
    fn refuse(&self, key: String, error: String) -> String {
        let message = format!("the config does not load: {error}");
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(Refused {
            error: message.clone(),
            at: std::time::Instant::now(),
            key,
        });
        message
    }

    /// Reloads on SIGHUP, for as long as the process lives.
    pub fn on_hangup(self: &Arc<Self>) {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot listen for SIGHUP ({e}): reloads come from the watch only");
                return;
            }
        };
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                let Some(me) = me.upgrade() else { return };
                if let Ok(None) = me.reload(Trigger::Signal).await {
                    tracing::info!("SIGHUP: the config on disk is the one served");
                }
            }
        });
    }

    /// Watches the config's files: every `interval` the config is read again (with its
    /// includes, `mcp.json` and script files) and served when it differs from the one served
    /// and read the same twice in a row (an editor's save in several writes is not caught half
    /// way). A config that was refused is not tried again until it changes.
    pub fn watch(self: &Arc<Self>, interval: std::time::Duration) {
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut pending: Option<String> = None;
            loop {
                tokio::time::sleep(interval).await;
                let Some(me) = me.upgrade() else { return };
                let seen = key(&me.read());
                let served = me.running.lock().await.version.clone();
                let refused = me
                    .refused
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .map(|r| r.key.clone());
                if seen == served || refused.as_ref() == Some(&seen) {
                    pending = None;
                    continue;
                }
                if pending.as_ref() != Some(&seen) {
                    pending = Some(seen); // served when it reads the same next time
                    continue;
                }
                pending = None;
                let _ = me.reload(Trigger::Watch).await;
            }
        });
    }

    fn read(&self) -> Result<mcpflow_config::Draft, ConfigErrors> {
        self.loader().read(&self.args.config.config)
    }

    /// The loader with the options the server was started with.
    fn loader(&self) -> mcpflow_config::Loader<'static> {
        let loader = mcpflow_config::Loader::new();
        match &self.args.config.mcp {
            Some(mcp) => loader.mcp_json(mcp),
            None => loader,
        }
    }
}

impl Publish for Reloader {
    fn load(&self) -> Result<Loaded, ConfigErrors> {
        self.read()?.finish(Vec::new())
    }

    fn load_with_hooks(&self, text: &str) -> Result<Loaded, ConfigErrors> {
        self.loader()
            .hooks_text(text)
            .read(&self.args.config.config)?
            .finish(Vec::new())
    }

    fn reload(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        Box::pin(async move {
            match Reloader::reload(self, Trigger::Save).await? {
                Some(tools) => Ok(tools),
                // Saved the same text: what is served is already it.
                None => Ok(self
                    .running
                    .lock()
                    .await
                    .loaded
                    .config
                    .tools
                    .iter()
                    .map(|t| t.name.clone())
                    .collect()),
            }
        })
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
        watch_ms: args.watch_ms,
    }
}
