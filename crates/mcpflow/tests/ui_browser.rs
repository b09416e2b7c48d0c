//! The web UI (issue #17), served at `/ui` by the real `mcpflow serve --http` from the files
//! embedded in the binary, and driven in Debian's Chromium by `ui/tests/browser.mjs`
//! (playwright-core from npm, `scripts/ui install`): the graph drawn, a run from its form, a
//! conditional breakpoint with two steps and the context at step 2, a dropped event stream
//! caught up, an await session continued from its form, a past failed run with its failing
//! node, keyboard navigation, the slowest nodes over the tool's recent runs marked, an
//! upstream's tool with its schemas, no console error; then every example config drawn. The editor:
//! a saved tool opened, a transform added and connected, a broken expression marked on its node
//! and fixed, saved (the file passes `mcpflow validate`, the tool is served with the change), a
//! YAML edit that does not parse shown as an error with the graph kept, a save racing a change
//! on disk refused, a new tool from a template, exported and imported. The hook flows: a pre hook
//! added to the proxied fixture's `tools/call` flow, its syntax error marked, tried on a sample
//! in the sandbox (rejected), saved, and a call through the gateway rejected by it (over REST in
//! the page's test, over MCP here); a second hook made fire-and-forget, moved before the first and
//! switched off; a save racing a change on disk refused; the flow exported and imported (a broken
//! flow file refused). A waiting session cancelled from its view. Under `auth:`: the page
//! asks for a key, a read-only key is offered no editing, running or debugging, a full key
//! watches a run live over the keyed event stream. A screenshot of each view is kept (the
//! directory is printed).
//!
//! Without chromium, node or the UI's npm packages the browser tests are skipped with one
//! line; under CI (`CI=true`) or with `MCPFLOW_REQUIRE_BROWSER` set, that is an error instead.
mod http_common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use http_common::{
    Server, config, curl, header, message, repo_root, start, start_with_env, status,
};

/// A tool saved in its own file, as the editor finds one it can save (the browser test edits it).
const GREETING: &str = "# Written by mcpflow_save_tool. Editing it by hand is fine; the next save of this tool replaces it whole.
tools:
  - name: greeting
    description: Greets someone
    inputSchema:
      type: object
      properties:
        who: {type: string}
      required: [who]
    nodes:
      - id: entry
        type: entry
        next: hello
      - id: hello
        type: transform
        transform:
          expr: '{\"text\": \"hello \" & entry.who}'
        next: exit
      - id: exit
        type: exit
";

/// `tests/ui_browser.yaml` copied into `state` (same name, so positions read the same) with
/// its tools savable there (`tools/*.yaml`, `greeting` already saved), its hooks too
/// (`hooks.yaml`), and the fixture as an upstream (`fixture`), proxied, served with its runs and
/// sessions in `state`; answers the server and the copy's path.
fn serve(state: &Path) -> (Server, PathBuf) {
    serve_with(state, "", &[])
}

/// [`serve`] with `more` top-level keys in the config and `env` for the server.
fn serve_with(state: &Path, more: &str, env: &[(&str, &str)]) -> (Server, PathBuf) {
    let text = std::fs::read_to_string(config("ui_browser.yaml")).expect("ui_browser.yaml");
    let copy = state.join("ui_browser.yaml");
    std::fs::write(
        &copy,
        format!(
            "{text}include: [\"tools/*.yaml\"]\nauthoring: {{save: true, hooksFile: hooks.yaml}}\nmcpServers:\n  fixture: {{command: {}}}\nproxy:\n  upstreams:\n    fixture: {{}}\n{more}",
            serde_json::Value::from(http_common::fixture().to_str().expect("utf-8 path"))
        ),
    )
    .expect("config copied");
    std::fs::create_dir_all(state.join("tools")).expect("tools dir");
    std::fs::write(state.join("tools/greeting.yaml"), GREETING).expect("greeting saved");
    let db = state.join("state.db");
    let server = start_with_env(
        &copy,
        &["--state", db.to_str().expect("utf-8 temp path")],
        env,
    );
    (server, copy)
}

