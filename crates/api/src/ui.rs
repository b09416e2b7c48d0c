//! The web UI (issue #17) at `/ui`: the files `ui/` builds to (`crates/api/ui-dist/`,
//! committed), embedded in the binary by `build.rs`, so no Node.js is needed to build or run
//! mcpflow. `/ui` and `/ui/` answer `index.html`; a path under `/ui/` that names no file and
//! is not under `assets/` answers it too (the app's routes); hashed `assets/` are cached for a
//! year, `index.html` revalidated. A gzip copy built beside a file is sent to a client that
//! accepts it. The UI talks only to this server's `/api`, behind the same Host/Origin guard.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

mod assets {
    include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));
}

/// What the page may load: its own scripts, styles and API; inline styles for React Flow's
/// positioning; nothing framed, nothing from elsewhere.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
                   base-uri 'none'; form-action 'none'";

pub fn router() -> Router {
    Router::new()
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/{*path}", get(file))
}

fn find(path: &str) -> Option<&'static [u8]> {
    assets::FILES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, body)| *body)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("woff2") => "font/woff2",
        Some("ico") => "image/x-icon",
        _ => "application/octet-stream",
    }
}

fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|p| {
                let p = p.trim();
                p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000"
            });
            name.eq_ignore_ascii_case("gzip") && !refused
        })
}

fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some(body) = find(path) else {
        return not_built();
    };
    let gzip = accepts_gzip(headers)
        .then(|| find(&format!("{path}.gz")))
        .flatten();
    let cache = if path.starts_with("assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut response = (StatusCode::OK, gzip.unwrap_or(body)).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if path.ends_with(".html") {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
    }
    if gzip.is_some() {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    response
}

fn not_built() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "this mcpflow was built without its web UI: run `scripts/ui build` (Node.js) in the \
         source tree, then build mcpflow again\n",
    )
        .into_response()
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

async fn file(Path(path): Path<String>, headers: HeaderMap) -> Response {
    if find(&path).is_some() && !path.ends_with(".gz") {
        return serve(&path, &headers);
    }
    if path.starts_with("assets/") || path.ends_with(".gz") {
        return (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("no file /ui/{path} in this build of the UI\n"),
        )
            .into_response();
    }
    // One of the app's own routes: the app reads it from the URL.
    serve("index.html", &headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("")),
        );
        h
    }

    #[test]
    fn gzip_is_sent_only_to_who_accepts_it() {
        assert!(accepts_gzip(&with("gzip, deflate, br")));
        assert!(accepts_gzip(&with("br;q=1.0, GZIP;q=0.5")));
        assert!(!accepts_gzip(&with("gzip;q=0, br")));
        assert!(!accepts_gzip(&with("identity")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn every_embedded_gzip_has_its_file() {
        for (path, _) in assets::FILES {
            if let Some(plain) = path.strip_suffix(".gz") {
                assert!(find(plain).is_some(), "{path} without {plain}");
            }
        }
    }
}
