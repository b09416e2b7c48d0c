//! mcpflow server: the MCP face of a config, over stdio and HTTP.
//!
//! ```ignore
//! let server = GraphServer::new(&loaded.config, engine)?;
//! mcpflow_server::serve_stdio(server).await?;   // until the client closes stdin
//! ```
//!
//! This crate frames MCP: the tool list (with the full input and output schemas, which mcpGraph
//! strips), argument validation against the schema the engine compiled (errors name the JSON
//! pointer), a [`Run`](mcpflow_engine::Run) turned into a `CallToolResult`, sessions of tools
//! that wait (`session/`), and the transports (stdio here, HTTP in `http/`). What is proxied,
//! and every hook, is the [`Gateway`]'s; what runs, the engine's.

mod call_options;
mod error;
mod handler;
mod http;
mod live;
mod result;
mod server;
mod session;

pub use call_options::CallOptions;
pub use error::ServerError;
#[cfg(fuzzing)]
pub use http::check_host_and_origin;
pub use http::{HttpLimits, HttpListener, HttpOptions, ReadinessCheck};
pub use live::LiveServer;
pub use mcpflow_gateway::Gateway;
pub use result::tool_result;
pub use server::GraphServer;

/// Serves `server` on stdin/stdout until the client disconnects.
pub async fn serve_stdio(server: impl Into<LiveServer>) -> Result<(), ServerError> {
    use rmcp::ServiceExt;
    let server: LiveServer = server.into();
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
