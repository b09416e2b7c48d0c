use std::process::ExitCode;

use mcpflow_config::Loaded;
use mcpflow_engine::Engine;
use mcpflow_upstream::UpstreamPool;

use crate::cli::ConfigArgs;

/// Loads and compiles a config, printing every problem to stderr on failure: the loader's
/// and the engine's compile errors together, each at its `file:line:col`.
pub fn load(args: &ConfigArgs) -> Result<(Loaded, Engine), ExitCode> {
    let mut loader = mcpflow_config::Loader::new();
    if let Some(mcp) = &args.mcp {
        loader = loader.mcp_json(mcp);
    }
    let rejected = |errors: mcpflow_config::ConfigErrors| {
        eprintln!("{errors}");
        ExitCode::from(2)
    };
    let (loaded, engine) = loader
        .read(&args.config)
        .and_then(|draft| {
            draft.compile(
                |config, base_dir| {
                    let pool = UpstreamPool::new(config.mcp_servers.clone(), base_dir.into());
                    Engine::new(config, pool)
                },
                mcpflow_engine::check,
            )
        })
        .map_err(rejected)?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    Ok((loaded, engine))
}

pub fn validate(args: ConfigArgs) -> ExitCode {
    match load(&args) {
        Ok((loaded, _)) => {
            let c = &loaded.config;
            let nodes: usize = c.tools.iter().map(|t| t.nodes.len()).sum();
            let line = format!(
                "{}: ok: server `{}` {}, {} tool(s), {} node(s), {} upstream server(s)",
                args.config.display(),
                c.server.name,
                c.server.version,
                c.tools.len(),
                nodes,
                c.mcp_servers.len()
            );
            crate::output::emit(&line, ExitCode::SUCCESS)
        }
        Err(code) => code,
    }
}
