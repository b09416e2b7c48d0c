use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServerError {
    #[error("tool `{tool}`: inputSchema is not a valid JSON Schema: {message}")]
    BadInputSchema { tool: String, message: String },
    #[error("tool `{tool}`: outputSchema is not a valid JSON Schema: {message}")]
    BadOutputSchema { tool: String, message: String },
    #[error("tool `{tool}`: {what} must be a JSON object")]
    SchemaNotObject { tool: String, what: &'static str },
    /// A hook that cannot be compiled (its message names the hook).
    #[error("{0}")]
    Hook(String),
    /// The proxy's tool names clash, or an upstream could not be listed at start.
    #[error("{0}")]
    Proxy(String),
    #[error("MCP transport failed: {0}")]
    Transport(String),
}
