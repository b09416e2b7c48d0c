//! `mcpflow serve`: a config's tools over stdio or HTTP, with the store and upkeep attached.

use std::process::ExitCode;

use std::sync::Arc;
use std::time::Duration;

use mcpflow_server::{HttpListener, HttpOptions, LiveServer};
use mcpflow_upstream::UpstreamPool;

use crate::cli::ServeArgs;
use crate::load::load;
use crate::reload::Reloader;

/// `mcpflow serve`: the config's tools over MCP, on stdio until the client disconnects, or
/// with `--http` on Streamable HTTP until SIGINT/SIGTERM.
pub async fn serve(args: ServeArgs) -> ExitCode {
    let (loaded, engine) = match load(&args.config) {
        Ok(x) => x,
        Err(code) => return code,
    };
    // Metrics are kept only where they can be scraped: the HTTP listener, or an address of
    // their own.
    let scrapeable = args.http.is_some()
        || loaded
            .config
            .telemetry
            .as_ref()
            .and_then(|t| t.metrics.as_ref())
            .is_some_and(|m| m.address.is_some());
    let telemetry = match crate::telemetry::start(
        loaded.config.telemetry.as_ref(),
        &loaded.config.server.name,
        scrapeable,
    ) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", args.config.config.display());
            return ExitCode::from(2);
        }
    };
    // Checked before anything starts: a key whose variable is unset is a config error.
    let auth = match mcpflow_auth::Auth::from_config(
        loaded.config.auth.as_ref(),
        &loaded.config.server.name,
        |var| std::env::var(var).ok(),
    ) {
        Ok(a) => Arc::new(a),
        Err(e) => {
            eprintln!("{}: {e}", args.config.config.display());
            return ExitCode::from(2);
        }
    };
    let pool = engine.pool().clone();
    let owner = crate::state::owner(args.instance.as_deref());
    let upkeep = match crate::state::start(&engine, &loaded, &args, owner.clone()).await {
        Ok(u) => u,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return ExitCode::FAILURE;
        }
    };
    let store = engine.durability().map(|d| d.store.clone());
    let audit = match crate::audit::start(&loaded, auth.is_enforced(), store) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{}: audit: {e}", args.config.config.display());
            pool.shutdown().await;
            return ExitCode::from(2);
        }
    };
    let reloader = Reloader::new(&args, owner, loaded.clone(), engine.clone(), upkeep);
    let server = match reloader.compose(&loaded, engine) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args.config.config.display());
            return ExitCode::from(2);
        }
    };
    // Proxied tool names are checked against each other (and against the built-in tools'
    // namespace) once the upstreams answer.
    let checked = server.check_names().await;
    if let Err(e) = checked {
        eprintln!("{}: {e}", args.config.config.display());
        pool.shutdown().await;
        return ExitCode::from(2);
    }
    // The tool list can change whenever the config does (watch, SIGHUP, saves).
    let live = LiveServer::new(server, true);
    if let Some(audit) = &audit {
        let _ = live.set_audit(audit.clone());
        crate::audit::reopen_on_hangup(audit.clone());
    }
    reloader.serve(live.clone());
    reloader.on_hangup();
    if args.watch_ms > 0 {
        reloader.watch(Duration::from_millis(args.watch_ms));
    }
    let metrics_address = loaded
        .config
        .telemetry
        .as_ref()
        .and_then(|t| t.metrics.as_ref())
        .and_then(|m| m.address.as_deref());
    if let Some(address) = metrics_address
        && let Err(e) = serve_metrics(address, &live).await
    {
        eprintln!(
            "{}: telemetry.metrics.address: {e}",
            args.config.config.display()
        );
        pool.shutdown().await;
        return ExitCode::from(2);
    }
    let result = match args.http {
        None => {
            tracing::info!(
                config = %args.config.config.display(),
                server = %loaded.config.server.name,
                tools = loaded.config.tools.len(),
                "serving MCP over stdio"
            );
            let principal = match stdio_principal(&auth).await {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("mcpflow: {e}");
                    reloader.stop().await;
                    pool.shutdown().await;
                    return ExitCode::from(2);
                }
            };
            // The token a principal was made of, for upstreams marked `forwardCallerToken`.
            let credential = principal
                .as_ref()
                .and_then(|_| std::env::var("MCPFLOW_TOKEN").ok())
                .map(|t| mcpflow_auth::Credential::new(&t));
            let options = mcpflow_server::StdioOptions {
                write_timeout: Duration::from_secs(args.stdio_write_timeout),
                principal,
                credential,
                ..Default::default()
            };
            mcpflow_server::serve_stdio_with(live, options).await
        }
        Some(addr) => {
            let mut options = HttpOptions::from_config(loaded.config.http.as_ref());
            options.allowed_hosts.extend(args.allowed_hosts);
            options.readiness = Some(upstreams_answer(pool.clone(), reloader.clone()));
            options.api = Some(run_api(&live, reloader.clone()));
            options.auth = Some(auth);
            serve_http(live, addr, options).await
        }
    };
    reloader.stop().await;
    pool.shutdown().await;
    if let Some(audit) = &audit {
        audit.finish().await;
    }
    telemetry.shutdown().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Over stdio the client is whoever started the process: under `auth:` it proves who it is