/// A key for the `env:` entries of `auth.keys`: random enough for a test's own server.
fn test_key(name: &str) -> String {
    use std::hash::{BuildHasher, RandomState};
    let (a, b) = (
        RandomState::new().hash_one(name),
        RandomState::new().hash_one(name),
    );
    format!("mcpf_{name}_{a:016x}{b:016x}")
}

/// What the browser test needs, or why it cannot run.
fn browser() -> Result<(PathBuf, PathBuf), String> {
    let chromium = std::env::var_os("MCPFLOW_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.exists() {
        return Err(format!(
            "{} is missing (apt-get install chromium)",
            chromium.display()
        ));
    }
    let node = Command::new("node")
        .arg("--version")
        .output()
        .map_err(|e| format!("node cannot be run: {e}"))?;
    if !node.status.success() {
        return Err("node --version failed".into());
    }
    let playwright = repo_root().join("ui/node_modules/playwright-core");
    if !playwright.exists() {
        return Err(format!(
            "{} is missing (scripts/ui install)",
            playwright.display()
        ));
    }
    Ok((chromium, repo_root().join("ui/tests/browser.mjs")))
}

fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var_os("MCPFLOW_REQUIRE_BROWSER").is_some()
}

/// What the browser tests run with, or `None` (after one line saying why) when skipped.
fn browser_or_skip() -> Option<(PathBuf, PathBuf)> {
    match browser() {
        Ok(found) => Some(found),
        Err(why) if required() => {
            panic!("the browser test must run here (CI or MCPFLOW_REQUIRE_BROWSER), but {why}")
        }
        Err(why) => {
            eprintln!(
                "skipped: the web UI's browser test needs Chromium, node and ui/'s npm packages: {why}"
            );
            None
        }
    }
}

fn screenshots(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

/// Runs `ui/tests/browser.mjs BASE SHOTS EXTRA…`; panics with its output unless every step
/// held; returns what it printed.
fn run_script(chromium: &Path, script: &Path, base: &str, shots: &Path, extra: &[&str]) -> String {
    let mut child = Command::new("node")
        .arg(script)
        .arg(base)
        .arg(shots)
        .args(extra)
        .env("MCPFLOW_CHROMIUM", chromium)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    let mut out = child.stdout.take().expect("stdout piped");
    let mut err = child.stderr.take().expect("stderr piped");
    let reader = std::thread::spawn(move || {
        let (mut a, mut b) = (String::new(), String::new());
        let _ = out.read_to_string(&mut a);
        let _ = err.read_to_string(&mut b);
        (a, b)
    });
    // A guard against a hung browser, not a measurement: the steps take seconds.
    let deadline = Instant::now() + Duration::from_secs(300);
    let code = loop {
        if let Some(code) = child.try_wait().expect("wait for node") {
            break Some(code);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = reader.join().expect("output read");
    eprintln!("{stdout}{stderr}");
    eprintln!("screenshots: {}", shots.display());
    let code = code.expect("the browser script ends within 5 minutes");
    assert!(
        code.success(),
        "the browser script failed ({code}):\n{stderr}"
    );
    assert!(
        stdout.contains("browser: all steps passed"),
        "the script ended without its last line:\n{stdout}"
    );
    stdout
}

#[test]
fn the_ui_in_chromium_against_the_binary() {
    let Some((chromium, script)) = browser_or_skip() else {
        return;
    };
    let state = tempfile::tempdir().expect("temp dir");
    let (server, config) = serve(state.path());
    let shots = screenshots("ui-browser");
    let dir = state.path().to_str().expect("utf-8 temp path");
    run_script(&chromium, &script, &server.base(), &shots, &["--edit", dir]);
    // What the editor saved passes the same checks as any config, and is served.
    let validated = Command::new(http_common::mcpflow())
        .args(["validate", config.to_str().expect("utf-8 temp path")])
        .output()
        .expect("mcpflow validate runs");
    assert!(
        validated.status.success(),
        "the config with the editor's saves does not validate: {}",
        String::from_utf8_lossy(&validated.stderr)
    );
    let saved = std::fs::read_to_string(state.path().join("tools/greeting.yaml")).expect("saved");
    assert!(
        saved.contains("transform1"),
        "the added node is saved: {saved}"
    );
    // The hooks the flow editor saved are the config's: a tools/call of the proxied fixture
    // over MCP is rejected by the first one.
    let hooks = std::fs::read_to_string(state.path().join("hooks.yaml")).expect("hooks saved");
    assert!(hooks.contains("no shouting here"), "{hooks}");
    let (_, body) = curl(&[
        "-X",
        "POST",
        "-H",
        "content-type: application/json",
        "-H",
        "accept: application/json, text/event-stream",
        "-H",
        "mcp-protocol-version: 2026-07-28",
        "-H",
        "mcp-method: tools/call",
        "-H",
        "mcp-name: fixture__echo_text",
        "--data",
        &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "fixture__echo_text", "arguments": {"text": "shout"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "ui-browser-test", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }}})
        .to_string(),
        &server.url,
    ]);
    let answer = message(&body);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("no shouting here")),
        "{answer}"
    );
    for file in ["from_template.yaml", "imported_tool.yaml"] {
        assert!(
            state.path().join("tools").join(file).exists(),
            "{file} saved"
        );
    }
    for name in [
        "01-tool-graph",
        "02-groups",
        "03-node",
        "04-run",
        "05-debug-timeline",
        "06-session",
        "07-failed-run",
        "08-runs",
        "09-edit",
        "10-yaml-error",
        "11-save-conflict",
        "12-new-tool",
        "16-slowest",
        "17-upstreams",
        "18-hook-error",
        "19-hook-try",
        "20-hook-flow",
    ] {
        let png = shots.join(format!("{name}.png"));
        let bytes = std::fs::read(&png).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "{} is not a PNG screenshot",
            png.display()
        );
    }
}

