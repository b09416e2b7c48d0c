//! `include:`: graph tools in files of their own, appended in order with their own positions,
//! so a problem in an included tool points into its file; what cannot be included says why.

use std::path::Path;

use mcpflow_config::{ConfigErrors, Loaded, load};

const MAIN: &str = r#"version: "1.0"
server: {name: s, version: "1"}
include: ["tools/*.yaml"]
tools:
  - name: first
    description: d
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

fn tool(name: &str) -> String {
    format!(
        "tools:\n  - name: {name}\n    description: d\n    inputSchema: {{type: object}}\n    nodes:\n      - {{id: entry, type: entry, next: exit}}\n      - {{id: exit, type: exit}}\n"
    )
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn loaded(dir: &Path) -> Loaded {
    load(&dir.join("graph.yaml"), None).unwrap_or_else(|e| panic!("expected a config, got:\n{e}"))
}

fn refused(dir: &Path) -> ConfigErrors {
    match load(&dir.join("graph.yaml"), None) {
        Ok(l) => panic!("expected problems, got {:?}", l.config.tools),
        Err(e) => e,
    }
}

#[test]
fn included_tools_follow_the_configs_in_file_name_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "graph.yaml", MAIN);
    write(dir.path(), "tools/b.yaml", &tool("second_b"));
    write(dir.path(), "tools/a.yaml", &tool("second_a"));
    // Not matched: another extension, and a temporary file of an editor or a save.
    write(dir.path(), "tools/notes.txt", "not yaml");
    write(dir.path(), "tools/.c.yaml.tmp", "broken: [");
    write(dir.path(), "tools/.d.yaml", "broken: [");
    let l = loaded(dir.path());
    let names: Vec<&str> = l.config.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["first", "second_a", "second_b"]);
    let at = l.locate("/tools/2/nodes/1").expect("a position");
    assert!(at.file.ends_with("b.yaml"), "{at}");
    assert_eq!((at.line, at.col), (7, 9), "{at}");
}

#[test]
fn a_directory_not_made_yet_includes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "graph.yaml", MAIN);
    assert_eq!(loaded(dir.path()).config.tools.len(), 1);
}

#[test]
fn a_problem_in_an_included_tool_points_into_its_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "graph.yaml", MAIN);
    write(
        dir.path(),
        "tools/bad.yaml",
        &tool("bad").replace("next: exit}", "next: nowhere}"),
    );
    let errors = refused(dir.path()).to_string();
    assert!(errors.contains("bad.yaml:6:40"), "{errors}");
    assert!(errors.contains("nowhere"), "{errors}");
}

#[test]
fn an_included_file_holds_tools_only_and_names_clash_across_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "graph.yaml", MAIN);
    write(
        dir.path(),
        "tools/x.yaml",
        &format!("mcpServers: {{}}\n{}", tool("first")),
    );
    let errors = refused(dir.path()).to_string();
    assert!(
        errors.contains("x.yaml:1:1") && errors.contains("holds `tools:` only"),
        "{errors}"
    );
    assert!(errors.contains("first"), "the duplicate name: {errors}");
}

#[test]
fn a_named_file_must_exist_and_globs_stay_in_the_file_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "graph.yaml",
        &MAIN.replace(
            r#"include: ["tools/*.yaml"]"#,
            r#"include: ["more.yaml", "*/x.yaml", "graph.yaml"]"#,
        ),
    );
    let errors = refused(dir.path()).to_string();
    assert!(errors.contains("more.yaml: no such file"), "{errors}");
    assert!(errors.contains("only the file name may hold"), "{errors}");
    assert!(errors.contains("names the config itself"), "{errors}");
}

#[test]
fn saving_needs_an_included_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "graph.yaml",
        &MAIN.replace(r#"include: ["tools/*.yaml"]"#, "authoring: {save: true}"),
    );
    let errors = refused(dir.path()).to_string();
    assert!(
        errors.contains("authoring") && errors.contains(r#"include: ["tools/*.yaml"]"#),
        "{errors}"
    );
    assert_eq!(
        mcpflow_config::save_dir(&["a.yaml".into(), "saved/*.yaml".into()]),
        Some("saved".into())
    );
}

/// A config that proxies an upstream, with one hook of its own, whose hooks file is `hooks.yaml`.
const HOOKED: &str = r#"version: "1.0"
server: {name: s, version: "1"}
include: ["tools/*.yaml"]
authoring: {save: true, hooksFile: hooks.yaml}
mcpServers:
  up: {command: up}
proxy:
  upstreams:
    up: {}
hooks:
  - {id: own, method: tools/call, phase: pre, script: "(ctx) => undefined"}
tools: []
"#;

const HOOK: &str = "hooks:\n  - id: saved\n    method: tools/call\n    phase: post\n    script: \"(ctx) => undefined\"\n";

#[test]
fn the_hooks_file_follows_the_configs_hooks_with_its_own_positions() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "graph.yaml", HOOKED);
    // Until the first save there is no hooks file, and nothing is missing.
    assert_eq!(loaded(dir.path()).config.hooks.len(), 1);
    write(dir.path(), "hooks.yaml", HOOK);
    let l = loaded(dir.path());
    let ids: Vec<&str> = l.config.hooks.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["own", "saved"]);
    let at = l.locate("/hooks/1/phase").expect("a position");
    assert!(at.file.ends_with("hooks.yaml"), "{at}");
    assert_eq!((at.line, at.col), (4, 12), "{at}");
    assert_eq!(
        mcpflow_config::hooks_file(&l.config, &l.base_dir).map(|f| f.ends_with("hooks.yaml")),
        Some(true)
    );
}

#[test]
fn the_hooks_file_holds_hooks_only_and_its_problems_point_into_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "graph.yaml", HOOKED);
    write(
        dir.path(),
        "hooks.yaml",
        &format!("{}tools: []\n", HOOK.replace("phase: post", "phase: later")),
    );
    let errors = refused(dir.path()).to_string();
    assert!(errors.contains("hooks.yaml:4:12"), "{errors}");
    assert!(
        errors.contains("hooks.yaml:6:1") && errors.contains("holds `hooks:` only"),
        "{errors}"
    );
    // A hook whose id the config's own hooks have already.
    write(
        dir.path(),
        "hooks.yaml",
        &HOOK.replace("id: saved", "id: own"),
    );
    let errors = refused(dir.path()).to_string();
    assert!(
        errors.contains("hooks.yaml:2:9") && errors.contains("duplicate hook id"),
        "{errors}"
    );
}

#[test]
fn the_hooks_file_is_never_one_include_reads_as_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "graph.yaml",
        &HOOKED.replace("hooksFile: hooks.yaml", "hooksFile: tools/hooks.yaml"),
    );
    let errors = refused(dir.path()).to_string();
    assert!(
        errors.contains("also read as a file of graph tools") && errors.contains("tools/*.yaml"),
        "{errors}"
    );
}

#[test]
fn a_candidate_hooks_text_is_read_in_place_of_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "graph.yaml", HOOKED);
    write(dir.path(), "hooks.yaml", HOOK);
    let candidate = HOOK.replace("id: saved", "id: candidate");
    let l = mcpflow_config::Loader::new()
        .hooks_text(candidate)
        .load(&dir.path().join("graph.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = l.config.hooks.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["own", "candidate"]);
}
