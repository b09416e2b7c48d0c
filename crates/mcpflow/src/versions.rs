//! Versioned sessions, the binary's side: every config version runs are pinned to is kept
//! whole in the store (the config file, its `include:`d files and its `file:` scripts, by
//! the version's hash), and compiled again from there when a run of it must go on in a
//! process that does not hold it (after a restart, or on another replica during a rollout).
//!
//! The files are written to a temporary directory with their relative layout and loaded the
//! one way every config is, so includes (`DIR/*.yaml` too) and scripts resolve as they did.
//! An `mcp.json` is not kept (it may hold secrets): this process's own is merged, and the
//! upstreams a compiled old version calls are this process's, as after a reload.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mcpflow_config::Loaded;
use mcpflow_config::model::Node;
use mcpflow_engine::{Durability, Engine, Versions};
use mcpflow_store::Store;
use mcpflow_upstream::UpstreamPool;
use serde::{Deserialize, Serialize};

/// What the store keeps of a config version, as JSON: the config file's path and every file,
/// relative to the deepest directory holding them all.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Bundle {
    pub config: String,
    pub files: BTreeMap<String, String>,
}

/// The files `loaded` was read from, without the `mcp.json` merged into it.
pub fn bundle(loaded: &Loaded, mcp_json: Option<&Path>) -> Bundle {
    let skip = mcp_json.map(normal);
    let mut files: Vec<(PathBuf, &str)> = Vec::new();
    let mut add = |path: PathBuf, text| {
        if Some(&path) != skip.as_ref() && !files.iter().any(|(p, _)| *p == path) {
            files.push((path, text));
        }
    };
    for (name, text) in loaded.sources.files() {
        add(normal(Path::new(name)), text);
    }
    // Scripts outside the config's directory are not in the source map (never quoted in a
    // message) but are part of the version all the same.
    for node in loaded.config.tools.iter().flat_map(|t| t.nodes.iter()) {
        if let Node::Script(script) = node
            && let Some(file) = &script.loaded
        {
            add(normal(&file.path), &file.text);
        }
    }
    let config = normal(&loaded.path);
    let root = files
        .iter()
        .map(|(p, _)| p.parent().unwrap_or(Path::new("/")).to_path_buf())
        .chain(config.parent().map(Path::to_path_buf))
        .reduce(|a, b| common(&a, &b))
        .unwrap_or_default();
    let relative = |p: &Path| {
        p.strip_prefix(&root)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    };
    Bundle {
        config: relative(&config),
        files: files
            .iter()
            .map(|(p, text)| (relative(p), (*text).to_owned()))
            .collect(),
    }
}