/// The UI under `auth:`: the page loads without a key and asks for one; a key the server does
/// not know is refused; a read-only key (`runs:read`) sees graphs and runs but is offered no
/// editing, running, debugging or sessions (and the page calls nothing it may not: no 403);
/// a full key starts a paused run whose step, made from outside the page, arrives live over
/// the event stream, read with the key in its header (never in a URL).
#[test]
fn the_ui_under_auth_asks_for_a_key_and_offers_what_its_scopes_allow() {
    let Some((chromium, script)) = browser_or_skip() else {
        return;
    };
    let state = tempfile::tempdir().expect("temp dir");
    let (reader, full) = (test_key("reader"), test_key("full"));
    let auth = "auth:\n  keys:\n    - {name: reader, env: MCPFLOW_UI_READER, scopes: [runs:read]}\n    - {name: operator, env: MCPFLOW_UI_FULL, scopes: [admin]}\n";
    let (server, _) = serve_with(
        state.path(),
        auth,
        &[
            ("MCPFLOW_UI_READER", reader.as_str()),
            ("MCPFLOW_UI_FULL", full.as_str()),
        ],
    );
    // Without a key the API refuses, the page does not.
    let (head, _) = curl(&[&format!("{}/api/tools", server.base())]);
    assert_eq!(status(&head), 401, "{head}");
    let (head, _) = curl(&[&format!("{}/ui/", server.base())]);
    assert_eq!(status(&head), 200, "{head}");
    let shots = screenshots("ui-auth");
    run_script(
        &chromium,
        &script,
        &server.base(),
        &shots,
        &["--auth", reader.as_str(), full.as_str()],
    );
    for name in ["13-key-prompt", "14-read-only", "15-full-key-live"] {
        let png = shots.join(format!("{name}.png"));
        let bytes = std::fs::read(&png).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "{} is not a PNG screenshot",
            png.display()
        );
    }
}

