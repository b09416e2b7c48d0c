//! `proxy:` and `hooks:`: what loads, and what is refused with a position.
use mcpflow_config::load_str;
use mcpflow_config::proxy::{FailureMode, HookMethod, HookPhase, Naming, OnHookError};

const HEAD: &str = r#"
version: "1.0"
server: {name: gw, version: "1.0.0"}
mcpServers:
  fs: {command: npx, args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
  mem: {command: npx, args: ["-y", "@modelcontextprotocol/server-memory"]}
tools:
  - name: audit
    description: "a graph tool a hook calls"
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

fn errors(yaml: &str) -> String {
    let yaml = if yaml.contains("proxy:") {
        yaml.to_string()
    } else {
        format!("proxy: {{upstreams: {{fs: {{}}}}}}\n{yaml}")
    };
    match load_str(&format!("{HEAD}{yaml}"), "gw.yaml") {
        Ok(_) => panic!("loaded, but should not have"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_full_gateway_config_loads() {
    let yaml = format!(
        "{HEAD}{}",
        r#"
proxy:
  failureMode: fail
  upstreams:
    fs:
      prefix: files
      separator: "."
      include: ["read_*", "list_*"]
      exclude: ["*media*"]
      tools:
        list_directory:
          name: ls
          title: "List"
          description: "Lists a directory"
          annotations: {readOnlyHint: true}
          fixedArguments: {path: /tmp}
          defaultArguments: {depth: 1}
    mem: {naming: none, prompts: false, failureMode: hide}
hooks:
  - id: guard
    method: tools/call
    phase: pre
    upstream: "f*"
    tool: "read_*"
    script: "(ctx) => undefined"
    onHookError: open
    timeoutMs: 20
  - id: audit
    method: tools/list
    phase: post
    graphTool: audit
    blocking: false
"#
    );
    let loaded = load_str(&yaml, "gw.yaml").unwrap_or_else(|e| panic!("{e}"));
    let proxy = loaded.config.proxy.expect("proxy");
    assert_eq!(proxy.failure_mode, Some(FailureMode::Fail));
    let fs = &proxy.upstreams["fs"];
    assert_eq!(fs.exposed_name("fs", "read_file"), "files.read_file");
    assert_eq!(fs.exposed_name("fs", "list_directory"), "ls");
    assert!(fs.passes("read_file") && !fs.passes("read_media_file") && !fs.passes("write_file"));
    assert_eq!(proxy.upstreams["mem"].naming, Some(Naming::None));
    let hooks = &loaded.config.hooks;
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0].method, HookMethod::ToolsCall);
    assert_eq!(hooks[0].phase, HookPhase::Pre);
    assert_eq!(hooks[0].on_hook_error, Some(OnHookError::Open));
    assert!(hooks[0].matches(HookMethod::ToolsCall, "fs", Some("read_file")));
    assert!(!hooks[0].matches(HookMethod::ToolsCall, "mem", Some("read_file")));
    assert!(!hooks[0].matches(HookMethod::ToolsList, "fs", None));
    assert!(!hooks[1].is_blocking());
}

#[test]
fn a_proxied_upstream_must_be_declared() {
    let e = errors("proxy:\n  upstreams:\n    fss: {}\n");
    assert!(
        e.contains("proxied upstream \"fss\" is not declared"),
        "{e}"
    );
    assert!(e.contains("gw.yaml:"), "{e}");
}

#[test]
fn explicit_names_must_not_collide() {
    let e = errors(
        "proxy:\n  upstreams:\n    fs: {tools: {read_file: {name: read}}}\n    mem: {tools: {read_graph: {name: read}}}\n",
    );
    assert!(
        e.contains("names both upstream tools fs/read_file and mem/read_graph"),
        "{e}"
    );
    let e = errors("proxy:\n  upstreams:\n    fs: {tools: {read_file: {name: audit}}}\n");
    assert!(e.contains("is also a graph tool's name"), "{e}");
}

#[test]
fn a_hook_needs_exactly_one_body_and_a_known_graph_tool() {
    let e = errors("hooks:\n  - {id: h, method: tools/call, phase: pre}\n");
    assert!(e.contains("exactly one of `script` and `graphTool`"), "{e}");
    let e = errors(
        "hooks:\n  - {id: h, method: tools/call, phase: pre, script: 'x => x', graphTool: audit}\n",
    );
    assert!(e.contains("exactly one of `script` and `graphTool`"), "{e}");
    let e = errors("hooks:\n  - {id: h, method: tools/call, phase: pre, graphTool: audti}\n");
    assert!(
        e.contains("hook graph tool \"audti\" is not a tool of this config"),
        "{e}"
    );
    assert!(e.contains("did you mean \"audit\""), "{e}");
    let e = errors(
        "hooks:\n  - {id: h, method: tools/call, phase: pre, script: a}\n  - {id: h, method: tools/list, phase: post, script: b}\n",
    );
    assert!(e.contains("duplicate hook id \"h\""), "{e}");
}

#[test]
fn hooks_without_a_proxy_are_refused() {
    let text = format!("{HEAD}hooks:\n  - {{id: h, method: tools/call, phase: pre, script: a}}\n");
    let e = load_str(&text, "gw.yaml")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("nothing is proxied"), "{e}");
}

#[test]
fn unknown_methods_phases_and_keys_are_refused() {
    let e = errors("hooks:\n  - {id: h, method: tools/run, phase: pre, script: a}\n");
    assert!(e.contains("hooks/0/method") || e.contains("method"), "{e}");
    let e = errors("proxy:\n  upstreams:\n    fs: {prefx: x}\n");
    assert!(e.contains("prefx"), "{e}");
}

#[test]
fn a_graph_tool_under_a_tool_search_built_in_name_is_refused_at_its_name() {
    let yaml = HEAD.replace("name: audit", "name: mcpflow_find_tool");
    let err = match load_str(
        &format!("{yaml}proxy: {{upstreams: {{fs: {{}}}}, toolSearch: {{}}}}\n"),
        "gw.yaml",
    ) {
        Ok(_) => panic!("loaded, but should not have"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("gw.yaml:8:11") && err.contains("built-in tool of proxy.toolSearch"),
        "{err}"
    );
}
