//! [`Auth`]: the `auth:` section made ready: who a credential belongs to, and what a
//! request without one may do.

use std::sync::Arc;

use mcpflow_model::auth::{AuthConfig, RateLimit, Scope};

use crate::endpoints::MCP_SCOPES;
use crate::error::ConfigError;
use crate::jwt::JwtVerifier;
use crate::keys::KeyStore;
use crate::limits::{Limiter, RunQuota, Runs};
use crate::principal::Principal;
use crate::scopes::Scopes;

/// Why a request is not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 401: no credential where one is needed, or one that proves nothing (`invalid` says which).
    Unauthenticated { invalid: bool, why: String },
    /// 403: a known caller without the scope.
    InsufficientScope(Scope),
}

/// Access control for one server. Built once at start; shared by every request.
pub struct Auth {
    enforced: bool,
    keys: KeyStore,
    jwt: Option<JwtVerifier>,
    anonymous: Scopes,
    resource: Option<String>,
    server_name: String,
    rate_limit: Option<RateLimit>,
    limiter: Limiter,
    max_concurrent_runs: Option<u32>,
    runs: Arc<Runs>,
    /// The one principal of a server without `auth:`, shared by every request.
    open: Principal,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("enforced", &self.enforced)
            .field("keys", &self.keys)
            .field("jwt", &self.jwt.as_ref().map(JwtVerifier::issuer))
            .field("anonymous", &self.anonymous)
            .finish()
    }
}

impl Auth {
    /// No `auth:` section: every request is served, as the open principal.
    pub fn open() -> Auth {
        Auth {
            enforced: false,
            keys: KeyStore::default(),
            jwt: None,
            anonymous: Scopes::NONE,
            resource: None,
            server_name: String::new(),
            rate_limit: None,
            limiter: Limiter::default(),
            max_concurrent_runs: None,
            runs: Arc::default(),
            open: Principal::open(),
        }
    }

    /// The `auth:` section (`None`: [`Auth::open`]); `env` reads the environment.
    pub fn from_config(
        config: Option<&AuthConfig>,
        server_name: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Auth, ConfigError> {
        let Some(config) = config else {
            return Ok(Auth::open());
        };
        let jwt = config
            .jwt
            .as_ref()
            .map(|j| JwtVerifier::new(j, config.resource.as_deref()))
            .transpose()?;
        Ok(Auth {
            enforced: true,
            keys: KeyStore::from_config(&config.keys, env)?,
            jwt,
            anonymous: Scopes::of(config.anonymous.iter().copied()),
            resource: config.resource.clone(),
            server_name: server_name.to_owned(),
            rate_limit: config.rate_limit,
            limiter: Limiter::default(),
            max_concurrent_runs: config.max_concurrent_runs,
            runs: Arc::default(),
            open: Principal::open(),
        })
    }

    /// The principal every request of a server without `auth:` is.
    pub fn open_principal(&self) -> &Principal {
        &self.open
    }

    /// Whether an `auth:` section is in force.
    pub fn is_enforced(&self) -> bool {
        self.enforced
    }

    pub fn resource(&self) -> Option<&str> {
        self.resource.as_deref()
    }

    pub fn issuer(&self) -> Option<&str> {
        self.jwt.as_ref().map(JwtVerifier::issuer)
    }

    pub fn server_name(&self) -> &str {
        &self.server_name
    }

    /// Who `credential` (a key or a JWT; `None` when the request carries none) is, with its
    /// limit of runs in flight.
    pub async fn authenticate(&self, credential: Option<&str>) -> Result<Principal, Refusal> {
        if !self.enforced {
            return Ok(self.open.clone());
        }
        let principal = self.identify(credential).await?;
        let max = principal
            .key()
            .and_then(|k| self.keys.max_concurrent_runs(k))
            .or(self.max_concurrent_runs);
        let quota = max.map(|max| RunQuota::new(self.runs.clone(), principal.subject(), max));
        Ok(principal.with_run_quota(quota))
    }

    async fn identify(&self, credential: Option<&str>) -> Result<Principal, Refusal> {
        let Some(credential) = credential.map(str::trim).filter(|c| !c.is_empty()) else {
            return Ok(Principal::anonymous(self.anonymous));
        };
        if let Some(p) = self.keys.principal(credential) {
            return Ok(p);
        }
        match &self.jwt {
            // A JWT is three base64url parts; a key has no dot.
            Some(jwt) if credential.split('.').count() == 3 => {
                jwt.verify(credential).await.map_err(|e| {
                    tracing::debug!("bearer token refused: {e}");
                    Refusal::Unauthenticated {
                        invalid: true,
                        why: e.0,
                    }
                })
            }
            _ => {
                tracing::debug!("credential refused: no such key");
                Err(Refusal::Unauthenticated {
                    invalid: true,
                    why: "unknown API key or token".into(),
                })
            }
        }
    }

    /// One request of `principal` against its rate limit (its key's, else `auth.rateLimit`):
    /// `Err` is how long until it may send the next.
    pub fn take_rate(&self, principal: &Principal) -> Result<(), std::time::Duration> {
        let limit = principal
            .key()
            .and_then(|k| self.keys.rate_limit(k))
            .or(self.rate_limit);
        match limit {
            Some(limit) if self.enforced => self.limiter.take(principal.subject(), limit),
            _ => Ok(()),
        }
    }

    /// Whether `principal` may use `scope`; an anonymous caller without it is asked to
    /// authenticate (401), a known one is refused (403).
    pub fn check(&self, principal: &Principal, scope: Scope) -> Result<(), Refusal> {
        if principal.allows(scope) {
            return Ok(());
        }
        Err(self.lacking(principal, scope))
    }

    /// Whether `principal` may hold an MCP session at all (any MCP scope).
    pub fn check_mcp(&self, principal: &Principal) -> Result<(), Refusal> {
        if MCP_SCOPES.iter().any(|s| principal.allows(*s)) {
            return Ok(());
        }
        Err(self.lacking(principal, MCP_SCOPES[0]))
    }

    /// Whether `principal` is anyone this server knows: a caller whose credential proved who
    /// it is, or an anonymous one when the config grants anonymous callers some scope. An
    /// anonymous caller who may do nothing is asked to authenticate.
    pub fn check_known(&self, principal: &Principal) -> Result<(), Refusal> {
        if principal.via() != crate::principal::Via::Anonymous || !principal.scopes().is_empty() {
            return Ok(());
        }
        Err(Refusal::Unauthenticated {
            invalid: false,
            why: "authentication required".into(),
        })
    }

    fn lacking(&self, principal: &Principal, scope: Scope) -> Refusal {
        if principal.via() == crate::principal::Via::Anonymous {
            Refusal::Unauthenticated {
                invalid: false,
                why: format!("authentication required (scope {scope})"),
            }
        } else {
            Refusal::InsufficientScope(scope)
        }
    }
}