/// The UI on each example config: every graph tool drawn with its run form, no console error.
#[test]
fn the_ui_draws_every_example() {
    let Some((chromium, script)) = browser_or_skip() else {
        return;
    };
    let shots = screenshots("ui-examples");
    let mut configs: Vec<PathBuf> = std::fs::read_dir(repo_root().join("examples"))
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    configs.sort();
    assert!(configs.len() >= 3, "examples: {configs:?}");
    for config in configs {
        let state = tempfile::tempdir().expect("temp dir");
        let db = state.path().join("state.db");
        let server = start(&config, &["--state", db.to_str().expect("utf-8 temp path")]);
        let stem = config
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("file name")
            .to_owned();
        let out = run_script(
            &chromium,
            &script,
            &server.base(),
            &shots,
            &["--graphs", &stem],
        );
        assert!(out.contains(&format!("ok: {stem}: the UI opens")), "{out}");
    }
}

/// The embedded files, as a browser fetches them (no browser needed): `/ui` and `/ui/` are
/// the app, an app route falls back to it, hashed assets are gzipped for a client that
/// accepts it and cached, a missing asset is 404; and what the binary serves is what
/// `crates/api/ui-dist/` holds (so a stale build would show here too).
#[test]
fn the_ui_is_served_from_the_binary() {
    let state = tempfile::tempdir().expect("temp dir");
    let (server, _) = serve(state.path());
    let base = server.base();
    let dist = repo_root().join("crates/api/ui-dist");
    let index = std::fs::read_to_string(dist.join("index.html")).expect("ui-dist/index.html");

    for path in ["/ui", "/ui/", "/ui/runs/some-run"] {
        let (head, body) = curl(&[&format!("{base}{path}")]);
        assert_eq!(status(&head), 200, "{path}: {head}");
        assert!(
            header(&head, "content-type").is_some_and(|v| v.starts_with("text/html")),
            "{path}: {head}"
        );
        assert!(
            header(&head, "content-security-policy")
                .is_some_and(|v| v.contains("default-src 'self'")),
            "{path}: {head}"
        );
        assert_eq!(body, index, "{path} is ui-dist/index.html");
    }

    // Every asset index.html names, whole and gzipped.
    let assets: Vec<&str> = index
        .split('"')
        .filter(|s| s.starts_with("/ui/assets/"))
        .collect();
    assert!(assets.len() >= 2, "a script and a stylesheet: {index}");
    let mut first_load = index.len();
    let mut first_load_plain = index.len();
    for asset in &assets {
        let file = dist.join(asset.trim_start_matches("/ui/"));
        let on_disk = std::fs::read(&file).expect("asset in ui-dist");
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "20", &format!("{base}{asset}")])
            .output()
            .expect("curl runs");
        assert_eq!(out.stdout, on_disk, "{asset} is served as built");
        let (head, _) = curl(&[
            "-H",
            "accept-encoding: gzip",
            "-o",
            "/dev/null",
            &format!("{base}{asset}"),
        ]);
        assert_eq!(status(&head), 200, "{asset}: {head}");
        assert_eq!(
            header(&head, "content-encoding"),
            Some("gzip"),
            "{asset}: {head}"
        );
        assert!(
            header(&head, "cache-control").is_some_and(|v| v.contains("immutable")),
            "{asset}: {head}"
        );
        let gz = std::fs::metadata(format!("{}.gz", file.display())).expect("gzip copy");
        first_load += gz.len() as usize;
        first_load_plain += on_disk.len();
    }
    eprintln!(
        "first load of /ui: {} bytes gzipped ({} bytes uncompressed) in {} files",
        first_load,
        first_load_plain,
        assets.len() + 1
    );

    let (head, _) = curl(&[&format!("{base}/ui/assets/nothing-here.js")]);
    assert_eq!(status(&head), 404, "{head}");
    // The UI is behind the same Host guard as /api and /mcp.
    let (head, _) = curl(&["-H", "Host: evil.example", &format!("{base}/ui/")]);
    assert_eq!(status(&head), 403, "{head}");
}
