//! API keys: minted by `mcpflow keys new`, kept in the config as salted SHA-256 digests (or read
//! from an environment variable), and recognised in constant time.
//!
//! A fast hash is enough here: a minted key carries 256 random bits, so no dictionary or
//! brute force reaches it through its digest; a slow KDF would cost every request instead.
//! A key taken from the environment is chosen by a person, so it must be at least
//! [`MIN_ENV_KEY_CHARS`] long.

use mcpflow_model::auth::{ApiKeyConfig, RateLimit};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::ConfigError;
use crate::principal::{Principal, Via};
use crate::scopes::Scopes;
use crate::tools::ToolGlobs;

/// What every minted key starts with, so a leaked one is recognisable (secret scanners).
pub const KEY_PREFIX: &str = "mcpf_";
/// Shortest key accepted from the environment.
pub const MIN_ENV_KEY_CHARS: usize = 24;

/// A key just minted: shown once, never stored; `hash` is what the config keeps.
pub struct NewKey {
    pub key: String,
    pub hash: String,
}

/// A new random key and its salted digest.
pub fn new_key() -> Result<NewKey, ConfigError> {
    let mut secret = [0u8; 32];
    let mut salt = [0u8; 16];
    getrandom::fill(&mut secret)
        .and_then(|()| getrandom::fill(&mut salt))
        .map_err(|e| ConfigError(format!("no randomness from the OS: {e}")))?;
    let key = format!("{KEY_PREFIX}{}", hex(&secret));
    let hash = format!("sha256:{}:{}", hex(&salt), hex(&digest(&salt, &key)));
    Ok(NewKey { key, hash })
}

fn digest(salt: &[u8], key: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(key.as_bytes());
    h.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

struct StoredKey {
    name: String,
    salt: Vec<u8>,
    digest: [u8; 32],
    scopes: Scopes,
    tools: ToolGlobs,
    rate_limit: Option<RateLimit>,
    max_concurrent_runs: Option<u32>,
}

/// The configured keys. Its `Debug` shows names only.
#[derive(Default)]
pub struct KeyStore {
    keys: Vec<StoredKey>,
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|k| &k.name))
            .finish()
    }
}

