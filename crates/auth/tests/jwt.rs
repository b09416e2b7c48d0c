//! The JWT resource server against a JWKS served by a local HTTP server, with tokens minted
//! here (RS256 and ES256): each refusal gets its status and `WWW-Authenticate`, behind the
//! real middleware on a real loopback listener.

#[path = "support/mint.rs"]
mod mint;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::extract::Request;
use axum::routing::{get, post};
use mcpflow_auth::Auth;
use mcpflow_auth::http::{enforce, principal_of};
use mcpflow_model::auth::{AuthConfig, JwtConfig};
use mint::{SigningKey, claims, jwks, now, unsigned};
use serde_json::{Value, json};

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "http://127.0.0.1/mcp";

/// The issuer's JWKS endpoint: its document can be replaced (rotation) and its fetches counted.
struct Issuer {
    url: String,
    document: Arc<RwLock<Value>>,
    fetches: Arc<AtomicUsize>,
}

async fn issuer(keys: &[&SigningKey]) -> Issuer {
    let document = Arc::new(RwLock::new(jwks(keys)));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (d, f) = (document.clone(), fetches.clone());
    let app = Router::new().route(
        "/jwks.json",
        get(move || {
            f.fetch_add(1, Ordering::SeqCst);
            let body = d.read().expect("lock").to_string();
            async move { ([("content-type", "application/json")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/jwks.json", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Issuer {
        url,
        document,
        fetches,
    }
}

/// A protected server: `/mcp` answers the caller's subject and scopes, `/metrics` "ok".
async fn protected(config: AuthConfig) -> String {
    let auth = Arc::new(Auth::from_config(Some(&config), "test", |_| None).expect("valid config"));
    let app = Router::new()
        .route(
            "/mcp",
            post(|request: Request| async move {
                let p = principal_of(request.extensions()).expect("the middleware put the caller");
                json!({"subject": p.subject(), "scopes": p.scopes().words(), "claims": p.claims()})
                    .to_string()
            }),
        )
        .route("/metrics", get(|| async { "ok" }))
        .merge(mcpflow_auth::http::metadata_router(auth.clone()))
        .layer(axum::middleware::from_fn_with_state(auth, enforce));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

fn jwt_config(jwks_url: &str) -> AuthConfig {
    AuthConfig {
        resource: Some(AUDIENCE.into()),
        jwt: Some(JwtConfig {
            issuer: ISSUER.into(),
            jwks_url: Some(jwks_url.into()),
            claims: vec!["email".into()],
            ..JwtConfig::default()
        }),
        ..AuthConfig::default()
    }
}

struct Answer {
    status: u16,
    challenge: String,
    body: String,
}

async fn call(base: &str, token: &str, method: &str) -> Answer {
    let response = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": method}).to_string())
        .send()
        .await
        .expect("request sent");
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().expect("ASCII").to_owned())
        .unwrap_or_default();
    Answer {
        status,
        challenge,
        body: response.text().await.expect("body"),
    }
}

fn refused_as_invalid(answer: &Answer, what: &str) {
    assert_eq!(answer.status, 401, "{what}: {}", answer.body);
    assert!(
        answer.challenge.starts_with("Bearer ")
            && answer.challenge.contains("error=\"invalid_token\"")
            && answer.challenge.contains(
                "resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\""
            ),
        "{what}: {}",
        answer.challenge
    );
}

#[tokio::test]
async fn rs256_and_es256_tokens_are_accepted_with_their_scopes_and_claims() {
    let (rsa, ec) = (SigningKey::rsa("r1"), SigningKey::ec("e1"));
    let issuer = issuer(&[&rsa, &ec]).await;
    let base = protected(jwt_config(&issuer.url)).await;
    for key in [&rsa, &ec] {
        let mut c = claims(ISSUER, AUDIENCE, "alice", "tools:call openid");
        c["email"] = json!("alice@example.com");
        c["secret_claim"] = json!("not copied");
        let answer = call(&base, &key.sign(&c), "tools/call").await;
        assert_eq!(answer.status, 200, "{:?}: {}", key.alg, answer.body);
        let body: Value = serde_json::from_str(&answer.body).expect("JSON");
        assert_eq!(
            body,
            json!({"subject": "alice", "scopes": "tools:call",
                   "claims": {"email": "alice@example.com"}})
        );
        // Without `tools:list`, listing is forbidden, and the challenge names the scope.
        let answer = call(&base, &key.sign(&c), "tools/list").await;
        assert_eq!(answer.status, 403, "{}", answer.body);
        assert!(
            answer.challenge.contains("error=\"insufficient_scope\"")
                && answer.challenge.contains("scope=\"tools:list\""),
            "{}",
            answer.challenge
        );
    }
    // Both keys came from one fetch: known key ids do not fetch again.
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn expired_not_yet_valid_foreign_and_misaddressed_tokens_are_refused() {
    let key = SigningKey::rsa("r1");
    let issuer = issuer(&[&key]).await;
    let base = protected(jwt_config(&issuer.url)).await;
    let good = claims(ISSUER, AUDIENCE, "alice", "tools:call");
    let mut expired = good.clone();
    expired["exp"] = json!(now() - 120);
    let mut early = good.clone();
    early["nbf"] = json!(now() + 600);
    let mut foreign = good.clone();
    foreign["iss"] = json!("https://evil.test");
    let mut misaddressed = good.clone();
    misaddressed["aud"] = json!("https://other.test/mcp");
    let mut no_exp = good.clone();
    no_exp.as_object_mut().expect("object").remove("exp");
    for (what, c) in [
        ("expired", expired),
        ("not yet valid", early),
        ("wrong issuer", foreign),
        ("wrong audience", misaddressed),
        ("no exp", no_exp),
    ] {
        refused_as_invalid(&call(&base, &key.sign(&c), "tools/call").await, what);
    }
    assert_eq!(
        call(&base, &key.sign(&good), "tools/call").await.status,
        200
    );
}

/// A token is verified once and then taken from the cache of verified tokens, but only while
/// it is unexpired: the cache never outlives `exp`.
#[tokio::test]
async fn a_token_verified_before_is_refused_once_it_expires() {
    let key = SigningKey::rsa("r1");
    let issuer = issuer(&[&key]).await;
    let mut config = jwt_config(&issuer.url);
    if let Some(jwt) = config.jwt.as_mut() {
        jwt.leeway_seconds = Some(0);
    }
    let base = protected(config).await;
    let mut short = claims(ISSUER, AUDIENCE, "alice", "tools:call");
    short["exp"] = json!(now() + 2);
    let token = key.sign(&short);
    for _ in 0..2 {
        assert_eq!(call(&base, &token, "tools/call").await.status, 200);
    }
    tokio::time::sleep(std::time::Duration::from_millis(3_100)).await;
    refused_as_invalid(
        &call(&base, &token, "tools/call").await,
        "expired after it was cached",
    );
}

#[tokio::test]
async fn alg_none_and_hs256_signed_with_the_public_key_are_refused() {
    let key = SigningKey::rsa("r1");
    let issuer = issuer(&[&key]).await;
    let base = protected(jwt_config(&issuer.url)).await;
    let c = claims(ISSUER, AUDIENCE, "mallory", "admin");
    refused_as_invalid(
        &call(&base, &unsigned("r1", &c), "tools/call").await,
        "alg none",
    );
    refused_as_invalid(
        &call(&base, &key.sign_hs256_with_public_key(&c), "tools/call").await,
        "HS256 with the public key",
    );
    // The same attack against a server configured with the static PEM key.
    let mut config = jwt_config(&issuer.url);
    if let Some(jwt) = config.jwt.as_mut() {
        jwt.jwks_url = None;
        jwt.public_key = Some(key.public_pem.clone());
    }
    let base = protected(config).await;
    refused_as_invalid(
        &call(&base, &key.sign_hs256_with_public_key(&c), "tools/call").await,
        "HS256 with the static public key",
    );
    assert_eq!(call(&base, &key.sign(&c), "tools/call").await.status, 200);
}

#[tokio::test]
async fn an_unknown_kid_is_refused_until_the_issuer_publishes_it() {
    let (old, new) = (SigningKey::rsa("2026-01"), SigningKey::ec("2026-02"));
    let issuer = issuer(&[&old]).await;
    let base = protected(jwt_config(&issuer.url)).await;
    let c = claims(ISSUER, AUDIENCE, "alice", "tools:call");
    assert_eq!(call(&base, &old.sign(&c), "tools/call").await.status, 200);
    refused_as_invalid(
        &call(&base, &new.sign(&c), "tools/call").await,
        "unknown kid",
    );
    // The issuer rotates: the new key is published, the old one withdrawn.
    *issuer.document.write().expect("lock") = jwks(&[&new]);
    // Refetches are at most one a second (a client inventing key ids cannot flood the issuer).
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(call(&base, &new.sign(&c), "tools/call").await.status, 200);
    assert!(issuer.fetches.load(Ordering::SeqCst) >= 2);
    // A flood of unknown key ids costs at most one fetch a second.
    let before = issuer.fetches.load(Ordering::SeqCst);
    for i in 0..20 {
        let other = SigningKey::ec(&format!("invented-{i}"));
        assert_eq!(call(&base, &other.sign(&c), "tools/call").await.status, 401);
    }
    assert!(issuer.fetches.load(Ordering::SeqCst) <= before + 2);
}

#[tokio::test]
async fn no_credential_gets_the_metadata_url_and_the_metadata_names_the_issuer() {
    let key = SigningKey::rsa("r1");
    let issuer = issuer(&[&key]).await;
    let base = protected(jwt_config(&issuer.url)).await;
    let response = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .body("{}")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\""
    );
    let metadata: Value = reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    assert_eq!(metadata["resource"], AUDIENCE);
    assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
    assert!(
        metadata["scopes_supported"]
            .as_array()
            .expect("array")
            .contains(&json!("tools:call"))
    );
}
