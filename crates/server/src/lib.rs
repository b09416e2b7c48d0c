//! mcpflow server: serves the engine's graph tools over MCP.
//!
//! ```ignore
//! let server = GraphServer::new(&loaded.config, engine)?;
//! mcpflow_server::serve_stdio(server).await?;   // until the client closes stdin
//! ```
//!
//! This crate owns everything MCP-facing: the tool list (with the full input and output
//! schemas, which mcpGraph strips), argument validation against `inputSchema` (errors name the
//! JSON pointer), and turning a [`Run`](mcpflow_engine::Run) into a `CallToolResult`. Only this
//! crate knows JSON-RPC framing and transports; the engine never does.

mod args;
mod error;
mod handler;
mod hooks;
mod http;
mod http_guard;
mod http_sessions;
mod http_sse;
mod proxy;
mod result;
mod session;
mod session_call;
mod session_input;

pub use args::ArgsValidator;
pub use error::ServerError;
pub use handler::{CallOptions, GraphServer};
pub use http::{HttpLimits, HttpListener, HttpOptions, ReadinessCheck};
pub use proxy::Proxy;
pub use result::tool_result;

/// Serves `server` on stdin/stdout until the client disconnects.
pub async fn serve_stdio(server: GraphServer) -> Result<(), ServerError> {
    use rmcp::ServiceExt;
    let running = match stdio_pipes() {
        // Pipes (how MCP clients start servers) are read and written asynchronously: tokio's
        // Stdin hands every read to a blocking thread, a hop that costs tens of µs per message.
        Some(pipes) => server.serve(pipes).await,
        None => server.serve(rmcp::transport::stdio()).await,
    }
    .map_err(|e| ServerError::Transport(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServerError::Transport(e.to_string()))?;
    Ok(())
}

/// stdin and stdout as async pipes, when both are pipes.
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    let rx = tokio::net::unix::pipe::Receiver::from_file(std::fs::File::from(stdin)).ok()?;
    let tx = tokio::net::unix::pipe::Sender::from_file(std::fs::File::from(stdout)).ok()?;
    Some((rx, tx))
}
