//! The HTTP guard's Host/Origin check against DNS rebinding, on header bytes as a client sends
//! them. Beyond "no panic": with the default options (loopback only), whatever passes must name
//! a loopback host, in the grammar of `Host` (RFC 9110: `host[:port]`, IPv6 in brackets) and of
//! `Origin` (`scheme://host[:port]`).
//!
//! The check is the server's own source file, compiled here on its own: it depends on std and
//! `http` only, so this target does not build the server (axum, rmcp, the engine, the API, ...)
//! under sanitizers.
#![no_main]

// The server's file as is; what only the server uses (LOOPBACK_HOSTS) is dead code here.
#[allow(dead_code)]
#[path = "../../crates/server/src/http/origin.rs"]
mod origin;

use arbitrary::Arbitrary;
use http::{HeaderMap, HeaderValue, header};
use libfuzzer_sys::fuzz_target;
use origin::OriginPolicy;

#[derive(Arbitrary, Debug)]
struct Request {
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    host: Option<Vec<u8>>,
    origin: Option<Vec<u8>>,
}

fuzz_target!(|r: Request| {
    let mut headers = HeaderMap::new();
    // What hyper would hand on: only bytes a header value may hold.
    for (name, value) in [(header::HOST, &r.host), (header::ORIGIN, &r.origin)] {
        if let Some(Ok(value)) = value.as_deref().map(HeaderValue::from_bytes) {
            headers.insert(name, value);
        }
    }
    let default = r.allowed_hosts.is_empty() && r.allowed_origins.is_empty();
    // What the guard builds from `HttpOptions` (`Guard::new`).
    let policy = OriginPolicy::new(&r.allowed_hosts, &r.allowed_origins);
    if policy.check(&headers).is_err() || !default {
        return;
    }
    let text = |name| {
        headers
            .get(name)
            .map(|v| v.to_str().expect("checked as text"))
    };
    let host = text(header::HOST).expect("a request without Host is refused");
    assert!(
        loopback(host),
        "Host {host:?} passed the loopback-only check"
    );
    if let Some(origin) = text(header::ORIGIN) {
        let authority = origin
            .trim()
            .trim_end_matches('/')
            .to_ascii_lowercase()
            .split_once("://")
            .filter(|(scheme, _)| matches!(*scheme, "http" | "https"))
            .map(|(_, authority)| authority.to_owned());
        assert!(
            authority.as_deref().is_some_and(loopback),
            "Origin {origin:?} passed the loopback-only check"
        );
    }
});

/// `localhost`, `127.0.0.1` or `[::1]` (bare `::1` too), then nothing or `:port`; in any case,
/// with surrounding spaces.
fn loopback(authority: &str) -> bool {
    let a = authority.trim().to_ascii_lowercase();
    if a == "::1" {
        return true;
    }
    ["localhost", "127.0.0.1", "[::1]"].iter().any(|host| {
        a.strip_prefix(host).is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .strip_prefix(':')
                    .is_some_and(|port| port.bytes().all(|b| b.is_ascii_digit()))
        })
    })
}
