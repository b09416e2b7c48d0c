fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mcp = args.get(2).map(std::path::Path::new);
    match mcpflow_config::load(std::path::Path::new(&args[1]), mcp) {
        Ok(l) => {
            println!("OK: {} tools, servers {:?}", l.config.tools.len(), l.config.mcp_servers.keys().collect::<Vec<_>>());
            for w in &l.warnings { println!("warning: {w}"); }
        }
        Err(e) => println!("{e}"),
    }
}
