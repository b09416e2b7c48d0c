use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServerError {
    #[error("tool `{tool}`: inputSchema is not a valid JSON Schema: {message}")]
    BadInputSchema { tool: String, message: String },
    #[error("tool `{tool}`: outputSchema is not a valid JSON Schema: {message}")]
    BadOutputSchema { tool: String, message: String },
    #[error("tool `{tool}`: {what} must be a JSON object")]
    SchemaNotObject { tool: String, what: &'static str },
    #[error("MCP transport failed: {0}")]
    Transport(String),
}