/// with `MCPFLOW_TOKEN` (an API key or a JWT), or gets the anonymous scopes.
async fn stdio_principal(
    auth: &mcpflow_auth::Auth,
) -> Result<Option<mcpflow_auth::Principal>, String> {
    if !auth.is_enforced() {
        return Ok(None);
    }
    let credential = std::env::var("MCPFLOW_TOKEN").ok();
    match auth.authenticate(credential.as_deref()).await {
        // One client per process: one that may not use MCP at all is told at start.
        Ok(p) if auth.check_mcp(&p).is_err() => Err(match credential {
            None => "MCPFLOW_TOKEN is not set, and `auth.anonymous` grants no MCP scope \
                     (tools:list or tools:call)"
                .to_owned(),
            Some(_) => "MCPFLOW_TOKEN grants no MCP scope (tools:list or tools:call)".to_owned(),
        }),
        Ok(p) => Ok(Some(p)),
        Err(mcpflow_auth::Refusal::Unauthenticated { why, .. }) => {
            Err(format!("MCPFLOW_TOKEN refused: {why}"))
        }
        Err(mcpflow_auth::Refusal::InsufficientScope(s)) => {
            Err(format!("MCPFLOW_TOKEN lacks the scope {s}"))
        }
    }
}

/// The HTTP run API over the live server's current engine, hearing of every run from now on.
/// Node positions are those of the config served now (a reload moves them).
fn run_api(live: &LiveServer, reloader: Arc<Reloader>) -> mcpflow_api::Api {
    let current = live.clone();
    let locator = reloader.clone();
    let api = mcpflow_api::Api::new(
        move || current.current().engine().clone(),
        move |pointer| {
            locator
                .sources()
                .locate(pointer)
                .map(|p| mcpflow_api::Position {
                    file: p.file,
                    line: p.line,
                    col: p.col,
                })
        },
    );
    // The editor's endpoints read, check and save tools through the authoring tools' path.
    let api = api.with_publish(reloader.clone());
    let api = api.with_reload(move || {
        let reloader = reloader.clone();
        Box::pin(async move { reloader.reload(crate::reload::Trigger::Admin).await })
    });
    api.attach(live.current().engine());
    // Replicas on one PostgreSQL store watch and debug each other's runs.
    api.join_fleet();
    api
}

async fn serve_http(
    server: LiveServer,
    addr: std::net::SocketAddr,
    options: HttpOptions,
) -> Result<(), mcpflow_server::ServerError> {
    let shutdown = shutdown_signal();
    let listener = HttpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    // On stderr, as a line a person or a script can read: stdout stays free.
    eprintln!("mcpflow: listening on http://{local}/mcp");
    listener.serve(server, options, shutdown).await?;
    eprintln!("mcpflow: stopped");
    Ok(())
}

/// `/metrics` on a listener of its own (`telemetry.metrics.address`): how a server that
/// serves over stdio is scraped. It lives as long as the process.
async fn serve_metrics(address: &str, live: &LiveServer) -> Result<(), String> {
    let addr: std::net::SocketAddr = address
        .parse()
        .map_err(|e| format!("`{address}` is not host:port ({e})"))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!("mcpflow: metrics on http://{local}/metrics");
    let current = live.clone();
    let app = mcpflow_api::metrics::router(move || current.current().engine().clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!("the metrics listener stopped: {e}");
        }
    });
    Ok(())
}

/// `/readyz`: every upstream answers (started or reconnected if needed) within 5 s; a
/// refused config reload is shown (the server is still ready: the previous config serves).
fn upstreams_answer(pool: UpstreamPool, reloader: Arc<Reloader>) -> mcpflow_server::ReadinessCheck {
    const PATIENCE: Duration = Duration::from_secs(5);
    Arc::new(move || {
        let pool = pool.clone();
        let note = reloader.note();
        Box::pin(async move {
            let names = pool.servers();
            let checks = names.iter().map(|name| {
                let pool = &pool;
                async move {
                    match tokio::time::timeout(PATIENCE, pool.server_info(name)).await {
                        Ok(Ok(_)) => Ok(()),
                        Ok(Err(e)) => Err(format!("upstream `{name}` unreachable: {e}")),
                        Err(_) => Err(format!("upstream `{name}` did not answer within 5 s")),
                    }
                }
            });
            let failures: Vec<String> = futures::future::join_all(checks)
                .await
                .into_iter()
                .filter_map(Result::err)
                .collect();
            if failures.is_empty() {
                Ok(note)
            } else {
                Err(failures.join("; "))
            }
        })
    })
}

/// Resolves on SIGINT or SIGTERM (a load balancer's stop), so in-flight calls can finish.
/// The handlers are installed when this is called, not when the future is first polled, so a
/// signal sent right after the address is printed is not lost.
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    async move {
        match (term, int) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("cannot listen for SIGTERM/SIGINT ({e}); stop with SIGKILL");
                std::future::pending::<()>().await;
            }
        }
        tracing::info!("shutting down: no new connections; finishing calls in flight");
    }
}
