//! The README's examples are real: every code block is checked against the binary.
//!
//! The marker: a `yaml` block whose first line starts with `# fragment` is part of a config,
//! not a file of its own. `# fragment: keys of a config` adds top-level keys: it is appended to
//! a small config (with a `filesystem` upstream) and validated; any other fragment (one node,
//! the reference with its `…` placeholders) must be YAML. Every other `yaml` block is a whole
//! config: `mcpflow validate` must accept it, and when none of its tools calls an upstream its
//! first tool is run (a waiting tool is continued with the input its await node's `options`
//! suggest). Every `json` block is an `mcp.json` as a client writes it: `validate -m` reads it.
//!
//! In `sh` blocks, each `mcpflow …` line (and the first block's `cargo run -q -p mcpflow --`)
//! whose files are in `examples/` runs from a copy of `examples/` and must succeed; `SESSION_ID`
//! is the `sessionId` the previous command printed; a trailing `# → JSON` is its output. Lines
//! that serve (they never end) or name files the repo does not have are left out. The first
//! command's output is the one the text after it says it prints.
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{cli, mcpflow, stderr, stdout_json};
use serde_json::Value;

struct Block {
    lang: String,
    /// The README's line of the opening fence.
    line: usize,
    text: String,
}

fn readme_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md")
}

fn readme() -> String {
    std::fs::read_to_string(readme_path()).expect("README.md")
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_owned(),
                    line: i + 1,
                    text: String::new(),
                })
            }
            (Some(_), Some("")) => out.extend(open.take()),
            (Some(b), _) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "README.md has an unclosed code block");
    out
}

fn of_lang<'a>(all: &'a [Block], lang: &str) -> Vec<&'a Block> {
    all.iter().filter(|b| b.lang == lang).collect()
}

/// A config the `keys of a config` fragments are added to.
const BASE: &str = r#"version: "1.0"
server: {name: readme, version: "1.0.0"}
mcpServers:
  filesystem: {command: npx, args: ["-y", "@modelcontextprotocol/server-filesystem", "."]}
tools:
  - name: echo
    description: "Returns its arguments"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

fn validate(path: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["validate", path.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    cli(&args, None)
}

#[test]
fn every_yaml_block_is_a_valid_config_or_a_marked_fragment() {
    let text = readme();
    let all = blocks(&text);
    let yaml = of_lang(&all, "yaml");
    assert!(yaml.len() >= 7, "the README's YAML blocks were not found");
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut whole, mut spliced) = (0, 0);
    for b in yaml {
        let first = b.text.lines().next().unwrap_or_default();
        let path = dir.path().join(format!("readme-{}.yaml", b.line));
        if let Some(kind) = first.strip_prefix("# fragment") {
            if kind.starts_with(": keys of a config") {
                std::fs::write(&path, format!("{BASE}{}", b.text)).expect("write");
                let out = validate(&path, &[]);
                assert!(
                    out.status.success(),
                    "README.md:{}: the fragment does not validate added to a config:\n{}",
                    b.line,
                    stderr(&out)
                );
                spliced += 1;
            } else if let Err(e) = serde_saphyr::from_str::<Value>(&b.text) {
                panic!("README.md:{}: the fragment is not YAML: {e}", b.line);
            }
            continue;
        }
        std::fs::write(&path, &b.text).expect("write");
        let out = validate(&path, &[]);
        assert!(
            out.status.success(),
            "README.md:{}: a whole config (no `# fragment` line) that does not validate:\n{}",
            b.line,
            stderr(&out)
        );
        run_whole(&path, b.line);
        whole += 1;
    }
    assert!(
        whole >= 1 && spliced >= 3,
        "{whole} whole, {spliced} spliced"
    );
}

/// Runs the first tool of a whole config when it calls no upstream; a waiting handle is
/// continued with the input of its first option.
fn run_whole(path: &Path, line: usize) {
    let text = std::fs::read_to_string(path).expect("read");
    let config: Value = serde_saphyr::from_str(&text).expect("YAML");
    if config.get("mcpServers").is_some() {
        return;
    }
    let tool = config["tools"][0]["name"].as_str().expect("a tool");
    let props = &config["tools"][0]["inputSchema"]["properties"];
    let args: serde_json::Map<String, Value> = props
        .as_object()
        .map(|p| {
            p.keys()
                .map(|k| (k.clone(), Value::String("tea".into())))
                .collect()
        })
        .unwrap_or_default();
    let args = Value::Object(args).to_string();
    let p = path.to_str().expect("utf-8");
    let out = cli(&["run", p, tool, "--args", &args], None);
    assert!(out.status.success(), "README.md:{line}: {}", stderr(&out));
    let result = stdout_json(&out);
    if result["status"] != "waiting" {
        return;
    }
    // The handle a client sees, as the text after the block says.
    for key in ["sessionId", "message", "inputSchema", "options"] {
        assert!(
            result.get(key).is_some(),
            "README.md:{line}: {key} in {result}"
        );
    }
    let session = result["sessionId"].as_str().expect("sessionId");
    let input = result["options"][0]["arguments"]["input"].to_string();
    let done = cli(
        &[
            "sessions", "continue", session, "--input", &input, "--config", p,
        ],
        None,
    );
    assert!(done.status.success(), "README.md:{line}: {}", stderr(&done));
    assert_ne!(stdout_json(&done)["status"], "waiting");
}

