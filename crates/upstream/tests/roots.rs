//! mcpflow answers its upstreams' `roots/list` as a client itself when no client's call is
//! there to relay it to: with the server's configured `roots` (none by default). Shown on the
//! real `@modelcontextprotocol/server-filesystem`, which asks for roots as soon as it starts
//! and replaces its allowed directories with any it is given. Skipped only without `npx`.

mod common;

use std::time::Duration;

use common::args;
use serde_json::json;

fn npx_available() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("npx").is_file()))
}

/// What server-filesystem says its allowed directories are, once it has applied the roots
/// it asked for at its start (the answer arrives a little after `initialize`).
async fn allowed(pool: &mcpflow_upstream::UpstreamPool, expect: &str) -> String {
    let mut text = String::new();
    for _ in 0..100 {
        let result = pool
            .call_tool("fs", "list_allowed_directories", args(json!({})))
            .await
            .expect("list_allowed_directories");
        text = result.content[0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if text.contains(expect) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    text
}

#[tokio::test]
async fn configured_roots_are_what_server_filesystem_is_given() {
    if !npx_available() {
        eprintln!("SKIPPED: `npx` is not on PATH; install Node.js to run this test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let wide = dir.join("wide");
    let narrow = wide.join("narrow");
    std::fs::create_dir_all(&narrow).unwrap();
    let wide_s = wide.to_str().unwrap();

    // `roots` relative to the config's directory: the server is narrowed to it.
    let server = common::server(json!({
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-filesystem", wide_s],
        "roots": ["wide/narrow"],
    }));
    let pool = common::pool_in(vec![("fs", server)], dir.clone(), Duration::from_secs(180));
    let text = allowed(&pool, "narrow").await;
    assert!(text.contains(narrow.to_str().unwrap()), "{text}");
    pool.shutdown().await;

    // None configured: an empty answer, and the server keeps the directory of its arguments.
    let server = common::server(json!({
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-filesystem", wide_s],
    }));
    let pool = common::pool_in(vec![("fs", server)], dir.clone(), Duration::from_secs(180));
    let text = allowed(&pool, wide_s).await;
    assert!(text.contains(wide_s), "{text}");
    let tail = pool.stderr_tail("fs").unwrap_or_default();
    assert!(
        !tail.contains("Failed to request"),
        "the roots request failed: {tail}"
    );
    pool.shutdown().await;
}
