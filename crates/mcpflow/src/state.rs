//! Where runs and sessions are kept, and the background upkeep of a serving process: lease
//! heartbeats, session expiry, marking runs of dead processes `interrupted` and restarting
//! the resumable ones.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use mcpflow_config::Loaded;
use mcpflow_engine::{Durability, Engine};
use mcpflow_store::{DEFAULT_SESSION_TTL_MS, Store, now_ms, redact_url};

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

/// A stable fingerprint of the config files: runs are pinned to it. FNV-1a (128 bits) over
/// the config file, the mcp.json and the `file:` scripts of script nodes (as loaded), as read:
/// no secret is interpolated into it. A changed script file is a changed config: a waiting run
/// must not resume into different code.
pub fn config_version(config: &Path, mcp: Option<&Path>, scripts: &[&str]) -> (String, String) {
    let source = std::fs::read_to_string(config).unwrap_or_default();
    let mcp_source = mcp
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    let mut hash: u128 = 0x6c62272e07bb014262b821756295c58d;
    let parts = [source.as_str(), mcp_source.as_str()]
        .into_iter()
        .chain(scripts.iter().copied());
    for (i, part) in parts.enumerate() {
        // A separator between parts, so moving text from one file to the next changes the hash.
        let separator: &[u8] = if i == 0 { &[] } else { &[0u8] };
        for b in separator.iter().chain(part.as_bytes()) {
            hash ^= u128::from(*b);
            hash = hash.wrapping_mul(0x0000000001000000000000000000013B);
        }
    }
    (format!("fnv128:{hash:032x}"), source)
}

/// The texts of every `file:` script the config loaded, in config order.
fn script_files(config: &mcpflow_config::Config) -> Vec<&str> {
    config
        .tools
        .iter()
        .flat_map(|tool| tool.nodes.iter())
        .filter_map(|node| match node {
            mcpflow_config::Node::Script(script) => script.loaded.as_ref(),
            _ => None,
        })
        .map(|file| file.text.as_str())
        .collect()
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
    mcp: Option<&Path>,
    owner: String,
) -> Result<Option<Arc<dyn Store>>, String> {
    let Some(url) = store_url(
        args,
        loaded.config.store.as_deref(),
        &loaded.base_dir,
        needs_store(engine),
    ) else {
        return Ok(None);
    };
    let store = open(&url).await?;
    let (version, source) = config_version(&loaded.path, mcp, &script_files(&loaded.config));
    store
        .save_config(&version, &source, now_ms())
        .await
        .map_err(|e| e.to_string())?;
    let sessions = loaded.config.sessions.unwrap_or_default();
    let ttl_ms = i64::try_from(sessions.ttl_seconds().saturating_mul(1000))
        .unwrap_or(DEFAULT_SESSION_TTL_MS);
    let durability = Durability {
        store: store.clone(),
        owner,
        config_version: version,
        session_ttl_ms: ttl_ms,
        max_sessions: sessions.max_count,
        lease_ms: Durability::DEFAULT_LEASE_MS,
    };
    tracing::info!(store = %redact_url(&url), backend = store.backend(), "keeping runs and sessions");
    if engine.attach_durability(durability).is_err() {
        return Err("the engine already has a store".into());
    }
    Ok(Some(store))
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

/// At start: marks `interrupted` the runs this replica (same owner) or a dead one left
/// running, and restarts those of resumable tools.
pub async fn recover(engine: &Engine) {
    let Some(d) = engine.durability() else { return };
    match d.store.mark_interrupted(Some(&d.owner), now_ms()).await {
        Ok(ids) => restart_resumable(engine, ids).await,
        Err(e) => tracing::warn!(error = %e, "could not mark interrupted runs"),
    }
}

async fn restart_resumable(engine: &Engine, ids: Vec<String>) {
    let Some(d) = engine.durability() else { return };
    if !ids.is_empty() {
        tracing::info!(count = ids.len(), "runs interrupted by a stopped process");
    }
    for id in ids {
        let resumable = matches!(d.store.get_run(&id).await, Ok(r) if r.resumable);
        if !resumable {
            continue;
        }
        let engine = engine.clone();
        tokio::spawn(async move {
            match engine.resume_interrupted(&id).await {
                Ok(run) => {
                    tracing::info!(run = %id, status = ?run.status, "interrupted run restarted")
                }
                Err(e) => tracing::warn!(run = %id, error = %e, "interrupted run not restarted"),
            }
        });
    }
}

/// For `serve`: attaches the store (if any), recovers interrupted runs and starts the upkeep.
pub async fn start(
    engine: &Engine,
    loaded: &Loaded,
    args: &crate::cli::ServeArgs,
) -> Result<Option<tokio::task::JoinHandle<()>>, String> {
    let owner = owner(args.instance.as_deref());
    if attach(
        engine,
        loaded,
        &args.state,
        args.config.mcp.as_deref(),
        owner,
    )
    .await?
    .is_none()
    {
        return Ok(None);
    }
    recover(engine).await;
    Ok(spawn_upkeep(engine))
}

/// The background upkeep of a serving process, until the returned task is aborted.
pub fn spawn_upkeep(engine: &Engine) -> Option<tokio::task::JoinHandle<()>> {
    let d = engine.durability()?;
    // Expiry is checked at continue time too; the sweep only turns lapsed sessions into
    // tombstones, so a tick of a fraction of the TTL (at most 5 s) is plenty.
    let tick = Duration::from_millis(
        u64::try_from(d.session_ttl_ms / 2)
            .unwrap_or(5000)
            .clamp(250, 5000),
    );
    let engine = engine.clone();
    Some(tokio::spawn(async move {
        let mut timer = tokio::time::interval(tick);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            timer.tick().await;
            let Some(d) = engine.durability() else { return };
            if let Err(e) = d.store.heartbeat(&d.lease()).await {
                tracing::warn!(error = %e, "could not renew run leases");
            }
            match d.store.expire_sessions(now_ms()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(count = n, "sessions expired"),
                Err(e) => tracing::warn!(error = %e, "could not expire sessions"),
            }
            match d.store.mark_interrupted(None, now_ms()).await {
                Ok(ids) => restart_resumable(&engine, ids).await,
                Err(e) => tracing::warn!(error = %e, "could not mark interrupted runs"),
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::config_version;

    #[test]
    fn a_changed_script_file_is_a_changed_config() {
        let dir = std::env::temp_dir().join(format!("mcpflow-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let config = dir.join("config.yaml");
        std::fs::write(&config, "tools: []\n").expect("write config");

        let (plain, source) = config_version(&config, None, &[]);
        assert_eq!(source, "tools: []\n");
        assert_eq!(plain, config_version(&config, None, &[]).0, "stable");
        let (one, _) = config_version(&config, None, &["(x) => x"]);
        let (other, _) = config_version(&config, None, &["(x) => x + 1"]);
        assert_ne!(plain, one);
        assert_ne!(one, other);
        // Text moved between two scripts is still a different set of files.
        let (split, _) = config_version(&config, None, &["ab", "c"]);
        let (moved, _) = config_version(&config, None, &["a", "bc"]);
        assert_ne!(split, moved);
        std::fs::remove_dir_all(&dir).ok();
    }
}
