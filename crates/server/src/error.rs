//! What can stop the server from starting or serving.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServerError {
    /// The engine has no compiled graph for a tool of the config it was given.
    #[error("tool `{0}` was not compiled by the engine this server was given")]
    NotCompiled(String),
    #[error("tool `{tool}`: {what} must be a JSON object")]
    SchemaNotObject { tool: String, what: &'static str },
    /// A hook that cannot be compiled, or two proxied tools under one name.
    #[error(transparent)]
    Gateway(#[from] mcpflow_gateway::GatewayError),
    /// A graph or proxied tool named in the built-in authoring tools' namespace.
    #[error(transparent)]
    Authoring(#[from] mcpflow_authoring::NameClash),
    #[error("the authoring tools must be added before the server is cloned or served")]
    AlreadyShared,
    /// The audit log's file cannot be opened.
    #[error("{0}")]
    Audit(String),
    #[error("MCP transport failed: {0}")]
    Transport(String),
}
