//! Versioned sessions (issue #19): a session that waits across a config change goes on on the
//! config version it started on — after a reload (the engine it started on is still in
//! memory) and after a restart (compiled again from the files the store keeps of it: the
//! config, an `include:`d file and a `file:` script, none of them on disk as they were any
//! more). On SQLite and on PostgreSQL.

mod common;
mod sessions_support;

use std::path::Path;
use std::time::Duration;

use common::{call, connect};
use serde_json::{Value, json};
use sessions_support::{TestStore, cont, start, structured};

const CONFIG: &str = r#"
version: "1.0"
server: {name: versioned, version: "1.0.0"}
include: [tools/*.yaml]
tools:
  - name: era
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: say}
      - {id: say, type: script, file: era.js, next: exit}
      - {id: exit, type: exit}
"#;

/// The waiting tool, in an included file; `ERA` marks the graph a run finished on.
const APPROVE: &str = r#"
tools:
  - name: approve
    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    nodes:
      - {id: start, type: entry, next: ask}
      - id: ask
        type: await
        message: "Approve?"
        inputSchema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
        next: done
      - id: done
        type: transform
        transform: {expr: "{'n': $.start.n, 'ok': $.ask.ok, 'graph': ERA}"}
        next: stamp
      - {id: stamp, type: script, file: era.js, input: {expr: "$.done"}, next: finish}
      - {id: finish, type: exit}
"#;

/// Writes era `n` of the config: the included tool's graph and the script both say `n`.
fn write_era(dir: &Path, n: u32) {
    std::fs::create_dir_all(dir.join("tools")).expect("mkdir tools");
    let files = [
        ("graph.yaml", CONFIG.to_owned()),
        ("tools/approve.yaml", APPROVE.replace("ERA", &n.to_string())),
        (
            "era.js",
            format!(
                "export default function (x) {{ return Object.assign({{}}, x ?? {{}}, {{script: {n}}}); }}\n"
            ),
        ),
    ];
    for (name, text) in files {
        // Written whole and renamed into place, as editors save.
        let path = dir.join(name);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, &path).expect("rename");
    }
}

async fn serve(dir: &Path, store: &TestStore) -> common::Client {
    let config = dir.join("graph.yaml");
    connect(
        &[
            "serve",
            config.to_str().expect("utf-8"),
            "--store",
            &store.url,
            "--instance",
            "versioned",
            "--watch-ms",
            "100",
        ],
        None,
    )
    .await
}

/// The era the server serves now (the `era` tool's script says it).
async fn served_era(client: &common::Client) -> Value {
    structured(&call(client, "era", json!({})).await)["script"].clone()
}

async fn session(client: &common::Client, n: i64) -> String {
    let w = start(client, "approve", json!({"n": n})).await;
    w["sessionId"].as_str().expect("a session id").to_owned()
}

async fn finish(client: &common::Client, id: &str) -> Value {
    structured(&cont(client, "approve", id, json!({"ok": true})).await)
}

async fn across_reload_and_restart(store: TestStore) {
    let dir = store.dir.path().join("cfg");
    write_era(&dir, 1);
    let client = serve(&dir, &store).await;
    assert_eq!(served_era(&client).await, 1);
    let first = session(&client, 1).await;

    // A reload: the included file and the script change on disk.
    write_era(&dir, 2);
    let mut era = Value::Null;
    for _ in 0..200 {
        era = served_era(&client).await;
        if era == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(era, 2, "the edited config is served");
    let second = session(&client, 2).await;
    assert_eq!(
        finish(&client, &first).await,
        json!({"n": 1, "ok": true, "graph": 1, "script": 1}),
        "a session started before the reload ends on its old graph"
    );
    client.cancel().await.ok();

    // A restart on yet another config: era 2 exists nowhere but in the store.
    write_era(&dir, 3);
    let client = serve(&dir, &store).await;
    assert_eq!(served_era(&client).await, 3);
    let third = session(&client, 3).await;
    assert_eq!(
        finish(&client, &second).await,
        json!({"n": 2, "ok": true, "graph": 2, "script": 2}),
        "a session started before the restart ends on the graph it started on"
    );
    assert_eq!(
        finish(&client, &third).await,
        json!({"n": 3, "ok": true, "graph": 3, "script": 3})
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn a_session_ends_on_its_own_version_across_reload_and_restart_sqlite() {
    across_reload_and_restart(TestStore::sqlite()).await;
}

#[tokio::test]
async fn a_session_ends_on_its_own_version_across_reload_and_restart_postgres() {
    across_reload_and_restart(TestStore::postgres().await).await;
}
