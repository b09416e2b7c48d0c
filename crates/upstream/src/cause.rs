//! Why a link to a remote upstream failed, in words a person can act on: the root cause found
//! in an error's chain of sources (connection refused, timed out, name not resolved, TLS, an
//! HTTP status) and what to check, instead of the wrappers' own texts ("Send message error
//! Transport [rmcp::transport::worker::WorkerTransport<…>] error: Client error: …").
//! (It reads rmcp's HTTP error type to reach the cause rmcp does not name as a source.)

use std::error::Error;

use rmcp::transport::streamable_http_client::StreamableHttpError;

/// What went wrong and what to check, in one line; URLs are never part of it.
pub(crate) fn explain(error: &(dyn Error + 'static)) -> String {
    let mut texts = Vec::new();
    let mut refused = false;
    let mut timed_out = false;
    let mut source: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            refused |= io.kind() == std::io::ErrorKind::ConnectionRefused;
            timed_out |= io.kind() == std::io::ErrorKind::TimedOut;
        }
        if let Some(http) = cause.downcast_ref::<reqwest::Error>() {
            timed_out |= http.is_timeout();
        }
        texts.push(cause.to_string());
        source = cause.source();
        // rmcp's HTTP error holds the client's error without naming it as its source.
        if let Some(StreamableHttpError::Client(inner)) =
            cause.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            source = Some(inner);
        }
    }
    explain_texts(&texts, refused, timed_out)
}

/// [`explain`] for a failure already written as text (our own transports' errors).
pub(crate) fn explain_text(text: &str) -> String {
    explain_texts(&[text.to_owned()], false, false)
}

fn explain_texts(texts: &[String], refused: bool, timed_out: bool) -> String {
    let all = texts.join(": ").to_lowercase();
    let deepest = texts.last().map(String::as_str).unwrap_or_default();
    if refused || all.contains("connection refused") {
        return "connection refused: nothing accepts connections at that host and port; check \
                that the server is running and the URL's host and port"
            .into();
    }
    if all.contains("dns error")
        || all.contains("failed to lookup address")
        || all.contains("name or service not known")
    {
        return "the host name does not resolve; check the URL's host".into();
    }
    if all.contains("certificate")
        || all.contains("tls")
        || all.contains("ssl")
        || all.contains("corrupt message")
    {
        return format!(
            "the TLS handshake failed ({}); check the server's certificate, or use http:// if it \
             serves plain HTTP",
            scrub(deepest)
        );
    }
    if timed_out || all.contains("timed out") {
        return "the connection timed out; check that the host is reachable from here (firewall, \
                proxy, VPN) and the URL's port"
            .into();
    }
    if let Some(status) = texts.iter().find_map(|t| http_status(t)) {
        let check = match status.get(..3) {
            Some("401" | "403") => "check the credentials in its `headers`",
            Some("404" | "405") => {
                "check the URL's path (the MCP endpoint, often /mcp, or /sse for `type: sse`)"
            }
            Some(code) if code.starts_with('5') => "the server failed; check its logs",
            _ => "check the URL, the `type` and the `headers`",
        };
        return format!("the server answered HTTP {status}; {check}");
    }
    if all.contains("connection reset")
        || all.contains("connection closed before message completed")
        || all.contains("broken pipe")
    {
        return "the server closed the connection; check the URL's scheme (http or https) and \
                that it speaks MCP"
            .into();
    }
    format!(
        "{}; check the URL, that the server is running and speaks MCP over this `type`, and \
         its `headers`",
        scrub(deepest)
    )
}

/// `404 Not Found…` from a text that says `HTTP 404 Not Found…`.
fn http_status(text: &str) -> Option<String> {
    let at = text.find("HTTP ")? + "HTTP ".len();
    let rest = &text[at..];
    let digits = rest.get(..3)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let status: String = rest.chars().take(120).collect();
    Some(scrub(status.trim_end()))
}

/// The text without URLs (reqwest puts the request's URL, credentials and all, in its
/// messages) and on one line.
fn scrub(text: &str) -> String {
    text.split_whitespace()
        .map(|word| {
            let bare = word.trim_start_matches('(');
            if bare.starts_with("http://") || bare.starts_with("https://") {
                "<url>"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_say_what_to_check() {
        let t = explain_text("Unexpected server response: HTTP 404 Not Found");
        assert!(
            t.starts_with("the server answered HTTP 404 Not Found;"),
            "{t}"
        );
        assert!(t.contains("path"), "{t}");
        assert!(explain_text("POST answered HTTP 401 Unauthorized").contains("credentials"));
    }

    #[test]
    fn urls_stay_out() {
        let t = explain_text("weird failure at https://u:p@h/mcp?key=secret now");
        assert!(!t.contains("secret") && t.contains("<url>"), "{t}");
    }
}
