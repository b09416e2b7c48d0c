//! Tokens already verified, so a client that sends the same bearer token on every request pays
//! for its signature once: an RS256 check is most of what a call costs when it is not cached
//! (bench/README.md, "auth.sh"). Keyed by the token's SHA-256 (the token itself is not kept);
//! an entry is used only while the token is unexpired (`exp` and the leeway, checked on every
//! use, as the first verification did) and for at most [`TTL`], so a key the issuer withdraws
//! stops admitting the tokens it signed within that time of the JWKS saying so. Refused tokens
//! are never kept.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::principal::Principal;

/// How long one verification stands for a token.
pub(crate) const TTL: Duration = Duration::from_secs(60);
/// Most tokens kept; past it, expired entries go first, then nothing new is kept.
const CAPACITY: usize = 10_000;

#[derive(Default)]
pub(crate) struct Verified {
    tokens: RwLock<HashMap<[u8; 32], Entry>>,
}

struct Entry {
    principal: Principal,
    /// `exp` plus the leeway, in seconds since the epoch.
    valid_until: u64,
    kept_until: Instant,
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Verified {
    /// The principal `token` proved, if it was verified lately and is still unexpired.
    pub(crate) fn get(&self, token: &str) -> Option<Principal> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let tokens = self.tokens.read().unwrap_or_else(|e| e.into_inner());
        let entry = tokens.get(&digest)?;
        (entry.kept_until > Instant::now() && now_seconds() <= entry.valid_until)
            .then(|| entry.principal.clone())
    }

    /// Keeps what verifying `token` proved; `valid_until` is its `exp` plus the leeway.
    pub(crate) fn keep(&self, token: &str, principal: &Principal, valid_until: u64) {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        let mut tokens = self.tokens.write().unwrap_or_else(|e| e.into_inner());
        if tokens.len() >= CAPACITY {
            let seconds = now_seconds();
            tokens.retain(|_, e| e.kept_until > now && seconds <= e.valid_until);
            if tokens.len() >= CAPACITY {
                return;
            }
        }
        tokens.insert(
            digest,
            Entry {
                principal: principal.clone(),
                valid_until,
                kept_until: now + TTL,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::Via;
    use crate::scopes::Scopes;
    use crate::tools::ToolGlobs;

    fn carol() -> Principal {
        let scopes = Scopes::parse_words(["tools:call"]);
        Principal::new(
            "carol",
            None,
            Via::Jwt,
            scopes,
            ToolGlobs::All,
            Default::default(),
        )
    }

    #[test]
    fn a_kept_token_is_found_until_it_expires() {
        let verified = Verified::default();
        assert!(verified.get("a.b.c").is_none());
        verified.keep("a.b.c", &carol(), now_seconds() + 60);
        assert_eq!(
            verified
                .get("a.b.c")
                .map(|p| p.subject().to_owned())
                .as_deref(),
            Some("carol")
        );
        assert!(verified.get("a.b.d").is_none(), "another token");
        verified.keep("x.y.z", &carol(), now_seconds() - 1);
        assert!(
            verified.get("x.y.z").is_none(),
            "an expired token is not admitted"
        );
    }

    #[test]
    fn a_full_cache_drops_the_expired_and_keeps_no_more() {
        let verified = Verified::default();
        for i in 0..CAPACITY {
            verified.keep(&format!("t{i}"), &carol(), now_seconds() - 1);
        }
        verified.keep("fresh", &carol(), now_seconds() + 60);
        assert!(verified.get("fresh").is_some());
        assert_eq!(
            verified.tokens.read().unwrap().len(),
            1,
            "expired entries dropped"
        );
    }
}
