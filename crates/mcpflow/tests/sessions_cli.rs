//! `mcpflow runs list|show|stats` and `mcpflow sessions list|show|cancel` read the store that a
//! real `mcpflow serve` wrote (SQLite in a temp dir, and a schema of its own on the PostgreSQL
//! server, dropped afterwards), as JSON and as a table; and `sessions: {maxCount}` is enforced.

mod common;
mod sessions_support;

use std::process::Output;

use common::{cli, stderr, stdout_json};
use serde_json::{Value, json};
use sessions_support::*;

const UNKNOWN: &str = "0123456789abcdef0123456789abcdef";

/// `mcpflow ARGS --store URL`, which must succeed.
fn ok(args: &[&str], store: &str) -> Output {
    let out = cli(&[args, &["--store", store][..]].concat(), None);
    assert!(
        out.status.success(),
        "mcpflow {args:?} failed: {}",
        stderr(&out)
    );
    out
}

/// `mcpflow ARGS --store URL`, which must fail; its stderr.
fn refused(args: &[&str], store: &str) -> String {
    let out = cli(&[args, &["--store", store][..]].concat(), None);
    assert!(
        !out.status.success(),
        "mcpflow {args:?} should have failed; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.is_empty(), "an error prints nothing on stdout");
    stderr(&out)
}

fn table(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The table row that names `id`.
fn row<'a>(table: &'a str, id: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id))
        .unwrap_or_else(|| panic!("no row for {id} in:\n{table}"))
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap_or_else(|| panic!("a JSON array: {list}"))
        .iter()
        .filter_map(|v| v["id"].as_str())
        .collect()
}

fn field<'a>(w: &'a Value, name: &str) -> &'a str {
    w[name]
        .as_str()
        .unwrap_or_else(|| panic!("no {name} in {w}"))
}

