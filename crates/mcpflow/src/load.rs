use std::process::ExitCode;

use mcpflow_config::Loaded;
use mcpflow_engine::Engine;
use mcpflow_upstream::UpstreamPool;

use crate::cli::ConfigArgs;

/// Loads and compiles a config, printing every problem to stderr on failure.
pub fn load(args: &ConfigArgs) -> Result<(Loaded, Engine), ExitCode> {
    let loaded = match mcpflow_config::load(&args.config, args.mcp.as_deref()) {
        Ok(l) => l,
        Err(errors) => {
            eprintln!("{errors}");
            return Err(ExitCode::from(2));
        }
    };
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    let pool = UpstreamPool::new(loaded.config.mcp_servers.clone(), loaded.base_dir.clone());
    match Engine::new(&loaded.config, pool) {
        Ok(engine) => Ok((loaded, engine)),
        Err(e) => {
            eprintln!("{}: {e}", args.config.display());
            Err(ExitCode::from(2))
        }
    }
}

pub fn validate(args: ConfigArgs) -> ExitCode {
    match load(&args) {
        Ok((loaded, _)) => {
            let c = &loaded.config;
            let nodes: usize = c.tools.iter().map(|t| t.nodes.len()).sum();
            println!(
                "{}: ok: server `{}` {}, {} tool(s), {} node(s), {} upstream server(s)",
                args.config.display(),
                c.server.name,
                c.server.version,
                c.tools.len(),
                nodes,
                c.mcp_servers.len()
            );
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}
