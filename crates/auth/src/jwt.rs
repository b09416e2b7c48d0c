//! Bearer tokens (JWT) checked as an OAuth 2.1 resource server: the signature against the
//! issuer's keys (a JWKS URL, cached and fetched again for a key id not seen yet, or a static
//! PEM key), then `iss`, `aud`, `exp` and `nbf`, with an allow-list of asymmetric algorithms:
//! `none` cannot be written in a header jsonwebtoken reads, and HMAC is never accepted, so a
//! token "signed" with the public key as an HMAC secret is refused before any key is used.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use mcpflow_model::auth::{JwtAlgorithm, JwtConfig};
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::principal::{Principal, Via};
use crate::scopes::Scopes;
use crate::tools::ToolGlobs;
use crate::verified::Verified;

/// A key id not in the cache fetches the JWKS again, but not more often than this: a client
/// inventing key ids cannot make this server hammer the issuer.
const REFETCH_INTERVAL: Duration = Duration::from_secs(1);
/// Keys are fetched again after this long even when every key id is known, so a key the
/// issuer withdrew stops being accepted.
const MAX_AGE: Duration = Duration::from_secs(600);
/// Largest JWKS document read.
const MAX_JWKS_BYTES: usize = 1024 * 1024;
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a token was refused: said in the log at debug level and in `error_description`;
/// never containing the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenRefusal(pub String);

fn refuse(why: impl Into<String>) -> TokenRefusal {
    TokenRefusal(why.into())
}

pub struct JwtVerifier {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    scope_claim: String,
    tools_claim: Option<String>,
    claims: Vec<String>,
    leeway: u64,
    keys: Keys,
    verified: Verified,
}

enum Keys {
    Static(Vec<DecodingKey>),
    Jwks(Jwks),
}

struct Jwks {
    url: String,
    http: reqwest::Client,
    cache: RwLock<Arc<Cached>>,
    /// Held while fetching, so concurrent misses fetch once.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Cached {
    /// By key id; a key without one is kept under "".
    keys: HashMap<String, (DecodingKey, Option<Algorithm>)>,
    fetched: Option<Instant>,
}

fn algorithm(a: JwtAlgorithm) -> Algorithm {
    match a {
        JwtAlgorithm::RS256 => Algorithm::RS256,
        JwtAlgorithm::RS384 => Algorithm::RS384,
        JwtAlgorithm::RS512 => Algorithm::RS512,
        JwtAlgorithm::PS256 => Algorithm::PS256,
        JwtAlgorithm::PS384 => Algorithm::PS384,
        JwtAlgorithm::PS512 => Algorithm::PS512,
        JwtAlgorithm::ES256 => Algorithm::ES256,
        JwtAlgorithm::ES384 => Algorithm::ES384,
        JwtAlgorithm::EdDSA => Algorithm::EdDSA,
    }
}

