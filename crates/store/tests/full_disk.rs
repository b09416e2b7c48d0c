//! A SQLite store on a file system that fills up: the writes that meet "database or disk is
//! full" fail with that message, and the store works again by itself once space is freed (it
//! used to refuse every later write with "attempted to call begin_with at non-zero transaction
//! depth" until restarted).
//!
//! The file system is a real one: a small tmpfs mounted for the test (it needs root, which CI
//! and the development containers have). `PRAGMA max_page_count` would be the fallback, but it
//! is per connection and the pool opens its own, and only a real ENOSPC exercises the path
//! where SQLite rolls the transaction back by itself. Without the right to mount, the test
//! says so and does nothing.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{T0, new_run};
use mcpflow_store::{RecordRow, RunEnd, RunFilter, StoreError, open};
use serde_json::json;

/// A tmpfs of `size` mounted on a temporary directory, unmounted on drop (also on panic).
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!(
                "SKIPPED: cannot mount a tmpfs here (needs root); the full-disk behaviour is \
                 not tested in this environment"
            );
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Writes a file until the file system has no room left; returns its path.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).expect("filler file");
    let chunk = vec![0u8; 16 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
    path
}

/// A finished run whose one record is large enough to need new pages.
async fn save(store: &dyn mcpflow_store::Store, i: usize) -> Result<(), StoreError> {
    let id = format!("r{i:03}");
    let record = RecordRow {
        index: 0,
        node_id: "big".into(),
        node_type: "transform".into(),
        start_ms: 0.0,
        end_ms: 1.0,
        input: None,
        output: Some(json!("x".repeat(64 * 1024))),
        error: None,
        parent: None,
    };
    let end = RunEnd::Succeeded(json!({"i": i}));
    store
        .save_finished_run(&new_run(&id, "t", T0), &[record], &end, T0 + 1)
        .await
}

#[tokio::test]
async fn a_full_disk_fails_writes_clearly_and_the_store_recovers_when_space_returns() {
    let Some(fs) = Tmpfs::mount("3M") else { return };
    let url = format!("sqlite://{}/state.db", fs.path().display());
    let store = open(&url).await.expect("open on the tmpfs");
    save(&*store, 0).await.expect("a write while there is room");

    let filler = fill(fs.path());
    let mut failures = Vec::new();
    for i in 1..=12 {
        if let Err(e) = save(&*store, i).await {
            failures.push(e);
        }
    }
    assert!(
        !failures.is_empty(),
        "writes of 64 KiB on a full file system all succeeded"
    );
    for e in &failures {
        let msg = e.to_string();
        assert!(matches!(e, StoreError::Unavailable { .. }), "{e:?}");
        assert!(msg.contains("full"), "{msg}");
        assert!(msg.contains("free space"), "{msg}");
        assert!(!msg.contains("transaction depth"), "{msg}");
    }
    let saved_while_full = 12 - failures.len();

    // Space comes back: every write works again, in this process, without a restart.
    std::fs::remove_file(filler).expect("remove the filler");
    for i in 100..120 {
        save(&*store, i)
            .await
            .unwrap_or_else(|e| panic!("write {i} after space was freed: {e}"));
    }
    let runs = store
        .list_runs(&RunFilter {
            limit: 1000,
            ..RunFilter::default()
        })
        .await
        .expect("list");
    assert_eq!(runs.len(), 1 + saved_while_full + 20);
    store.close().await;
}
