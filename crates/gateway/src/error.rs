//! What can stop a gateway from starting.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GatewayError {
    /// A hook that cannot be compiled (its message names the hook).
    #[error("{0}")]
    Hook(String),
    /// Two tools listed under one name (the message names both owners and the fix).
    #[error("{0}")]
    NameClash(String),
}
