//! A stdio upstream's wire: one JSON-RPC message per line each way, and what a line that
//! cannot be used means for the requests waiting on it.
//!
//! rmcp's own stdio transport skips a line it cannot parse, a line over its cap and an
//! answer under an id it does not know, with a log line at most: the request that answer was
//! for then waits out its whole timeout, whose message blames slowness. Here each such line
//! ends the request(s) it must have been for at once, with an error response in place of the
//! answer (marked [`BROKEN_ANSWER`], which `Connection` turns into
//! [`UpstreamError::BrokenAnswer`](crate::UpstreamError::BrokenAnswer)):
//! - a line that is not JSON-RPC but names a request in flight (`"id": 3` in its first bytes,
//!   or a JSON object with that id): that request;
//! - a line over the cap: the request its first bytes name, else every request in flight
//!   (a message that size is an answer, and which one cannot be told);
//! - an answer under an id mcpflow never sent (nor gave up on), or an error naming no id:
//!   every request in flight.
//!
//! A line that names no request (a banner or a log line printed to stdout) is logged and
//! skipped: the answer behind it still arrives.

use std::collections::{HashMap, VecDeque};
use std::io::ErrorKind;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorCode, ErrorData,
    JsonRpcMessage, JsonRpcResponse, JsonRpcVersion2_0, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The key in an error response's `data` that marks it as made here for a broken answer.
pub(crate) const BROKEN_ANSWER: &str = "io.mcpflow/brokenAnswer";

/// How much of a broken line an error message shows.
const SHOWN_BYTES: usize = 120;

/// How many ids of abandoned requests are remembered, so that their late answers are not
/// taken for answers under a wrong id.
const ABANDONED_KEPT: usize = 256;

/// The ids between `send` (rmcp's requests going out) and `receive` (answers coming in).
#[derive(Default)]
struct Requests {
    /// Each request awaiting its answer, and whether it is a `tools/call`.
    in_flight: HashMap<RequestId, bool>,
    /// How many of `in_flight` are `tools/call`s.
    tool_calls: usize,
    /// Cancelled by mcpflow, most recent last: an answer may still be on its way.
    abandoned: VecDeque<RequestId>,
}

impl Requests {
    fn sent(&mut self, id: RequestId, tool_call: bool) {
        if let Some(was) = self.in_flight.insert(id, tool_call) {
            self.tool_calls -= usize::from(was);
        }
        self.tool_calls += usize::from(tool_call);
    }

    /// The answer to `id` came: whether it was awaited, and if so whether it is a `tools/call`.
    fn answered(&mut self, id: &RequestId) -> Option<bool> {
        let tool_call = self.in_flight.remove(id)?;
        self.tool_calls -= usize::from(tool_call);
        Some(tool_call)
    }

    /// No answer to `id` is awaited any more; one may still come, and is not a wrong id.
    fn give_up(&mut self, id: &RequestId) {
        if self.answered(id).is_none() {
            return;
        }
        if self.abandoned.len() == ABANDONED_KEPT {
            self.abandoned.pop_front();
        }
        self.abandoned.push_back(id.clone());
    }
}

/// The child's stdout and stdin as an rmcp transport (see the module docs).
pub(crate) struct Lines<R, W> {
    server: Arc<str>,
    read: BufReader<R>,
    line: Vec<u8>,
    /// The start of a line over the cap whose rest is being skipped.
    skipping: Option<Vec<u8>>,
    max_line: usize,
    write: Arc<tokio::sync::Mutex<Option<W>>>,
    requests: Arc<Mutex<Requests>>,
    /// Error responses made for broken answers, handed to rmcp before the next line is read.
    made: VecDeque<ServerJsonRpcMessage>,
}

enum Read {
    Line,
    /// A line over the cap ended; its first bytes.
    Oversized(Vec<u8>),
    Eof,
}

