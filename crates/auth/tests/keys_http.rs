//! API keys behind the real middleware on a loopback listener: scopes, anonymous scopes, and
//! per-key rate limits (429 with `Retry-After` for one key while another is served).

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use mcpflow_auth::{Auth, new_key};
use mcpflow_model::auth::{ApiKeyConfig, AuthConfig, RateLimit, Scope};

async fn serve(config: AuthConfig) -> String {
    let auth = Arc::new(Auth::from_config(Some(&config), "test", |_| None).expect("valid"));
    let app = Router::new()
        .route("/mcp", post(|| async { "{}" }))
        .route("/metrics", get(|| async { "ok" }))
        .route("/healthz", get(|| async { "ok" }))
        .route("/undeclared", get(|| async { "reached" }))
        .route(
            "/api/whoami",
            get(|request: axum::extract::Request| async move {
                mcpflow_auth::http::principal_of(request.extensions())
                    .map(|p| format!("{} {}", p.subject(), p.scopes().words()))
                    .unwrap_or_default()
            }),
        )
        .route("/ui/{*path}", get(|| async { "page" }))
        .layer(axum::middleware::from_fn_with_state(
            auth,
            mcpflow_auth::http::enforce,
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

fn key(name: &str, hash: &str, scopes: &[Scope], rate_limit: Option<RateLimit>) -> ApiKeyConfig {
    ApiKeyConfig {
        name: name.into(),
        hash: Some(hash.into()),
        env: None,
        scopes: scopes.to_vec(),
        tools: None,
        rate_limit,
        max_concurrent_runs: None,
    }
}

async fn get_with(base: &str, path: &str, header: Option<(&str, &str)>) -> reqwest::Response {
    let mut request = reqwest::Client::new().get(format!("{base}{path}"));
    if let Some((k, v)) = header {
        request = request.header(k, v);
    }
    request.send().await.expect("sent")
}

#[tokio::test]
async fn a_rate_limited_key_gets_429_while_another_is_served() {
    let (slow, fast) = (new_key().expect("key"), new_key().expect("key"));
    let limit = RateLimit {
        requests_per_second: 1,
        burst: Some(2),
    };
    let base = serve(AuthConfig {
        keys: vec![
            key("slow", &slow.hash, &[Scope::Metrics], Some(limit)),
            key("fast", &fast.hash, &[Scope::Metrics], None),
        ],
        ..AuthConfig::default()
    })
    .await;
    let bearer = |k: &str| format!("Bearer {k}");
    let (slow_auth, fast_auth) = (bearer(&slow.key), bearer(&fast.key));
    for _ in 0..2 {
        let r = get_with(&base, "/metrics", Some(("authorization", &slow_auth))).await;
        assert_eq!(r.status(), 200);
    }
    let refused = get_with(&base, "/metrics", Some(("authorization", &slow_auth))).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    for _ in 0..5 {
        let r = get_with(&base, "/metrics", Some(("authorization", &fast_auth))).await;
        assert_eq!(r.status(), 200);
    }
    // Public endpoints are not counted.
    assert_eq!(
        get_with(&base, "/healthz", Some(("authorization", &slow_auth)))
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn keys_anonymous_scopes_and_undeclared_endpoints() {
    let k = new_key().expect("key");
    let base = serve(AuthConfig {
        anonymous: vec![Scope::Metrics],
        keys: vec![key("ci", &k.hash, &[Scope::Admin], None)],
        ..AuthConfig::default()
    })
    .await;
    // Anonymous: metrics yes, MCP asked to authenticate.
    assert_eq!(get_with(&base, "/metrics", None).await.status(), 200);
    let mcp = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .expect("sent");
    assert_eq!(mcp.status(), 401);
    // A bad credential is refused even where anonymous callers are served.
    let wrong = get_with(&base, "/metrics", Some(("x-api-key", "mcpf_nope"))).await;
    assert_eq!(wrong.status(), 401);
    assert!(
        wrong.headers()["www-authenticate"]
            .to_str()
            .expect("ASCII")
            .contains("invalid_token")
    );
    // The key by either header.
    assert_eq!(
        get_with(&base, "/metrics", Some(("x-api-key", &k.key)))
            .await
            .status(),
        200
    );
    // A route nobody declared is unreachable, even for admin.
    let undeclared = get_with(&base, "/undeclared", Some(("x-api-key", &k.key))).await;
    assert_eq!(undeclared.status(), 404);
    assert_ne!(undeclared.text().await.expect("body"), "reached");
}

/// `/api/whoami` asks only that the server know the caller: any key, whatever its scopes; no
/// credential is asked to authenticate unless anonymous callers are granted something. The
/// web UI's files are public.
#[tokio::test]
async fn whoami_needs_a_known_caller_and_no_scope() {
    let k = new_key().expect("key");
    let keys = vec![key("watcher", &k.hash, &[Scope::Metrics], None)];
    let closed = serve(AuthConfig {
        keys: keys.clone(),
        ..AuthConfig::default()
    })
    .await;
    let anonymous = get_with(&closed, "/api/whoami", None).await;
    assert_eq!(anonymous.status(), 401);
    assert!(
        anonymous.headers()["www-authenticate"]
            .to_str()
            .expect("ASCII")
            .starts_with("Bearer resource_metadata=")
    );
    let bearer = format!("Bearer {}", k.key);
    let known = get_with(&closed, "/api/whoami", Some(("authorization", &bearer))).await;
    assert_eq!(known.status(), 200);
    assert_eq!(known.text().await.expect("body"), "watcher metrics");
    let wrong = get_with(&closed, "/api/whoami", Some(("x-api-key", "mcpf_nope"))).await;
    assert_eq!(wrong.status(), 401);
    let page = get_with(&closed, "/ui/assets/app.js", None).await;
    assert_eq!(page.status(), 200);
    assert_eq!(page.text().await.expect("body"), "page");

    let open_to_all = serve(AuthConfig {
        anonymous: vec![Scope::RunsRead],
        keys,
        ..AuthConfig::default()
    })
    .await;
    let anonymous = get_with(&open_to_all, "/api/whoami", None).await;
    assert_eq!(anonymous.status(), 200);
    assert_eq!(anonymous.text().await.expect("body"), "anonymous runs:read");
}
