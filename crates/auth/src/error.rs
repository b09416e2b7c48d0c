//! What can be wrong with an `auth:` section.

/// A problem with the `auth:` section, found at start; the message names the key.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);