impl<R: AsyncRead + Unpin + Send, W: AsyncWrite + Unpin + Send + 'static> Lines<R, W> {
    pub fn new(server: Arc<str>, read: R, write: W, max_line: usize) -> Self {
        Lines {
            server,
            read: BufReader::new(read),
            line: Vec::new(),
            skipping: None,
            max_line: max_line.max(1),
            write: Arc::new(tokio::sync::Mutex::new(Some(write))),
            requests: Arc::default(),
            made: VecDeque::new(),
        }
    }

    fn requests(&self) -> MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One `\n`-terminated line into `self.line`, never holding more than the cap. Cancel
    /// safe: what was read stays in `self`, and the next call goes on from there.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::Eof);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if let Some(start) = &mut self.skipping {
                keep_start(start, &available[..take]);
            } else if self.line.len() + take > self.max_line {
                let mut start = std::mem::take(&mut self.line);
                start.truncate(SHOWN_BYTES);
                keep_start(&mut start, &available[..take]);
                self.skipping = Some(start);
            } else {
                self.line.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if newline.is_some() {
                return Ok(match self.skipping.take() {
                    Some(start) => Read::Oversized(start),
                    None => Read::Line,
                });
            }
        }
    }

    /// What to hand rmcp for one line read whole, if anything.
    fn take_line(&mut self) -> Option<ServerJsonRpcMessage> {
        let line = std::mem::take(&mut self.line);
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        let outcome = if text.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            match self.tool_answer(text) {
                Some(message) => self.checked(message),
                None => match serde_json::from_slice::<ServerJsonRpcMessage>(text) {
                    Ok(message) => self.checked(message),
                    Err(error) => {
                        self.unreadable(text, &error);
                        None
                    }
                },
            }
        };
        // The buffer's capacity is kept for the next line, up to a modest size.
        self.line = line;
        self.line.clear();
        if self.line.capacity() > 1 << 20 {
            self.line.shrink_to(1 << 20);
        }
        outcome
    }

    /// `text` read as the answer to a `tools/call` in flight, if it is one.
    ///
    /// rmcp reads every answer as `ServerResult`, an untagged union that tries sixteen result
    /// types before `CallToolResult`, each failure an allocated error: a sizeable part of a
    /// proxied call. An answer is read as the result its request asked for; anything this
    /// does not read (another request's answer, an error, a notification, a result that is
    /// not `complete`, a field the envelope does not have) goes rmcp's way, as before.
    fn tool_answer(&self, text: &[u8]) -> Option<ServerJsonRpcMessage> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct ToolAnswer {
            jsonrpc: JsonRpcVersion2_0,
            id: RequestId,
            result: CallToolResult,
        }
        if self.requests().tool_calls == 0 {
            return None;
        }
        let answer = serde_json::from_slice::<ToolAnswer>(text).ok()?;
        if self.requests().in_flight.get(&answer.id) != Some(&true) {
            return None;
        }
        Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: answer.jsonrpc,
            id: answer.id,
            result: ServerResult::CallToolResult(answer.result),
        }))
    }

    /// An answer under an id mcpflow did not send, or an error naming none, fails every
    /// request in flight; anything else goes on to rmcp.
    fn checked(&mut self, message: ServerJsonRpcMessage) -> Option<ServerJsonRpcMessage> {
        let (id, error) = match &message {
            JsonRpcMessage::Response(response) => (Some(&response.id), None),
            JsonRpcMessage::Error(error) => (error.id.as_ref(), Some(&error.error)),
            _ => return Some(message),
        };
        let Some(id) = id else {
            let error = error.map_or_else(String::new, |e| {
                format!(": {} (JSON-RPC error {})", e.message, e.code.0)
            });
            self.fail_all(&format!(
                "it answered with an error that names no request{error}"
            ));
            return None;
        };
        let mut requests = self.requests();
        if requests.answered(id).is_some() || requests.abandoned.contains(id) {
            return Some(message);
        }
        drop(requests);
        self.fail_all(&format!(
            "it answered under id {}, which names no request mcpflow sent",
            show_id(id)
        ));
        None
    }

    /// A line rmcp could not read: the request it names fails; a line naming none is noise.
    fn unreadable(&mut self, text: &[u8], error: &serde_json::Error) {
        let value = serde_json::from_slice::<Value>(text).ok();
        if let Some(Value::Object(object)) = &value
            && object.contains_key("method")
        {
            // A notification or request of a shape rmcp does not know: not an answer.
            tracing::warn!(server = %self.server, line = %shown(text), %error, "upstream sent a message mcpflow cannot read; ignored");
            return;
        }
        let id = match &value {
            Some(Value::Object(object)) => object.get("id").and_then(id_of),
            Some(_) => None,
            None => id_in(text),
        };
        let reason = format!(
            "its answer is not valid JSON-RPC ({error}); it began: {}",
            shown(text)
        );
        let awaited = id.filter(|id| self.requests().in_flight.contains_key(id));
        match awaited {
            Some(id) => self.fail(id, &reason),
            None => {
                tracing::warn!(server = %self.server, line = %shown(text), "upstream wrote a line to stdout that is not JSON-RPC; ignored");
            }
        }
    }

    /// A line over the cap was skipped: the request its start names fails, else all in flight.
    fn oversized(&mut self, start: &[u8]) {
        let reason = format!(
            "it sent a message longer than {} bytes, the most mcpflow reads from a stdio \
             server in one line; it began: {}",
            self.max_line,
            shown(start)
        );
        let id = id_in(start);
        let (awaited, abandoned) = {
            let requests = self.requests();
            id.as_ref().map_or((false, false), |id| {
                (
                    requests.in_flight.contains_key(id),
                    requests.abandoned.contains(id),
                )
            })
        };
        match id {
            Some(id) if awaited => self.fail(id, &reason),
            Some(_) if abandoned => {
                tracing::warn!(server = %self.server, "upstream's late answer to an abandoned request was over the line cap; skipped");
            }
            _ => self.fail_all(&reason),
        }
    }

    fn fail(&mut self, id: RequestId, reason: &str) {
        self.requests().give_up(&id);
        tracing::warn!(server = %self.server, id = %show_id(&id), reason, "upstream broke the protocol; failing the request");
        self.made.push_back(broken(id, reason));
    }

    fn fail_all(&mut self, reason: &str) {
        let ids: Vec<RequestId> = {
            let mut requests = self.requests();
            let ids: Vec<RequestId> = requests.in_flight.keys().cloned().collect();
            ids.iter().for_each(|id| requests.give_up(id));
            ids
        };
        tracing::warn!(server = %self.server, requests = ids.len(), reason, "upstream broke the protocol; failing every request in flight");
        self.made
            .extend(ids.into_iter().map(|id| broken(id, reason)));
    }
}

