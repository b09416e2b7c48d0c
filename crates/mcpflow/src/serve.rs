use std::process::ExitCode;

use mcpflow_server::GraphServer;

use crate::cli::ServeArgs;
use crate::load::load;

/// `mcpflow serve`: the config's tools over MCP on stdio until the client disconnects.
pub async fn serve(args: ServeArgs) -> ExitCode {
    let (loaded, engine) = match load(&args.config) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let pool = engine.pool().clone();
    let server = match GraphServer::new(&loaded.config, engine) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args.config.config.display());
            return ExitCode::from(2);
        }
    };
    tracing::info!(
        config = %args.config.config.display(),
        server = %loaded.config.server.name,
        tools = loaded.config.tools.len(),
        "serving MCP over stdio"
    );
    let result = mcpflow_server::serve_stdio(server).await;
    pool.shutdown().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            ExitCode::FAILURE
        }
    }
}
