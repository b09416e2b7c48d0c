//! Where runs and sessions are kept: which store to open, opening it, and attaching it to the
//! engine. The durability itself (commits, sessions, the background upkeep) is the engine's
//! (`mcpflow_engine::Durability`); this module only wires it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use mcpflow_config::Loaded;
use mcpflow_config::StoreConfig;
use mcpflow_engine::{Durability, Engine};
use mcpflow_store::{Store, now_ms, redact_url};

/// `--store` / `--state`, on `serve`, `run`, `runs` and `sessions`.
#[derive(Args, Debug, Clone, Default)]
pub struct StateArgs {
    /// Where runs and sessions are kept: `sqlite://path` or `postgres://user@host/db?schema=NAME`
    /// (wins over the config's `store:`).
    #[arg(long, value_name = "URL", conflicts_with = "state", global = true)]
    pub store: Option<String>,
    /// A SQLite file for runs and sessions (default: `.mcpflow/state.db` next to the config).
    #[arg(long, value_name = "PATH", global = true)]
    pub state: Option<PathBuf>,
}

/// The file the state lives in when nothing else is said.
pub fn default_state_file(base_dir: &Path) -> PathBuf {
    base_dir.join(".mcpflow").join("state.db")
}

/// The store URL: `--store`, else `--state`, else the config's `store:` (a relative SQLite
/// path is relative to the config's directory), else the default file when `needed`.
pub fn store_url(
    args: &StateArgs,
    config_store: Option<&str>,
    base_dir: &Path,
    needed: bool,
) -> Option<String> {
    if let Some(url) = &args.store {
        return Some(url.clone());
    }
    if let Some(path) = &args.state {
        return Some(sqlite_url(path));
    }
    if let Some(url) = config_store {
        return Some(match url.strip_prefix("sqlite://") {
            Some(rest) if !rest.starts_with('/') && rest != ":memory:" => {
                sqlite_url(&base_dir.join(rest))
            }
            _ => url.to_owned(),
        });
    }
    needed.then(|| sqlite_url(&default_state_file(base_dir)))
}

fn sqlite_url(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    format!("sqlite://{}", abs.display())
}

/// Opens the store, creating the directory of a SQLite file first.
pub async fn open(url: &str) -> Result<Arc<dyn Store>, String> {
    if let Some(rest) = url.strip_prefix("sqlite://")
        && rest != ":memory:"
        && let Some(dir) = Path::new(rest).parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the state directory {}: {e}", dir.display()))?;
    }
    mcpflow_store::open(url).await.map_err(|e| e.to_string())
}

/// Whether a config needs a store: a tool can wait or is resumable.
pub fn needs_store(engine: &Engine) -> bool {
    engine.graphs().any(|g| g.can_wait() || g.is_resumable())
}

/// Opens the store (if the config needs one or one is named), keeps the config source its
/// runs are pinned to, and attaches it to the engine. `Ok(None)`: nothing to keep.
pub async fn attach(
    engine: &Engine,
    loaded: &Loaded,
    args: &StateArgs,
    mcp_json: Option<&Path>,
    owner: String,
) -> Result<Option<Arc<dyn Store>>, String> {
    let Some(url) = store_url(
        args,
        loaded.config.store.as_ref().and_then(|s| s.url()),
        &loaded.base_dir,
        needs_store(engine),
    ) else {
        return Ok(None);
    };
    let store = open(&url).await?;
    tracing::info!(store = %redact_url(&url), backend = store.backend(), "keeping runs and sessions");
    pin(engine, loaded, store.clone(), mcp_json, owner).await?;
    Ok(Some(store))
}

/// Keeps `loaded`'s files in `store` under its version, and attaches the store to `engine`,
/// whose runs are then pinned to that version; runs of other versions go on on theirs,
/// compiled again from the store when this process does not hold them (versioned sessions).
pub async fn pin(
    engine: &Engine,
    loaded: &Loaded,
    store: Arc<dyn Store>,
    mcp_json: Option<&Path>,
    owner: String,
) -> Result<(), String> {
    let version = mcpflow_config::version(&loaded.config);
    // The text as written (no secret is interpolated into it), for `mcpflow runs show`.
    let source = mcpflow_config::read_text(&loaded.path, mcpflow_config::MAX_FILE_BYTES as u64)
        .unwrap_or_default();
    let files = serde_json::to_string(&crate::versions::bundle(loaded, mcp_json))
        .map_err(|e| format!("cannot keep the config's files: {e}"))?;
    store
        .save_config(&version, &source, Some(&files), now_ms())
        .await
        .map_err(|e| e.to_string())?;
    let sessions = loaded.config.sessions.unwrap_or_default();
    let retention = loaded
        .config
        .store
        .as_ref()
        .map(|s| s.retention())
        .unwrap_or_default();
    let lease = lease_of(loaded);
    let versions = crate::versions::StoredVersions::new(
        store.clone(),
        owner.clone(),
        engine.pool().clone(),
        mcp_json.map(Path::to_path_buf),
        lease,
    );
    let durability = Durability::new(store, owner, version, sessions)
        .with_retention(retention)
        .with_lease(lease)
        .with_versions(Arc::new(versions));
    if engine.attach_durability(durability).is_err() {
        return Err("the engine already has a store".into());
    }
    Ok(())
}

/// How long this process's claim on the runs it executes lasts (`store.leaseSeconds`).
fn lease_of(loaded: &Loaded) -> Duration {
    let seconds = match &loaded.config.store {
        Some(store) => store.lease_seconds(),
        None => StoreConfig::DEFAULT_LEASE_SECONDS,
    };
    Duration::from_secs(seconds)
}

/// This process's name in leases: `--instance`, else host and pid (a restarted process then
/// takes over its predecessor's runs once their lease lapses).
pub fn owner(instance: Option<&str>) -> String {
    if let Some(name) = instance {
        return name.to_owned();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "mcpflow".into());
    format!("{host}:{}", std::process::id())
}

/// For `serve`: attaches the store (if any), recovers interrupted runs and starts the upkeep.
pub async fn start(
    engine: &Engine,
    loaded: &Loaded,
    args: &crate::cli::ServeArgs,
    owner: String,
) -> Result<Option<tokio::task::JoinHandle<()>>, String> {
    let mcp_json = args.config.mcp.as_deref();
    if attach(engine, loaded, &args.state, mcp_json, owner)
        .await?
        .is_none()
    {
        return Ok(None);
    }
    engine.recover().await;
    Ok(engine.spawn_upkeep())
}
