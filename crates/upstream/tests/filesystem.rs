//! Against a real third-party server: `@modelcontextprotocol/server-filesystem` from npm, which
//! speaks 2025-11-25 or older. Skipped, with a message, only where `npx` is not installed.

mod common;

use std::time::Duration;

use common::{alive, args};
use serde_json::json;

fn npx_available() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("npx").is_file()))
}

#[tokio::test]
async fn lists_a_directory_through_server_filesystem() {
    if !npx_available() {
        eprintln!("SKIPPED: `npx` is not on PATH; install Node.js to run this test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let root = root.to_str().unwrap();

    let server = common::server(json!({
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-filesystem", root],
    }));
    // The first run downloads the package.
    let pool = common::pool_in(
        vec![("filesystem", server)],
        dir.path().into(),
        Duration::from_secs(180),
    );

    let info = pool.server_info("filesystem").await.unwrap();
    eprintln!(
        "server-filesystem negotiated protocol {}",
        info.protocol_version
    );
    assert!(
        ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
            .contains(&info.protocol_version.as_str()),
        "{info:?}"
    );

    let tools = pool.list_tools("filesystem").await.unwrap();
    let list_directory = tools
        .iter()
        .find(|tool| tool.name == "list_directory")
        .unwrap_or_else(|| {
            panic!(
                "no list_directory in {:?}",
                tools.iter().map(|t| &t.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(list_directory.input_schema["type"], "object");

    let listing = pool
        .call_tool("filesystem", "list_directory", args(json!({"path": root})))
        .await
        .unwrap();
    assert!(!listing.is_error, "{listing:?}");
    let text = listing.content[0]["text"].as_str().unwrap();
    for name in ["a.txt", "b.txt", "sub"] {
        assert!(text.contains(name), "{name} missing from {text}");
    }

    // Outside the allowed directory: the server refuses as a tool error, not a crash.
    let denied = pool
        .call_tool("filesystem", "list_directory", args(json!({"path": "/"})))
        .await
        .unwrap();
    assert!(denied.is_error, "{denied:?}");

    let pid = pool.pid("filesystem").expect("a running child");
    pool.shutdown().await;
    assert!(!alive(pid), "npx survived shutdown");
}
