//! The `Host` and `Origin` checks against DNS rebinding: a pure function of the configured
//! names and a request's headers, which the guard (`guard.rs`) applies to every route.
//!
//! Self-contained on purpose (std and the `http` crate only, nothing of this crate): fuzz/'s
//! `http_guard` target compiles this very file with `#[path]`, so the fuzzer checks the code the
//! server runs without building the whole server (axum, rmcp, the engine, the API) under
//! sanitizers.

use http::{HeaderMap, header};

/// Hosts a server bound to a local port always answers to.
pub(crate) const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Which `Host` and `Origin` values a server accepts.
pub(crate) struct OriginPolicy {
    /// Lower-case hosts (or `host:port` authorities) accepted in `Host` and `Origin`.
    hosts: Vec<String>,
    any_host: bool,
    /// Lower-case origins accepted as written, besides those on an accepted host.
    origins: Vec<String>,
    any_origin: bool,
}

impl OriginPolicy {
    /// The loopback names plus `allowed_hosts`; `allowed_origins` besides the origins on an
    /// accepted host. `*` in either accepts any.
    pub(crate) fn new(allowed_hosts: &[String], allowed_origins: &[String]) -> Self {
        let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
        hosts.extend(allowed_hosts.iter().map(|h| h.to_ascii_lowercase()));
        let origins: Vec<String> = allowed_origins
            .iter()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
            .collect();
        OriginPolicy {
            any_host: hosts.iter().any(|h| h == "*"),
            hosts,
            any_origin: origins.iter().any(|o| o == "*"),
            origins,
        }
    }

    /// `Host` must name this server; an `Origin`, when a browser sends one, must too (or be
    /// listed). A page on evil.example whose name resolves to 127.0.0.1 fails both.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), &'static str> {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return Err("missing or unreadable Host header");
        };
        if !self.host_allowed(host) {
            return Err(
                "Host not allowed (only loopback names are accepted by default, against DNS \
                 rebinding; start mcpflow with `--allowed-host NAME` for each name clients use, \
                 or list them in `http.allowedHosts`)",
            );
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().map_err(|_| "unreadable Origin header")?;
            if !self.origin_allowed(origin) {
                return Err(
                    "Origin not allowed (a browser page's origin must name this server; list \
                     others in `http.allowedOrigins`)",
                );
            }
        }
        Ok(())
    }

    fn host_allowed(&self, authority: &str) -> bool {
        let authority = authority.trim().to_ascii_lowercase();
        self.any_host
            || self
                .hosts
                .iter()
                .any(|h| *h == authority || *h == host_of(&authority))
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        if self.any_origin || self.origins.contains(&origin) {
            return true;
        }
        match origin.split_once("://") {
            Some(("http" | "https", authority)) => self.host_allowed(authority),
            _ => false,
        }
    }
}

/// `host` of `host:port`, `[::1]:port` or `[::1]`.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        // Only `[addr]` or `[addr]:port`: anything after the bracket (`[::1].evil.example`)
        // leaves the authority whole, which no allowed host equals.
        return match rest.split_once(']') {
            Some((addr, "")) => addr,
            Some((addr, port))
                if port
                    .strip_prefix(':')
                    .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) =>
            {
                addr
            }
            _ => authority,
        };
    }
    match authority.rsplit_once(':') {
        // A host with a colon of its own is an IPv6 address written without brackets, which
        // carries no port (`::1:8080` is another address, not `::1` on port 8080): whole.
        Some((host, port)) if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            host
        }
        _ => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(hosts: &[&str], origins: &[&str]) -> OriginPolicy {
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        OriginPolicy::new(&owned(hosts), &owned(origins))
    }

    #[test]
    fn loopback_hosts_pass_with_or_without_port() {
        let g = policy(&[], &[]);
        for h in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:3000",
            "[::1]",
            "::1",
            "LOCALHOST",
        ] {
            assert!(g.host_allowed(h), "{h}");
        }
        for h in [
            "evil.example.com",
            "evil.example.com:8080",
            "127.0.0.2",
            "localhost.evil",
            // Found by fuzz/'s http_guard target: text after the bracket was ignored.
            "[::1].evil.example",
            "[::1]evil",
            "[::1]:",
            "[::1]:80x",
            // Found by http_guard: a bare IPv6 address has no port to strip.
            "::1:",
            "::1:8080",
        ] {
            assert!(!g.host_allowed(h), "{h}");
        }
    }

    #[test]
    fn a_refused_host_is_told_how_to_open_up() {
        let g = policy(&[], &[]);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::HOST,
            "box.lan:8080".parse().expect("a header value"),
        );
        let why = g.check(&headers).expect_err("refused");
        assert!(
            why.contains("--allowed-host") && why.contains("http.allowedHosts"),
            "{why}"
        );
        headers.insert(
            header::HOST,
            "localhost:8080".parse().expect("a header value"),
        );
        headers.insert(
            header::ORIGIN,
            "https://evil.example".parse().expect("a header value"),
        );
        let why = g.check(&headers).expect_err("refused");
        assert!(why.contains("http.allowedOrigins"), "{why}");
    }

    #[test]
    fn configured_hosts_and_origins_open_up() {
        let g = policy(
            &["mcp.example.com", "other:8443"],
            &["https://app.example.org"],
        );
        assert!(g.host_allowed("mcp.example.com:443"));
        assert!(g.host_allowed("other:8443"));
        assert!(!g.host_allowed("other:8444"));
        assert!(g.origin_allowed("https://mcp.example.com"));
        assert!(g.origin_allowed("https://app.example.org/"));
        assert!(g.origin_allowed("http://localhost:5173"));
        assert!(!g.origin_allowed("https://evil.example.com"));
        assert!(!g.origin_allowed("null"));
        assert!(policy(&["*"], &[]).host_allowed("anything"));
        assert!(policy(&[], &["*"]).origin_allowed("null"));
    }
}
