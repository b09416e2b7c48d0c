//! An `mcp.json` as MCP clients write it (`mcpServers`, VS Code's `servers`, `type: http`, …),
//! merged into a small valid config. Any error is fine; a panic is not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpflow_config::Loader;

const CONFIG: &str = "\
version: '1.0'
server: {name: fuzz, version: '1.0.0'}
tools:
  - name: t
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let loader = Loader::new()
        .env(|name| (name == "TOKEN").then(|| "secret".to_owned()))
        .mcp_json_str(text, "mcp.json");
    let _ = loader.load_str(CONFIG, "fuzz.yaml");
});