impl JwtVerifier {
    /// `audience` is `jwt.audience`, else `auth.resource`: one of them is required, since a
    /// token minted for another service must not be accepted here.
    pub fn new(config: &JwtConfig, resource: Option<&str>) -> Result<JwtVerifier, ConfigError> {
        crate::crypto::install();
        let audience = config
            .audience
            .as_deref()
            .or(resource)
            .ok_or_else(|| {
                ConfigError(
                    "auth.jwt: name the audience tokens must carry (`auth.jwt.audience`, or \
                     `auth.resource`, this server's URL)"
                        .into(),
                )
            })?
            .to_owned();
        let algorithms = if config.algorithms.is_empty() {
            vec![Algorithm::RS256, Algorithm::ES256]
        } else {
            config.algorithms.iter().copied().map(algorithm).collect()
        };
        let keys = match (&config.jwks_url, &config.public_key) {
            (Some(url), None) => Keys::Jwks(Jwks {
                url: url.clone(),
                http: reqwest::Client::builder()
                    .timeout(FETCH_TIMEOUT)
                    .build()
                    .map_err(|e| ConfigError(format!("auth.jwt: no HTTP client: {e}")))?,
                cache: RwLock::new(Arc::new(Cached::default())),
                fetching: tokio::sync::Mutex::new(()),
            }),
            (None, Some(pem)) => {
                let pem = pem.as_bytes();
                let keys: Vec<DecodingKey> = [
                    DecodingKey::from_rsa_pem(pem).ok(),
                    DecodingKey::from_ec_pem(pem).ok(),
                    DecodingKey::from_ed_pem(pem).ok(),
                ]
                .into_iter()
                .flatten()
                .collect();
                if keys.is_empty() {
                    return Err(ConfigError(
                        "auth.jwt.publicKey: not a PEM public key (RSA, EC or Ed25519)".into(),
                    ));
                }
                Keys::Static(keys)
            }
            _ => {
                return Err(ConfigError(
                    "auth.jwt: give exactly one of `jwksUrl` and `publicKey`".into(),
                ));
            }
        };
        Ok(JwtVerifier {
            issuer: config.issuer.clone(),
            audience,
            algorithms,
            scope_claim: config.scope_claim.clone().unwrap_or_else(|| "scope".into()),
            tools_claim: config.tools_claim.clone(),
            claims: config.claims.clone(),
            leeway: config.leeway_seconds.unwrap_or(30),
            keys,
            verified: Verified::default(),
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The principal a token proves, or why it proves nothing. A token verified in the last
    /// minute and still unexpired is not checked again (`verified.rs`).
    pub async fn verify(&self, token: &str) -> Result<Principal, TokenRefusal> {
        if let Some(principal) = self.verified.get(token) {
            return Ok(principal);
        }
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| refuse("not a JWT with a supported algorithm"))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(refuse(format!("algorithm {:?} not accepted", header.alg)));
        }
        let key = self.key(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| refuse(describe(e.kind())))?;
        // `exp` is required and was checked: a number of seconds.
        let expires = data
            .claims
            .get("exp")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let principal = self.principal(data.claims);
        if expires.is_finite() && expires > 0.0 {
            // Saturating: the float is a clock reading, never past u64's range in practice.
            let valid_until = (expires as u64).saturating_add(self.leeway);
            self.verified.keep(token, &principal, valid_until);
        }
        Ok(principal)
    }

    fn principal(&self, claims: Map<String, Value>) -> Principal {
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let scopes = match words(claims.get(&self.scope_claim)) {
            Some(w) => Scopes::parse_words(w.iter().map(String::as_str)),
            // Some issuers (Azure AD, Okta) write `scp`.
            None => Scopes::parse_words(
                words(claims.get("scp"))
                    .unwrap_or_default()
                    .iter()
                    .map(String::as_str),
            ),
        };
        let tools = self
            .tools_claim
            .as_ref()
            .and_then(|c| words(claims.get(c)))
            .map_or(ToolGlobs::All, ToolGlobs::only);
        let chosen: Map<String, Value> = self
            .claims
            .iter()
            .filter_map(|c| claims.get(c).map(|v| (c.clone(), v.clone())))
            .collect();
        Principal::new(subject, None, Via::Jwt, scopes, tools, chosen)
    }

    async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, TokenRefusal> {
        match &self.keys {
            Keys::Static(keys) => keys
                .iter()
                .find(|k| k.family() == alg.family())
                .cloned()
                .ok_or_else(|| refuse("the configured public key does not fit the algorithm")),
            Keys::Jwks(jwks) => jwks.key(kid.unwrap_or_default(), alg).await,
        }
    }
}

impl Jwks {
    fn cached(&self) -> Arc<Cached> {
        self.cache.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    async fn key(&self, kid: &str, alg: Algorithm) -> Result<DecodingKey, TokenRefusal> {
        let cached = self.cached();
        let stale = cached.fetched.is_none_or(|t| t.elapsed() > MAX_AGE);
        let found = if stale {
            None
        } else {
            cached.keys.get(kid).cloned()
        };
        let (key, key_alg) = match found {
            Some(k) => k,
            None => {
                self.refresh().await;
                self.cached()
                    .keys
                    .get(kid)
                    .cloned()
                    .ok_or_else(|| refuse(format!("unknown key id {kid:?}")))?
            }
        };
        // A key published for one algorithm is not used with another (RFC 7517 `alg`).
        if key_alg.is_some_and(|a| a != alg) || key.family() != alg.family() {
            return Err(refuse("the key does not fit the token's algorithm"));
        }
        Ok(key)
    }

    /// Fetches the keys unless another task just did; a failure keeps the keys held.
    async fn refresh(&self) {
        let _one = self.fetching.lock().await;
        if self
            .cached()
            .fetched
            .is_some_and(|t| t.elapsed() < REFETCH_INTERVAL)
        {
            return;
        }
        match self.fetch().await {
            Ok(keys) => {
                tracing::debug!(keys = keys.len(), url = %self.url, "JWKS fetched");
                let fresh = Arc::new(Cached {
                    keys,
                    fetched: Some(Instant::now()),
                });
                *self.cache.write().unwrap_or_else(|e| e.into_inner()) = fresh;
            }
            Err(why) => {
                tracing::warn!(url = %self.url, "cannot fetch the JWKS: {why}");
                let held = self.cached();
                let kept = Arc::new(Cached {
                    keys: held.keys.clone(),
                    fetched: Some(Instant::now()),
                });
                *self.cache.write().unwrap_or_else(|e| e.into_inner()) = kept;
            }
        }
    }

    async fn fetch(&self) -> Result<HashMap<String, (DecodingKey, Option<Algorithm>)>, String> {
        let mut response = self
            .http
            .get(&self.url)
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| e.without_url().to_string())?
        {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("larger than {MAX_JWKS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        let set: JwkSet =
            serde_json::from_slice(&body).map_err(|e| format!("not a JWK set: {e}"))?;
        let mut keys = HashMap::new();
        for jwk in &set.keys {
            // Only signature keys; a symmetric key in a JWKS is never trusted.
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            if key.family() == jsonwebtoken::AlgorithmFamily::Hmac {
                continue;
            }
            let alg = jwk
                .common
                .key_algorithm
                .as_ref()
                .and_then(|a| format!("{a:?}").parse::<Algorithm>().ok());
            let kid = jwk.common.key_id.clone().unwrap_or_default();
            keys.insert(kid, (key, alg));
        }
        Ok(keys)
    }
}

/// A space-separated string or an array of strings.
fn words(value: Option<&Value>) -> Option<Vec<String>> {
    match value? {
        Value::String(s) => Some(s.split_whitespace().map(str::to_owned).collect()),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

fn describe(kind: &jsonwebtoken::errors::ErrorKind) -> &'static str {
    use jsonwebtoken::errors::ErrorKind as K;
    match kind {
        K::ExpiredSignature => "the token has expired",
        K::ImmatureSignature => "the token is not valid yet (nbf)",
        K::InvalidIssuer => "the token is from another issuer",
        K::InvalidAudience => "the token is for another audience",
        K::InvalidSignature => "the token's signature does not verify",
        K::MissingRequiredClaim(_) => "the token lacks exp, iss, aud or sub",
        K::InvalidAlgorithm => "the token's algorithm does not fit its key",
        _ => "the token cannot be read or verified",
    }
}