async fn runs_and_sessions_cli(store: TestStore) {
    let url = store.url.clone();
    let config = store.config(&order_config(3600));
    let s = serve(&config, &url, "cli").await;
    let c = &s.client;

    // Two sessions left waiting and one run finished through its session.
    let a = start(c, "approve", json!({"n": 1})).await;
    let b = start(c, "approve", json!({"n": 2})).await;
    let f = start(c, "approve", json!({"n": 3})).await;
    let done = structured(&cont(c, "approve", field(&f, "sessionId"), json!({"ok": true})).await);
    assert_eq!(done, json!({"n": 3, "ok": true}));
    let (sa, sb, sf) = (
        field(&a, "sessionId"),
        field(&b, "sessionId"),
        field(&f, "sessionId"),
    );
    let (ra, rf) = (field(&a, "runId"), field(&f, "runId"));

    // sessions list
    let all = stdout_json(&ok(&["sessions", "list", "--json"], &url));
    for id in [sa, sb, sf] {
        assert!(ids(&all).contains(&id), "{id} missing from {all}");
    }
    let status_of = |list: &Value, id: &str| {
        list.as_array()
            .and_then(|l| l.iter().find(|s| s["id"] == id))
            .map(|s| s["status"].clone())
    };
    assert_eq!(status_of(&all, sa), Some(json!("waiting")));
    assert_eq!(status_of(&all, sf), Some(json!("completed")));
    let waiting = stdout_json(&ok(
        &["sessions", "list", "--status", "waiting", "--json"],
        &url,
    ));
    let mut w = ids(&waiting);
    w.sort_unstable();
    let mut expected = vec![sa, sb];
    expected.sort_unstable();
    assert_eq!(w, expected, "only the waiting ones: {waiting}");
    let t = table(&ok(&["sessions", "list"], &url));
    assert!(t.starts_with("ID"), "a header first:\n{t}");
    for word in ["TOOL", "STATUS", "AT NODE", "EXPIRES IN"] {
        assert!(t.lines().next().unwrap_or_default().contains(word), "{t}");
    }
    let line = row(&t, sa);
    assert!(
        line.contains("approve") && line.contains("waiting") && line.contains("ask"),
        "{line}"
    );
    assert!(row(&t, sf).contains("completed"), "{t}");

    // sessions show
    let shown = stdout_json(&ok(&["sessions", "show", sa, "--json"], &url));
    assert_eq!(shown["id"], sa);
    assert_eq!(shown["runId"], ra);
    assert_eq!(shown["tool"], "approve");
    assert_eq!(shown["status"], "waiting");
    assert_eq!(shown["nodeId"], "ask");
    assert_eq!(shown["inputSchema"]["required"], json!(["ok"]));
    let t = table(&ok(&["sessions", "show", sa], &url));
    for part in [
        format!("session {sa}"),
        format!("run {ra}"),
        "status waiting".into(),
        "at node ask".into(),
        "inputSchema:".into(),
    ] {
        assert!(t.contains(&part), "{part:?} missing from:\n{t}");
    }

    // runs list
    let runs = stdout_json(&ok(&["runs", "list", "--json"], &url));
    for id in [ra, rf] {
        assert!(ids(&runs).contains(&id), "{id} missing from {runs}");
    }
    assert_eq!(status_of(&runs, rf), Some(json!("succeeded")));
    assert_eq!(status_of(&runs, ra), Some(json!("waiting")));
    let t = table(&ok(&["runs", "list"], &url));
    assert!(t.starts_with("ID"), "{t}");
    assert!(row(&t, rf).contains("succeeded"), "{t}");
    assert!(row(&t, ra).contains("waiting"), "{t}");
    let succeeded = stdout_json(&ok(
        &["runs", "list", "--status", "succeeded", "--json"],
        &url,
    ));
    assert_eq!(ids(&succeeded), vec![rf], "{succeeded}");

    // runs show: the run and its history, the client's input recorded as the await's output.
    let shown = stdout_json(&ok(&["runs", "show", rf, "--json"], &url));
    assert_eq!(shown["run"]["id"], rf);
    assert_eq!(shown["run"]["status"], "succeeded");
    assert_eq!(shown["run"]["args"], json!({"n": 3}));
    assert_eq!(shown["run"]["result"], json!({"n": 3, "ok": true}));
    let history = shown["history"].as_array().expect("history is an array");
    let ask = history
        .iter()
        .find(|r| r["nodeId"] == "ask")
        .unwrap_or_else(|| panic!("the await is in the history: {shown}"));
    assert_eq!(ask["output"], json!({"ok": true}), "{shown}");
    let t = table(&ok(&["runs", "show", rf], &url));
    assert!(t.contains(&format!("run {rf}")), "{t}");
    assert!(t.contains("status succeeded"), "{t}");
    assert!(t.contains("result: "), "{t}");
    assert!(
        t.lines()
            .any(|l| l.contains("ask") && l.contains("await") && l.contains("\"ok\":true")),
        "the await's row:\n{t}"
    );

    // runs stats
    let stats = stdout_json(&ok(&["runs", "stats", "--json"], &url));
    let count = |status: &str| {
        stats["runs"]
            .as_array()
            .and_then(|rows| {
                rows.iter()
                    .find(|r| r["tool"] == "approve" && r["status"] == status)
            })
            .map(|r| r["count"].clone())
    };
    assert_eq!(count("succeeded"), Some(json!(1)), "{stats}");
    assert_eq!(count("waiting"), Some(json!(2)), "{stats}");
    assert_eq!(stats["sessions"]["waiting"], 2, "{stats}");
    assert_eq!(stats["sessions"]["completed"], 1, "{stats}");
    let t = table(&ok(&["runs", "stats"], &url));
    assert!(t.starts_with("TOOL"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("approve") && l.contains("succeeded")),
        "{t}"
    );
    assert!(t.contains("store: "), "the footprint line:\n{t}");

    // sessions cancel: the session and its run end; a later continue is refused clearly.
    let t = table(&ok(&["sessions", "cancel", sa], &url));
    assert!(
        t.contains(&format!("session {sa} cancelled (run {ra})")),
        "{t}"
    );
    let shown = stdout_json(&ok(&["sessions", "show", sa, "--json"], &url));
    assert_eq!(shown["status"], "cancelled");
    let run = stdout_json(&ok(&["runs", "show", ra, "--json"], &url));
    assert_eq!(run["run"]["status"], "cancelled");
    let after = error_text(&cont(c, "approve", sa, json!({"ok": true})).await);
    assert!(after.contains("has ended (cancelled)"), "{after}");
    let again = refused(&["sessions", "cancel", sa], &url);
    assert!(again.contains("already ended (cancelled)"), "{again}");
    let cancelled = stdout_json(&ok(&["sessions", "cancel", sb, "--json"], &url));
    assert_eq!(cancelled["id"], sb);
    assert_eq!(cancelled["status"], "cancelled");
    let waiting = stdout_json(&ok(
        &["sessions", "list", "--status", "waiting", "--json"],
        &url,
    ));
    assert_eq!(waiting, json!([]), "{waiting}");

    // Unknown ids: a clear error and a failing exit code.
    for args in [
        ["sessions", "show", UNKNOWN],
        ["sessions", "cancel", UNKNOWN],
        ["runs", "show", UNKNOWN],
    ] {
        let err = refused(&args, &url);
        assert!(err.contains(&format!("with id \"{UNKNOWN}\"")), "{err}");
        assert!(
            err.contains("no session") || err.contains("no run"),
            "{err}"
        );
    }
    let err = refused(&["sessions", "list", "--status", "asleep"], &url);
    assert!(err.contains("asleep"), "{err}");
    s.client.cancel().await.ok();
}