impl<R, W> Transport<RoleClient> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        {
            let mut requests = self.requests();
            match &item {
                JsonRpcMessage::Request(request) => {
                    let tool_call = matches!(request.request, ClientRequest::CallToolRequest(_));
                    requests.sent(request.id.clone(), tool_call);
                }
                JsonRpcMessage::Notification(notification) => {
                    if let ClientNotification::CancelledNotification(cancelled) =
                        &notification.notification
                        && let Some(id) = &cancelled.params.request_id
                    {
                        requests.give_up(id);
                    }
                }
                _ => {}
            }
        }
        let encoded = serde_json::to_vec(&item);
        let write = self.write.clone();
        async move {
            let mut bytes = encoded.map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))?;
            bytes.push(b'\n');
            let mut write = write.lock().await;
            let Some(write) = write.as_mut() else {
                return Err(std::io::Error::new(
                    ErrorKind::NotConnected,
                    "the upstream's stdin is closed",
                ));
            };
            write.write_all(&bytes).await?;
            write.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            if let Some(made) = self.made.pop_front() {
                return Some(made);
            }
            match self.read_line().await {
                Ok(Read::Line) => {
                    if let Some(message) = self.take_line() {
                        return Some(message);
                    }
                }
                Ok(Read::Oversized(start)) => self.oversized(&start),
                Ok(Read::Eof) => return None,
                Err(error) => {
                    tracing::warn!(server = %self.server, %error, "cannot read the upstream's stdout");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Dropping stdin is the end of the MCP stdio session for the child.
        drop(self.write.lock().await.take());
        Ok(())
    }
}

/// The error response that stands for a broken answer to request `id`.
fn broken(id: RequestId, reason: &str) -> ServerJsonRpcMessage {
    let data = serde_json::json!({ BROKEN_ANSWER: true });
    JsonRpcMessage::error(
        ErrorData::new(ErrorCode::INTERNAL_ERROR, reason.to_owned(), Some(data)),
        Some(id),
    )
}

/// Keeps the first [`SHOWN_BYTES`] of a line that is being skipped.
fn keep_start(start: &mut Vec<u8>, more: &[u8]) {
    let room = SHOWN_BYTES.saturating_sub(start.len());
    start.extend_from_slice(&more[..room.min(more.len())]);
}

/// The first bytes of a line, for a message: lossy UTF-8, quoted, `…` when cut.
fn shown(text: &[u8]) -> String {
    let cut = &text[..text.len().min(SHOWN_BYTES)];
    let mut shown = String::from_utf8_lossy(cut).trim_end().to_owned();
    if cut.len() < text.len() {
        shown.push('…');
    }
    format!("`{shown}`")
}