#[test]
fn every_json_block_is_an_mcp_json_the_loader_reads() {
    let text = readme();
    let all = blocks(&text);
    let json = of_lang(&all, "json");
    assert!(!json.is_empty(), "the README's JSON blocks were not found");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, BASE).expect("write");
    for b in json {
        let mcp = dir.path().join(format!("mcp-{}.json", b.line));
        std::fs::write(&mcp, &b.text).expect("write");
        let out = validate(&config, &["-m", mcp.to_str().expect("utf-8")]);
        assert!(
            out.status.success(),
            "README.md:{}: not an mcp.json mcpflow reads:\n{}",
            b.line,
            stderr(&out)
        );
    }
}

/// One shell line split into words: single and double quotes, a trailing `# comment` (kept
/// apart), and a `>` redirection dropped with what follows.
fn shell_words(line: &str) -> (Vec<String>, Option<String>) {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    let mut comment = None;
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let w = word.get_or_insert_with(String::new);
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    w.push(q);
                }
            }
            '#' if word.is_none() => {
                comment = Some(chars.as_str().trim().to_owned());
                break;
            }
            '>' if word.is_none() => break,
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    (words, comment)
}

/// `examples/` copied into a temp dir: runs write their state there, not into the repo.
fn examples_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let from = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let to = dir.path().join("examples");
    std::fs::create_dir(&to).expect("mkdir");
    for entry in std::fs::read_dir(&from).expect("examples/") {
        let entry = entry.expect("entry");
        if entry.file_type().expect("type").is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
        }
    }
    dir
}

/// The arguments after `mcpflow` of a README command line, when it is one this test runs.
fn runnable(words: &[String], cwd: &Path) -> Option<Vec<String>> {
    let args: Vec<String> = match words {
        [cargo, run, q, p, name, dashes, rest @ ..]
            if [cargo, run, q, p, name, dashes].map(String::as_str)
                == ["cargo", "run", "-q", "-p", "mcpflow", "--"] =>
        {
            rest.to_vec()
        }
        [bin, rest @ ..] if bin == "mcpflow" => rest.to_vec(),
        _ => return None,
    };
    if args.first().is_some_and(|c| c == "serve") {
        return None;
    }
    let files_exist = args
        .iter()
        .filter(|a| a.ends_with(".yaml") || a.ends_with(".json"))
        .all(|a| cwd.join(a).is_file());
    files_exist.then_some(args)
}

/// Runs every command of the README's `sh` blocks it can; returns (command line, stdout) of
/// each.
fn run_sh_blocks() -> Vec<(String, Output)> {
    let text = readme();
    let copy = examples_copy();
    let mut ran = Vec::new();
    let mut session: Option<String> = None;
    for b in of_lang(&blocks(&text), "sh") {
        for (i, line) in b.text.lines().enumerate() {
            let (words, comment) = shell_words(line);
            let Some(mut args) = runnable(&words, copy.path()) else {
                continue;
            };
            for a in &mut args {
                if a == "SESSION_ID" {
                    *a = session.clone().unwrap_or_else(|| {
                        panic!("README.md:{}: no session printed before", b.line + 1 + i)
                    });
                }
            }
            let out = std::process::Command::new(mcpflow())
                .args(&args)
                .current_dir(copy.path())
                .stdin(std::process::Stdio::null())
                .output()
                .expect("mcpflow runs");
            let at = format!("README.md:{}: {line}", b.line + 1 + i);
            assert!(out.status.success(), "{at}\n{}", stderr(&out));
            let printed: Option<Value> = serde_json::from_slice(&out.stdout).ok();
            if let Some(id) = printed.as_ref().and_then(|v| v["sessionId"].as_str()) {
                session = Some(id.to_owned());
            }
            if let Some(expected) = comment.as_deref().and_then(|c| c.strip_prefix("→")) {
                let expected: Value = serde_json::from_str(expected.trim())
                    .unwrap_or_else(|e| panic!("{at}: the sample after → is not JSON: {e}"));
                assert_eq!(printed, Some(expected), "{at}");
            }
            ran.push((line.to_owned(), out));
        }
    }
    ran
}

#[test]
fn the_readme_commands_run_and_print_what_it_says() {
    let ran = run_sh_blocks();
    let lines: Vec<&str> = ran.iter().map(|(l, _)| l.as_str()).collect();
    for expected in [
        "cargo run -q -p mcpflow -- run examples/sum.yaml",
        "mcpflow run examples/approval.yaml order",
        "mcpflow sessions continue SESSION_ID",
        "mcpflow eval --logic",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(expected)),
            "`{expected}` was not run; ran: {lines:#?}"
        );
    }

    // The first command prints what the sentence after its block says.
    let text = readme();
    let first = &blocks(&text)[0];
    let after = &text[text.find(&first.text).expect("block") + first.text.len()..];
    let sample = after
        .split("printing")
        .nth(1)
        .and_then(|s| s.split('`').nth(1))
        .expect("the README says what the first command prints: printing `…`");
    let sample: Value = serde_json::from_str(sample).expect("the sample is JSON");
    let (line, out) = &ran[0];
    assert!(line.starts_with("cargo run"), "{line}");
    assert_eq!(stdout_json(out), sample, "{line}");
}

#[test]
fn shell_words_split_as_a_shell_does() {
    let (w, c) = shell_words(r#"mcpflow eval '$sum(a)' --input '{"a": [1]}'   # → 1"#);
    assert_eq!(
        w,
        ["mcpflow", "eval", "$sum(a)", "--input", r#"{"a": [1]}"#]
    );
    assert_eq!(c.as_deref(), Some("→ 1"));
    let (w, _) = shell_words("mcpflow schema > mcpflow.schema.json   # for editors");
    assert_eq!(w, ["mcpflow", "schema"]);
}
