//! The `auth:` section: who may reach `mcpflow serve`, and what each caller may do there.
//! Without it the server answers anyone who reaches it (only `http:`'s Host/Origin checks
//! apply); with it, every endpoint asks for a credential unless `anonymous` grants its scope.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Access control: API keys and/or bearer tokens (JWT) with scopes and tool globs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthConfig {
    /// This server's public URL of `/mcp` (e.g. `https://mcp.example.com/mcp`): the `resource`
    /// of its OAuth protected-resource metadata and the audience tokens must carry. Default:
    /// the URL the request arrived at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Scopes granted to a request that carries no credential (default none). A request that
    /// carries a bad one is refused, never served anonymously.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anonymous: Vec<Scope>,
    /// API keys, sent as `Authorization: Bearer KEY` (or `X-API-Key: KEY`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<ApiKeyConfig>,
    /// Bearer tokens issued by an OAuth 2.1 authorization server (JWT), checked here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt: Option<JwtConfig>,
    /// Requests per caller (per key, per token subject, anonymous callers together) past which
    /// a request gets 429 with `Retry-After`; a key's own `rateLimit` replaces it. Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Graph runs one caller (per key, per token subject, anonymous callers together) may have
    /// in flight at once; the next `tools/call` or run started gets 429 with `Retry-After: 1`
    /// until one ends or waits for its client. A key's own `maxConcurrentRuns` replaces it.
    /// Default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrent_runs: Option<u32>,
}

/// A token bucket: `requestsPerSecond` refill, `burst` requests at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
    #[schemars(range(min = 1))]
    pub requests_per_second: u32,
    /// Requests that may come at once after a quiet spell (default `requestsPerSecond`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub burst: Option<u32>,
}

/// One API key: where its secret is, and what it may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The key's name: what logs, runs and sessions record as who called.
    pub name: String,
    /// `sha256:SALT:DIGEST`, as `mcpflow keys new` prints it (the key itself is never stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// An environment variable holding the key itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// What the key may do.
    pub scopes: Vec<Scope>,
    /// Globs (`*`, `?`) of the tools, resources and prompts the key sees and may use; default all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// This key's own limit, instead of `auth.rateLimit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// This key's own limit of graph runs in flight, instead of `auth.maxConcurrentRuns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrent_runs: Option<u32>,
}

/// Verification of bearer tokens (JWT) as an OAuth 2.1 resource server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JwtConfig {
    /// The `iss` every token must carry; also the authorization server the metadata names.
    pub issuer: String,
    /// The `aud` a token must contain; default `auth.resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// Where the issuer's public keys are (JWKS); fetched at the first token, and again when a
    /// token names a key id not seen yet (key rotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_url: Option<String>,
    /// A public key in PEM (RSA or EC), instead of a JWKS URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// Signature algorithms accepted (default `[RS256, ES256]`); `none` and HMAC never are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub algorithms: Vec<JwtAlgorithm>,
    /// The claim holding the scopes, a space-separated string or an array (default `scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_claim: Option<String>,
    /// A claim holding the tool globs (an array or a space-separated string); without it, or
    /// when the token lacks it, the token sees every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_claim: Option<String>,
    /// Claims copied into the caller's identity, which expressions and hooks may read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<String>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leeway_seconds: Option<u64>,
}

/// An asymmetric JWS algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum JwtAlgorithm {
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    ES256,
    ES384,
    EdDSA,
}

/// What a caller may do. `admin` may do everything.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum Scope {
    /// `tools/list` (and resource and prompt listings) over MCP.
    #[serde(rename = "tools:list")]
    ToolsList,
    /// `tools/call` (and resource reads, prompts, completion) over MCP.
    #[serde(rename = "tools:call")]
    ToolsCall,
    /// Waiting sessions: listed, continued and cancelled (run API).
    #[serde(rename = "sessions")]
    Sessions,
    /// Runs, their histories and events, graph drawings, the web UI (run API).
    #[serde(rename = "runs:read")]
    RunsRead,
    /// Runs started with debug options; pause, resume, step, stop, breakpoints (run API).
    #[serde(rename = "debug")]
    Debug,
    /// The built-in authoring tools (`mcpflow_*`).
    #[serde(rename = "authoring")]
    Authoring,
    /// `/metrics`.
    #[serde(rename = "metrics")]
    Metrics,
    /// Everything, other principals' sessions included.
    #[serde(rename = "admin")]
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 8] = [
        Scope::ToolsList,
        Scope::ToolsCall,
        Scope::Sessions,
        Scope::RunsRead,
        Scope::Debug,
        Scope::Authoring,
        Scope::Metrics,
        Scope::Admin,
    ];

    /// The name written in configs and tokens.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::ToolsList => "tools:list",
            Scope::ToolsCall => "tools:call",
            Scope::Sessions => "sessions",
            Scope::RunsRead => "runs:read",
            Scope::Debug => "debug",
            Scope::Authoring => "authoring",
            Scope::Metrics => "metrics",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