#[tokio::test]
async fn runs_and_sessions_cli_sqlite() {
    runs_and_sessions_cli(TestStore::sqlite()).await;
}

#[tokio::test]
async fn runs_and_sessions_cli_postgres() {
    runs_and_sessions_cli(TestStore::postgres().await).await;
}

/// Without `--store`: the config's default store (`.mcpflow/state.db` next to it) and `--state`.
#[tokio::test]
async fn the_cli_finds_the_default_sqlite_store_of_a_config() {
    let store = TestStore::sqlite();
    let config = store.config(&order_config(3600));
    let file = store.dir.path().join(".mcpflow").join("state.db");
    let s = serve(&config, &format!("sqlite://{}", file.display()), "a").await;
    let w = start(&s.client, "approve", json!({"n": 1})).await;
    let id = field(&w, "sessionId");
    let config_arg = config.to_string_lossy().into_owned();
    let by_config = cli(
        &["sessions", "list", "--config", &config_arg, "--json"],
        None,
    );
    assert!(by_config.status.success(), "{}", stderr(&by_config));
    assert_eq!(ids(&stdout_json(&by_config)), vec![id]);
    let file_arg = file.to_string_lossy().into_owned();
    let by_state = cli(
        &["sessions", "show", id, "--state", &file_arg, "--json"],
        None,
    );
    assert!(by_state.status.success(), "{}", stderr(&by_state));
    assert_eq!(stdout_json(&by_state)["status"], "waiting");

    let missing = store.dir.path().join("nowhere.db");
    let out = cli(
        &["runs", "list", "--state", &missing.to_string_lossy()],
        None,
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no state at"), "{}", stderr(&out));
    s.client.cancel().await.ok();
}

/// `sessions: {maxCount: 2}`: a third live session is refused with a clear error (and its run
/// ends failed, not left hanging); once one is cancelled there is room again.
async fn max_count_is_enforced(store: TestStore) {
    let url = store.url.clone();
    let yaml = order_config(3600).replace("{ttlSeconds: 3600}", "{ttlSeconds: 3600, maxCount: 2}");
    assert!(yaml.contains("maxCount: 2"), "the config sets the limit");
    let config = store.config(&yaml);
    let s = serve(&config, &url, "a").await;
    let c = &s.client;
    let first = start(c, "approve", json!({"n": 1})).await;
    start(c, "order", json!({"item": "tea"})).await;
    let third = error_text(&common::call(c, "approve", json!({"n": 3})).await);
    assert!(third.contains("could not be suspended"), "{third}");
    assert!(
        third.contains("already holds 2 live sessions, the configured maximum"),
        "{third}"
    );
    let waiting = stdout_json(&ok(
        &["sessions", "list", "--status", "waiting", "--json"],
        &url,
    ));
    assert_eq!(ids(&waiting).len(), 2, "{waiting}");
    let failed = stdout_json(&ok(&["runs", "list", "--status", "failed", "--json"], &url));
    assert_eq!(
        ids(&failed).len(),
        1,
        "the refused run ended failed: {failed}"
    );

    ok(&["sessions", "cancel", field(&first, "sessionId")], &url);
    start(c, "approve", json!({"n": 4})).await;
    s.client.cancel().await.ok();
}

#[tokio::test]
async fn max_count_is_enforced_sqlite() {
    max_count_is_enforced(TestStore::sqlite()).await;
}

#[tokio::test]
async fn max_count_is_enforced_postgres() {
    max_count_is_enforced(TestStore::postgres().await).await;
}
