//! [`Principal`]: who is calling, as established by a key or a token, and what it may do.

use std::sync::Arc;

use mcpflow_model::auth::Scope;
use serde_json::{Map, Value, json};

use crate::limits::RunQuota;
use crate::scopes::Scopes;
use crate::tools::ToolGlobs;

/// How a principal proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// No credential: the config's `anonymous` scopes.
    Anonymous,
    ApiKey,
    Jwt,
    /// No `auth:` section: the server answers anyone with every scope, as before access control.
    Open,
}

/// The caller of one request. Cheap to clone; carries no secret (no key, no token).
#[derive(Debug, Clone)]
pub struct Principal {
    inner: Arc<Inner>,
    /// Its limit of runs in flight (`maxConcurrentRuns`), set by [`crate::Auth`].
    runs: Option<RunQuota>,
}

#[derive(Debug)]
struct Inner {
    subject: String,
    key: Option<String>,
    via: Via,
    scopes: Scopes,
    tools: ToolGlobs,
    claims: Map<String, Value>,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Anonymous => "anonymous",
            Via::ApiKey => "apiKey",
            Via::Jwt => "jwt",
            Via::Open => "open",
        }
    }
}

impl Principal {
    pub fn new(
        subject: impl Into<String>,
        key: Option<String>,
        via: Via,
        scopes: Scopes,
        tools: ToolGlobs,
        claims: Map<String, Value>,
    ) -> Principal {
        Principal {
            inner: Arc::new(Inner {
                subject: subject.into(),
                key,
                via,
                scopes,
                tools,
                claims,
            }),
            runs: None,
        }
    }

    pub(crate) fn with_run_quota(mut self, quota: Option<RunQuota>) -> Principal {
        self.runs = quota;
        self
    }

    /// How many graph runs this principal may have in flight, and how many it has; `None`:
    /// no limit.
    pub fn run_quota(&self) -> Option<&RunQuota> {
        self.runs.as_ref()
    }

    /// Everyone, with every scope: a server without `auth:`.
    pub fn open() -> Principal {
        Principal::new(
            "anonymous",
            None,
            Via::Open,
            Scopes::of([Scope::Admin]),
            ToolGlobs::All,
            Map::new(),
        )
    }

    /// A request without a credential, given `scopes`.
    pub fn anonymous(scopes: Scopes) -> Principal {
        Principal::new(
            "anonymous",
            None,
            Via::Anonymous,
            scopes,
            ToolGlobs::All,
            Map::new(),
        )
    }

    /// The key's name for a key, the token's `sub` for a token, `anonymous` otherwise.
    pub fn subject(&self) -> &str {
        &self.inner.subject
    }

    pub fn key(&self) -> Option<&str> {
        self.inner.key.as_deref()
    }

    pub fn via(&self) -> Via {
        self.inner.via
    }

    pub fn scopes(&self) -> Scopes {
        self.inner.scopes
    }

    pub fn allows(&self, scope: Scope) -> bool {
        self.inner.scopes.allows(scope)
    }

    /// Whether the tool, prompt or resource `name` is visible to this principal.
    pub fn sees(&self, name: &str) -> bool {
        self.inner.tools.allows(name)
    }

    pub fn tools(&self) -> &ToolGlobs {
        &self.inner.tools
    }

    /// The claims the config chose to copy from the token (none for a key).
    pub fn claims(&self) -> &Map<String, Value> {
        &self.inner.claims
    }

    /// Whether this principal may act on something `owner` started: its own, or `admin`.
    pub fn may_act_for(&self, owner: &str) -> bool {
        self.allows(Scope::Admin) || owner == self.subject()
    }

    /// What expressions (`$caller`) and hooks (`metadata.caller`) read: subject, how it was
    /// established (`open`, `anonymous`, `apiKey`, `jwt`), key name, scopes and the chosen
    /// claims. Never the key or the token.
    pub fn to_json(&self) -> Value {
        json!({
            "subject": self.subject(),
            "via": self.via().as_str(),
            "key": self.key(),
            "scopes": self.scopes().iter().map(Scope::as_str).collect::<Vec<_>>(),
            "claims": self.claims(),
        })
    }
}
