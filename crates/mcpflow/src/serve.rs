use std::process::ExitCode;

use mcpflow_server::{GraphServer, HttpListener, HttpOptions};

use crate::cli::ServeArgs;
use crate::load::load;

/// `mcpflow serve`: the config's tools over MCP, on stdio until the client disconnects, or
/// with `--http` on Streamable HTTP until SIGINT/SIGTERM.
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
    let result = match args.http {
        None => {
            tracing::info!(
                config = %args.config.config.display(),
                server = %loaded.config.server.name,
                tools = loaded.config.tools.len(),
                "serving MCP over stdio"
            );
            mcpflow_server::serve_stdio(server).await
        }
        Some(addr) => serve_http(server, addr, args.allowed_hosts).await,
    };
    pool.shutdown().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_http(
    server: GraphServer,
    addr: std::net::SocketAddr,
    allowed_hosts: Vec<String>,
) -> Result<(), mcpflow_server::ServerError> {
    let shutdown = shutdown_signal();
    let listener = HttpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    // On stderr, as a line a person or a script can read: stdout stays free.
    eprintln!("mcpflow: listening on http://{local}/mcp");
    listener
        .serve(server, HttpOptions { allowed_hosts }, shutdown)
        .await?;
    eprintln!("mcpflow: stopped");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM (a load balancer's stop), so in-flight calls can finish.
/// The handlers are installed when this is called, not when the future is first polled, so a
/// signal sent right after the address is printed is not lost.
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    async move {
        match (term, int) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("cannot listen for SIGTERM/SIGINT ({e}); stop with SIGKILL");
                std::future::pending::<()>().await;
            }
        }
        tracing::info!("shutting down: no new connections; finishing calls in flight");
    }
}