/// `path` made absolute, `.` and `..` resolved in the text (a file named through `../x`
/// keeps its place relative to the others).
fn normal(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn common(a: &Path, b: &Path) -> PathBuf {
    a.components()
        .zip(b.components())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

/// A path of a stored bundle as a relative path that stays inside the directory it is
/// written to, or `None`.
fn inside(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    (plain && !name.is_empty()).then(|| path.to_path_buf())
}

/// Compiles stored config versions for the engine ([`Versions`]), on this process's upstream
/// pool, and keeps the last few compiled.
pub struct StoredVersions {
    store: Arc<dyn Store>,
    owner: String,
    pool: UpstreamPool,
    mcp_json: Option<PathBuf>,
    /// This process's lease: a run is this process's for as long whatever version it runs on.
    lease: Duration,
    /// Newest last; one compile at a time, so concurrent continues of one version share it.
    compiled: tokio::sync::Mutex<Vec<(String, Engine)>>,
}

impl std::fmt::Debug for StoredVersions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredVersions")
            .field("store", &self.store.url())
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl StoredVersions {
    pub fn new(
        store: Arc<dyn Store>,
        owner: String,
        pool: UpstreamPool,
        mcp_json: Option<PathBuf>,
        lease: Duration,
    ) -> StoredVersions {
        StoredVersions {
            store,
            owner,
            pool,
            mcp_json,
            lease,
            compiled: tokio::sync::Mutex::new(Vec::new()),
        }
    }

    async fn compile(&self, version: &str) -> Result<Engine, String> {
        let files = self
            .store
            .get_config_files(version)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the store keeps only its main file (it was stored by an older mcpflow)")?;
        let bundle: Bundle = serde_json::from_str(&files)
            .map_err(|e| format!("its stored files do not read: {e}"))?;
        let pool = self.pool.clone();
        let mcp_json = self.mcp_json.clone();
        // Files written and read, and every expression and script compiled: off the runtime.
        let (loaded, engine) =
            tokio::task::spawn_blocking(move || load_bundle(&bundle, mcp_json.as_deref(), pool))
                .await
                .map_err(|e| format!("its compile stopped: {e}"))??;
        let sessions = loaded.config.sessions.unwrap_or_default();
        let durability = Durability::new(
            self.store.clone(),
            self.owner.clone(),
            version.to_owned(),
            sessions,
        )
        .with_lease(self.lease);
        if engine.attach_durability(durability).is_err() {
            return Err("the compiled engine already had a store".into());
        }
        tracing::info!(version, "config version compiled again from the store");
        Ok(engine)
    }
}

/// Writes `bundle` to a temporary directory and loads and compiles it there.
fn load_bundle(
    bundle: &Bundle,
    mcp_json: Option<&Path>,
    pool: UpstreamPool,
) -> Result<(Loaded, Engine), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
    for (name, text) in &bundle.files {
        let rel = inside(name).ok_or_else(|| format!("it names a file outside itself: {name}"))?;
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot write {name}: {e}"))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    let config = inside(&bundle.config)
        .ok_or_else(|| format!("its config is outside itself: {}", bundle.config))?;
    let mut loader = mcpflow_config::Loader::new();
    if let Some(mcp) = mcp_json {
        loader = loader.mcp_json(mcp);
    }
    loader
        .read(&dir.path().join(config))
        .and_then(|draft| {
            draft.compile(|config, _| Engine::new(config, pool), mcpflow_engine::check)
        })
        .map_err(|e| format!("it no longer loads: {e}"))
}

impl Versions for StoredVersions {
    fn engine<'a>(&'a self, version: &'a str) -> BoxFuture<'a, Result<Engine, String>> {
        Box::pin(async move {
            let mut compiled = self.compiled.lock().await;
            if let Some((_, engine)) = compiled.iter().find(|(v, _)| v == version) {
                return Ok(engine.clone());
            }
            let engine = self.compile(version).await?;
            compiled.push((version.to_owned(), engine.clone()));
            let excess = compiled
                .len()
                .saturating_sub(mcpflow_engine::MAX_PREDECESSORS);
            compiled.drain(..excess);
            Ok(engine)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bundle_keeps_included_files_and_scripts_in_their_places() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("cfg/tools")).expect("mkdir");
        std::fs::create_dir_all(root.join("shared")).expect("mkdir");
        std::fs::write(
            root.join("cfg/graph.yaml"),
            "version: \"1.0\"\nserver: {name: b, version: \"1.0.0\"}\ninclude: [tools/*.yaml]\ntools: []\n",
        )
        .expect("write");
        std::fs::write(
            root.join("cfg/tools/s.yaml"),
            "tools:\n  - name: s\n    nodes:\n      - {id: entry, type: entry, next: s}\n      - {id: s, type: script, file: ../shared/s.js, fileOutsideConfigDir: true, next: exit}\n      - {id: exit, type: exit}\n",
        )
        .expect("write");
        std::fs::write(
            root.join("shared/s.js"),
            "export default function (x) { return 7; }\n",
        )
        .expect("write");
        let loaded = mcpflow_config::load(&root.join("cfg/graph.yaml"), None).expect("loads");
        let b = bundle(&loaded, None);
        assert_eq!(b.config, "cfg/graph.yaml");
        let names: Vec<&str> = b.files.keys().map(String::as_str).collect();
        assert_eq!(names, ["cfg/graph.yaml", "cfg/tools/s.yaml", "shared/s.js"]);
        // Loaded again from the bundle alone, it is the same version.
        let pool = UpstreamPool::new(Default::default(), root.into());
        let (again, _) = load_bundle(&b, None, pool).expect("the bundle loads");
        assert_eq!(
            mcpflow_config::version(&again.config),
            mcpflow_config::version(&loaded.config)
        );
        assert!(inside("../x").is_none() && inside("/etc/passwd").is_none());
    }
}
