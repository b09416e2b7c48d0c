//! [`Credential`]: the key or token a caller presented, kept beside its [`Principal`] for the
//! one use the config may allow: `${caller.token}` in the headers of an upstream marked
//! `forwardCallerToken`. Typed so that nothing reads it by accident (a header map, a log of
//! the request, a hook's metadata never hold it), and printed by no `Debug`.
//!
//! [`Principal`]: crate::Principal

use std::fmt;
use std::sync::Arc;

#[derive(Clone)]
pub struct Credential(Arc<str>);

impl Credential {
    pub fn new(secret: &str) -> Credential {
        Credential(secret.into())
    }

    /// The secret itself, for the upstream that forwards it.
    pub fn secret(&self) -> Arc<str> {
        self.0.clone()
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret() {
        let c = Credential::new("mcpf_s3cret");
        assert!(!format!("{c:?}").contains("s3cret"));
        assert_eq!(&*c.secret(), "mcpf_s3cret");
    }
}