impl KeyStore {
    /// The keys of `auth.keys`; `env` reads the environment (a test passes its own).
    pub fn from_config(
        keys: &[ApiKeyConfig],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<KeyStore, ConfigError> {
        let mut stored = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            let at = format!("auth.keys[{i}] (`{}`)", k.name);
            if k.name.trim().is_empty() {
                return Err(ConfigError(format!("auth.keys[{i}]: the name is empty")));
            }
            if keys[..i].iter().any(|other| other.name == k.name) {
                return Err(ConfigError(format!("{at}: another key has this name")));
            }
            let (salt, digest) = match (&k.hash, &k.env) {
                (Some(hash), None) => parse_hash(hash).ok_or_else(|| {
                    ConfigError(format!(
                        "{at}: `hash` is not `sha256:SALT:DIGEST` in hex (`mcpflow keys new` \
                         prints one)"
                    ))
                })?,
                (None, Some(var)) => {
                    let key = env(var).ok_or_else(|| {
                        ConfigError(format!("{at}: the environment variable {var} is not set"))
                    })?;
                    if key.chars().count() < MIN_ENV_KEY_CHARS {
                        return Err(ConfigError(format!(
                            "{at}: the key in {var} is shorter than {MIN_ENV_KEY_CHARS} \
                             characters (`mcpflow keys new` mints a strong one)"
                        )));
                    }
                    let salt = b"env".to_vec();
                    let d = self::digest(&salt, &key);
                    (salt, d)
                }
                _ => {
                    return Err(ConfigError(format!(
                        "{at}: give exactly one of `hash` and `env`"
                    )));
                }
            };
            stored.push(StoredKey {
                name: k.name.clone(),
                salt,
                digest,
                scopes: Scopes::of(k.scopes.iter().copied()),
                tools: k
                    .tools
                    .as_ref()
                    .map_or(ToolGlobs::All, |g| ToolGlobs::only(g.iter().cloned())),
                rate_limit: k.rate_limit,
                max_concurrent_runs: k.max_concurrent_runs,
            });
        }
        Ok(KeyStore { keys: stored })
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key's own rate limit, if it has one.
    pub fn rate_limit(&self, name: &str) -> Option<RateLimit> {
        self.keys
            .iter()
            .find(|k| k.name == name)
            .and_then(|k| k.rate_limit)
    }

    /// The key's own limit of runs in flight, if it has one.
    pub fn max_concurrent_runs(&self, name: &str) -> Option<u32> {
        self.keys
            .iter()
            .find(|k| k.name == name)
            .and_then(|k| k.max_concurrent_runs)
    }

    /// The principal of `presented`, if it is one of the keys. Every key is compared, in
    /// constant time, whichever matches: the time taken says nothing about the key.
    pub fn principal(&self, presented: &str) -> Option<Principal> {
        let mut found = None;
        for k in &self.keys {
            let d = digest(&k.salt, presented);
            if bool::from(d[..].ct_eq(&k.digest[..])) {
                found = Some(k);
            }
        }
        found.map(|k| {
            Principal::new(
                k.name.clone(),
                Some(k.name.clone()),
                Via::ApiKey,
                k.scopes,
                k.tools.clone(),
                serde_json::Map::new(),
            )
        })
    }
}

fn parse_hash(text: &str) -> Option<(Vec<u8>, [u8; 32])> {
    let mut parts = text.trim().split(':');
    let (Some("sha256"), Some(salt), Some(digest), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let salt = unhex(salt).filter(|s| !s.is_empty())?;
    let digest: [u8; 32] = unhex(digest)?.try_into().ok()?;
    Some((salt, digest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpflow_model::auth::Scope;

    fn key(name: &str, hash: Option<&str>, env: Option<&str>) -> ApiKeyConfig {
        ApiKeyConfig {
            name: name.into(),
            hash: hash.map(Into::into),
            env: env.map(Into::into),
            scopes: vec![Scope::ToolsList],
            tools: Some(vec!["echo*".into()]),
            rate_limit: None,
            max_concurrent_runs: None,
        }
    }

    #[test]
    fn a_minted_key_matches_its_hash_and_nothing_else_does() {
        let minted = new_key().expect("randomness");
        assert!(minted.key.starts_with(KEY_PREFIX) && minted.key.len() == 5 + 64);
        let other = new_key().expect("randomness");
        assert_ne!(minted.key, other.key);
        let store =
            KeyStore::from_config(&[key("ci", Some(&minted.hash), None)], |_| None).expect("valid");
        let p = store.principal(&minted.key).expect("recognised");
        assert_eq!((p.subject(), p.key()), ("ci", Some("ci")));
        assert!(p.allows(Scope::ToolsList) && !p.allows(Scope::ToolsCall));
        assert!(p.sees("echo") && !p.sees("secret"));
        assert!(store.principal(&other.key).is_none());
        assert!(
            store
                .principal(&minted.key[..minted.key.len() - 1])
                .is_none()
        );
        assert!(store.principal("").is_none());
        assert!(!format!("{store:?}").contains(&minted.hash[10..20]));
    }

    #[test]
    fn env_keys_are_read_at_start_and_must_be_long() {
        let long = "a-person-chose-this-long-key";
        let store = KeyStore::from_config(&[key("dev", None, Some("K"))], |v| {
            (v == "K").then(|| long.to_owned())
        })
        .expect("valid");
        assert!(store.principal(long).is_some());
        let short = KeyStore::from_config(&[key("dev", None, Some("K"))], |_| Some("short".into()));
        assert!(short.expect_err("too short").0.contains("shorter than 24"));
        let unset = KeyStore::from_config(&[key("dev", None, Some("K"))], |_| None);
        assert!(unset.expect_err("unset").0.contains("K is not set"));
    }

    #[test]
    fn bad_entries_say_which_and_why() {
        for (keys, says) in [
            (vec![key("a", None, None)], "exactly one of"),
            (
                vec![key("a", Some("md5:00:00"), None)],
                "sha256:SALT:DIGEST",
            ),
            (
                vec![key("a", Some("sha256:zz:00"), None)],
                "sha256:SALT:DIGEST",
            ),
            (vec![key("", Some("x"), None)], "name is empty"),
        ] {
            let e = KeyStore::from_config(&keys, |_| None).expect_err("refused");
            assert!(e.0.contains(says), "{e}");
        }
        let h = new_key().expect("randomness").hash;
        let dup = [key("a", Some(&h), None), key("a", Some(&h), None)];
        assert!(KeyStore::from_config(&dup, |_| None).is_err());
    }
}