fn show_id(id: &RequestId) -> String {
    match id {
        RequestId::Number(n) => n.to_string(),
        RequestId::String(s) => format!("\"{s}\""),
    }
}

fn id_of(value: &Value) -> Option<RequestId> {
    match value {
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        Value::String(s) => Some(RequestId::String(s.as_str().into())),
        _ => None,
    }
}

/// The id a line that is not JSON (cut off, over the cap) names, from `"id":` in its text.
fn id_in(text: &[u8]) -> Option<RequestId> {
    let at = text.windows(4).position(|w| w == b"\"id\"")?;
    let rest = std::str::from_utf8(&text[at + 4..]).ok().or_else(|| {
        // Cut inside a character: the id is before the cut or not there at all.
        let valid = std::str::from_utf8(&text[at + 4..]).err()?.valid_up_to();
        std::str::from_utf8(&text[at + 4..at + 4 + valid]).ok()
    })?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    if let Some(quoted) = rest.strip_prefix('"') {
        let end = quoted.find('"')?;
        return Some(RequestId::String(quoted[..end].into()));
    }
    let digits: &str = &rest[..rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len())];
    digits.parse().ok().map(RequestId::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_of_a_cut_off_answer_is_read_from_its_text() {
        assert_eq!(
            id_in(br#"{"jsonrpc":"2.0","id":42,"result":{"content":["#),
            Some(RequestId::Number(42))
        );
        assert_eq!(
            id_in(br#"{"id" : "a-1","result""#),
            Some(RequestId::String("a-1".into()))
        );
        assert_eq!(id_in(b"this line is not JSON-RPC"), None);
        assert_eq!(id_in(br#"{"id":"#), None);
    }

    fn lines() -> Lines<tokio::io::Empty, tokio::io::Sink> {
        Lines::new("fx".into(), tokio::io::empty(), tokio::io::sink(), 1 << 20)
    }

    #[test]
    fn a_tool_calls_answer_reads_as_rmcp_reads_it() {
        let lines = lines();
        lines.requests().sent(RequestId::Number(7), true);
        for answer in [
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":null,"isError":true,"_meta":{"k":1}}}"#,
            r#"{"id":7,"result":{"structuredContent":{"a":[1,2]},"resultType":"complete"},"jsonrpc":"2.0"}"#,
        ] {
            let fast = lines.tool_answer(answer.as_bytes());
            let rmcp = serde_json::from_slice::<ServerJsonRpcMessage>(answer.as_bytes()).ok();
            assert!(fast.is_some(), "{answer}");
            assert_eq!(
                serde_json::to_value(&fast).ok(),
                serde_json::to_value(&rmcp).ok(),
                "{answer}"
            );
            assert!(matches!(
                fast,
                Some(JsonRpcMessage::Response(JsonRpcResponse {
                    result: ServerResult::CallToolResult(_),
                    ..
                }))
            ));
        }
    }

    #[test]
    fn what_is_not_a_complete_tool_answer_goes_rmcps_way() {
        let lines = lines();
        lines.requests().sent(RequestId::Number(7), true);
        lines.requests().sent(RequestId::Number(8), false);
        for answer in [
            // Another request's answer, though it looks like a tool's.
            r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#,
            // Not `complete`: another result type of the union.
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            // An error, a notification, a stray field beside the result.
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"error":{"code":1,"message":"x"}}"#,
            // A wrong version.
            r#"{"jsonrpc":"1.0","id":7,"result":{"content":[]}}"#,
        ] {
            assert!(lines.tool_answer(answer.as_bytes()).is_none(), "{answer}");
        }
        // Once answered, a repeat of the same answer is not a tool call's any more.
        assert_eq!(lines.requests().answered(&RequestId::Number(7)), Some(true));
        assert_eq!(lines.requests().tool_calls, 0);
        let late = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert!(lines.tool_answer(late.as_bytes()).is_none());
    }

    #[test]
    fn shown_lines_are_capped() {
        let long = vec![b'x'; SHOWN_BYTES * 2];
        let text = shown(&long);
        assert!(text.ends_with("…`"), "{text}");
        assert!(text.len() < SHOWN_BYTES + 8);
        assert_eq!(shown(b"short\n"), "`short`");
    }

    #[test]
    fn the_start_of_a_skipped_line_is_kept_up_to_the_shown_bytes() {
        let mut start = Vec::new();
        keep_start(&mut start, &[b'a'; 100]);
        keep_start(&mut start, &[b'b'; 100]);
        assert_eq!(start.len(), SHOWN_BYTES);
    }
}
