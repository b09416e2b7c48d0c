//! Loading a config the one way every command does: the loader, then the engine's compiler,
//! every problem printed at its `file:line:col`.

use std::process::ExitCode;

use mcpflow_config::Loaded;
use mcpflow_engine::Engine;
use mcpflow_upstream::UpstreamPool;

use indexmap::IndexMap;
use mcpflow_config::model::Node;

use crate::cli::{ConfigArgs, ValidateArgs};

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

pub async fn validate(args: ValidateArgs) -> ExitCode {
    let (loaded, engine) = match load(&args.config) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if args.check_upstreams {
        let problems = check_upstreams(&loaded, engine.pool()).await;
        engine.pool().shutdown().await;
        if !problems.is_empty() {
            for problem in &problems {
                eprintln!("{problem}");
            }
            eprintln!("{} upstream problem(s)", problems.len());
            return ExitCode::from(2);
        }
    }
    let c = &loaded.config;
    // What a client will see of a tool that can wait: the handle, while its run waits.
    for tool in &c.tools {
        let waits = engine.graph(&tool.name).is_some_and(|g| g.can_wait());
        if waits && tool.output_schema.is_some() {
            eprintln!(
                "note: tool `{}` can wait: while its run waits, a call answers the waiting handle \
                 ({{status: \"waiting\", sessionId, …}}) as its structured content, and its listed \
                 outputSchema admits either (anyOf) so that clients checking it accept the handle",
                tool.name
            );
        }
    }
    let nodes: usize = c.tools.iter().map(|t| t.nodes.len()).sum();
    let line = format!(
        "{}: ok: server `{}` {}, {} tool(s), {} node(s), {} upstream server(s){}",
        args.config.config.display(),
        c.server.name,
        c.server.version,
        c.tools.len(),
        nodes,
        c.mcp_servers.len(),
        if args.check_upstreams {
            ", every upstream tool found"
        } else {
            ""
        }
    );
    crate::output::emit(&line, ExitCode::SUCCESS)
}

/// Every `mcp` node's tool checked against its upstream's `tools/list`, each problem at the
/// node's `file:line:col`.
async fn check_upstreams(loaded: &Loaded, pool: &UpstreamPool) -> Vec<String> {
    let mut uses: IndexMap<&str, Vec<(&str, String)>> = IndexMap::new();
    for (t, tool) in loaded.config.tools.iter().enumerate() {
        for (n, node) in tool.nodes.iter().enumerate() {
            if let Node::Mcp(mcp) = node {
                let pointer = format!("{}/tool", mcpflow_config::node_pointer(t, n));
                uses.entry(mcp.server.as_str())
                    .or_default()
                    .push((mcp.tool.as_str(), pointer));
            }
        }
    }
    let place = |pointer: &str| {
        loaded
            .locate(pointer)
            .map_or_else(|| loaded.path.display().to_string(), |p| p.to_string())
    };
    let mut problems = Vec::new();
    for (server, calls) in uses {
        match pool.list_tools(server).await {
            Ok(tools) => {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                for (tool, pointer) in calls {
                    if !names.contains(&tool) {
                        problems.push(format!(
                            "{}: upstream `{server}` has no tool `{tool}`; it has: {}",
                            place(&pointer),
                            names.join(", ")
                        ));
                    }
                }
            }
            Err(error) => problems.push(format!(
                "{}: {error}",
                place(&format!(
                    "/mcpServers/{}",
                    server.replace('~', "~0").replace('/', "~1")
                ))
            )),
        }
    }
    problems
}
