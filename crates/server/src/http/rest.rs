//! The REST face's way into MCP (`mcpflow_api::rest`): each REST request becomes one stateless
//! (2026-07-28) MCP request to this listener's own `/mcp` (its `calls` layer, then rmcp's
//! service), carrying the REST request's extensions (the principal access control put there),
//! Host and trace context. So a REST call takes the path every MCP request takes: the
//! observation (metrics,
//! spans), the handler (hidden tools, hooks, the gateway or the engine, runs in flight, the
//! audit line, `$caller`). What is here is only the framing, and the answer read back as plain
//! outcomes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method, Request, Response, Uri, header};
use base64::Engine as _;
use futures::StreamExt;
use futures::future::BoxFuture;
use mcpflow_api::rest::{McpEndpoint, Refusal, ToolAnswer, Waiting};
use rmcp::ServerHandler;
use serde_json::{Map, Value, json};

use super::ReadinessCheck;
use crate::live::LiveServer;
use crate::server::GraphServer;

/// The era whose requests need no session or handshake: each REST request is one of them.
const VERSION: &str = "2026-07-28";

/// Each exchange carries one request, so any id does.
const ID: u64 = 1;

/// JSON-RPC error codes the REST face tells apart.
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
const PARSE_ERROR: i64 = -32700;
/// rmcp's answer when the SEP-2243 headers do not match the body.
const HEADER_MISMATCH: i64 = -32020;

pub(super) struct Bridge {
    /// `/mcp` as served: its layers (`calls`), then rmcp's service.
    pub(super) mcp: axum::Router,
    pub(super) live: LiveServer,
    pub(super) readiness: Option<ReadinessCheck>,
    pub(super) stopping: Arc<AtomicBool>,
}

/// A JSON-RPC error: its code and message.
type RpcError = (i64, String);

impl Bridge {
    /// Sends `method` with `params` as the caller of `from`; the JSON-RPC result.
    fn send(
        &self,
        from: &Parts,
        method: &'static str,
        params: Map<String, Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let request = self.request(from, method, params);
        let mcp = self.mcp.clone();
        Box::pin(async move {
            match tower::ServiceExt::oneshot(mcp, request).await {
                Ok(response) => read_answer(response).await,
                Err(never) => match never {},
            }
        })
    }

    fn request(
        &self,
        from: &Parts,
        method: &'static str,
        mut params: Map<String, Value>,
    ) -> Request<Body> {
        params.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientInfo":
                    {"name": "mcpflow-rest", "version": env!("CARGO_PKG_VERSION")},
                // None: an await node then waits as a session the REST client continues over
                // the run API, rather than asking a client that cannot answer.
                "io.modelcontextprotocol/clientCapabilities": {},
            }),
        );
        let mut headers = vec![
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (
                header::ACCEPT,
                "application/json, text/event-stream".to_owned(),
            ),
            (
                HeaderName::from_static("mcp-protocol-version"),
                VERSION.into(),
            ),
            (HeaderName::from_static("mcp-method"), method.into()),
        ];
        if let Some(name) = params.get("name").and_then(Value::as_str) {
            headers.push((HeaderName::from_static("mcp-name"), header_text(name)));
            let tool = self.live.get_tool(name);
            let arguments = params.get("arguments");
            if let (Some(tool), Some(arguments)) = (tool, arguments) {
                headers.extend(param_headers(&tool.input_schema, arguments));
            }
        }
        let message = json!({"jsonrpc": "2.0", "id": ID, "method": method, "params": params});
        let mut request = Request::new(Body::from(message.to_string()));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = Uri::from_static("/mcp");
        *request.extensions_mut() = from.extensions.clone();
        let out = request.headers_mut();
        for (name, value) in headers {
            if let Ok(value) = HeaderValue::from_str(&value) {
                out.insert(name, value);
            }
        }
        // rmcp checks Host again (the guard already has); the trace context makes the MCP
        // request's span a child of the caller's.
        for name in [header::HOST.as_str(), "traceparent", "tracestate"] {
            if let Some(value) = from.headers.get(name) {
                out.insert(HeaderName::from_static(name), value.clone());
            }
        }
        request
    }
}

impl McpEndpoint for Bridge {
    fn list_tools(&self, request: &Parts) -> BoxFuture<'static, Result<Vec<Value>, Refusal>> {
        let answer = self.send(request, "tools/list", Map::new());
        Box::pin(async move {
            let mut result = answer.await.map_err(refusal)?;
            match result.get_mut("tools").map(Value::take) {
                Some(Value::Array(tools)) => Ok(tools),
                _ => Err(Refusal::Failed(format!(
                    "the MCP endpoint's tools/list answer has no tools: {result}"
                ))),
            }
        })
    }

    fn call_tool(
        &self,
        request: &Parts,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'static, Result<ToolAnswer, Refusal>> {
        let mut params = Map::new();
        params.insert("name".into(), json!(tool));
        params.insert("arguments".into(), Value::Object(arguments));
        let answer = self.send(request, "tools/call", params);
        let kind = Kind::of(&self.live.current(), tool);
        let tool = tool.to_owned();
        Box::pin(async move {
            let result = answer.await.map_err(refusal)?;
            tool_answer(&tool, result, kind)
        })
    }

    fn health(&self) -> BoxFuture<'static, Result<String, String>> {
        Box::pin(super::ready(
            self.stopping.load(Ordering::Relaxed),
            self.readiness.clone(),
        ))
    }
}

/// What the answer of a tool can be read as, besides a plain `CallToolResult`.
#[derive(Debug, Clone, Copy, Default)]
struct Kind {
    /// A graph tool: an output that is not an object came as one text block of JSON
    /// (`result.rs`), which a REST client gets back as the value it is.
    graph: bool,
    /// It can end waiting for input: a graph tool that can wait, or its `_continue`
    /// companion (which answers the next wait).
    may_wait: bool,
}

impl Kind {
    fn of(server: &GraphServer, tool: &str) -> Kind {
        let engine = server.engine();
        let can_wait = |name: &str| engine.graph(name).is_some_and(|g| g.can_wait());
        Kind {
            graph: engine.graph(tool).is_some(),
            may_wait: can_wait(tool) || tool.strip_suffix("_continue").is_some_and(can_wait),
        }
    }
}

fn refusal((code, message): RpcError) -> Refusal {
    match code {
        // Hidden tools are refused with the same words (`GraphServer::unknown_tool`).
        INVALID_PARAMS if message.starts_with("unknown tool `") => Refusal::UnknownTool(message),
        c if c == i64::from(crate::server::TOO_MANY_RUNS.0) => Refusal::TooManyRuns(message),
        INVALID_PARAMS | INVALID_REQUEST | PARSE_ERROR | HEADER_MISMATCH => {
            Refusal::Invalid(message)
        }
        _ => Refusal::Failed(message),
    }
}

/// A `CallToolResult` (as JSON) in plain terms.
fn tool_answer(tool: &str, mut result: Value, kind: Kind) -> Result<ToolAnswer, Refusal> {
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        // Only a proxied upstream can ask this of a caller that declared no elicitation.
        return Err(Refusal::Failed(format!(
            "`{tool}` asked its caller for input inline, which a REST call cannot answer; \
             call it over MCP"
        )));
    }
    let is_error = result.get("isError") == Some(&Value::Bool(true));
    let structured = result
        .get_mut("structuredContent")
        .map(Value::take)
        .filter(|v| !v.is_null());
    let content = result
        .get_mut("content")
        .map(Value::take)
        .unwrap_or_else(|| json!([]));
    let error = is_error.then(|| text_of(&content));
    let waiting = structured
        .as_ref()
        .filter(|_| kind.may_wait && !is_error)
        .filter(|s| s.get("status").and_then(Value::as_str) == Some("waiting"))
        .and_then(|s| {
            Some(Waiting {
                session_id: s.get("sessionId")?.as_str()?.to_owned(),
                run_id: s.get("runId").and_then(Value::as_str).map(str::to_owned),
            })
        });
    let result = match structured {
        Some(s) => s,
        None if kind.graph && !is_error => graph_output(content),
        None => content,
    };
    Ok(ToolAnswer {
        is_error,
        result,
        error,
        waiting,
    })
}

/// A graph tool's output that is not an object, from the one text block it came as; the
/// blocks as they are when they are not that (a post hook rewrote them).
fn graph_output(content: Value) -> Value {
    let [block] = content.as_array().map(Vec::as_slice).unwrap_or_default() else {
        return content;
    };
    let text = block
        .get("text")
        .and_then(Value::as_str)
        .filter(|_| block.get("type").and_then(Value::as_str) == Some("text"));
    match text.map(serde_json::from_str::<Value>) {
        Some(Ok(value)) => value,
        _ => content,
    }
}

/// The text blocks of a result's content, one per line.
fn text_of(content: &Value) -> String {
    let texts: Vec<&str> = content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    texts.join("\n")
}

/// What rmcp answered: a JSON body, or an SSE stream (when the handler sent a notification
/// before its answer) read up to the answer.
async fn read_answer<B>(response: Response<B>) -> Result<Value, RpcError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    let status = response.status();
    let sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut body = Body::new(response.into_body()).into_data_stream();
    let mut read = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| (0, format!("the MCP endpoint's answer broke off: {e}")))?;
        read.extend_from_slice(&chunk);
        if sse && let Some(message) = sse_answer(&read) {
            return unwrap(message);
        }
    }
    match serde_json::from_slice::<Value>(&read) {
        Ok(message) if !sse => unwrap(message),
        _ => Err((
            0,
            format!(
                "the MCP endpoint answered {status} without a JSON-RPC answer: {}",
                String::from_utf8_lossy(&read)
            ),
        )),
    }
}

/// The answer among the complete events of an SSE stream read so far.
fn sse_answer(read: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(read);
    let text = text.replace("\r\n", "\n");
    let complete = &text[..text.rfind("\n\n")?];
    complete.split("\n\n").find_map(|event| {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        let message: Value = serde_json::from_str(&data.join("\n")).ok()?;
        let answers = message.get("result").is_some() || message.get("error").is_some();
        (answers && message.get("id") == Some(&json!(ID))).then_some(message)
    })
}

fn unwrap(mut message: Value) -> Result<Value, RpcError> {
    if let Some(result) = message.get_mut("result") {
        return Ok(result.take());
    }
    let error = message.get("error");
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let text = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map_or_else(|| message.to_string(), str::to_owned);
    Err((code, text))
}

/// SEP-2243's `Mcp-Param-*` headers: the arguments a tool's input schema marks with
/// `x-mcp-header`, which rmcp requires to match the body.
fn param_headers(schema: &Map<String, Value>, arguments: &Value) -> Vec<(HeaderName, String)> {
    let mut out = Vec::new();
    let mut marked = Vec::new();
    annotated(schema.get("properties"), &mut Vec::new(), &mut marked);
    for (path, name) in marked {
        let value = path.iter().try_fold(arguments, |v, key| v.get(key));
        let text = match value {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => continue,
        };
        if let Ok(name) = HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes()) {
            out.push((name, header_text(&text)));
        }
    }
    out
}

fn annotated<'a>(
    properties: Option<&'a Value>,
    path: &mut Vec<&'a str>,
    out: &mut Vec<(Vec<&'a str>, &'a str)>,
) {
    let Some(Value::Object(properties)) = properties else {
        return;
    };
    for (name, schema) in properties {
        path.push(name);
        if let Some(Value::String(header)) = schema.get("x-mcp-header")
            && !header.is_empty()
        {
            out.push((path.clone(), header));
        }
        annotated(schema.get("properties"), path, out);
        path.pop();
    }
}

/// A value as SEP-2243 sends it in a header: as is, or `=?base64?…?=` when it could not
/// travel as is (outer blanks, control or non-ASCII characters, or the wrapper's own look).
fn header_text(value: &str) -> String {
    let outer_blank = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let unsafe_char = value.chars().any(|c| !(' '..='~').contains(&c));
    let looks_wrapped = value.starts_with("=?base64?") && value.ends_with("?=");
    if outer_blank || unsafe_char || looks_wrapped {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        format!("=?base64?{encoded}?=")
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_wrapped_only_when_they_must_be() {
        assert_eq!(header_text("echo"), "echo");
        assert_eq!(header_text("a b"), "a b");
        assert_eq!(header_text(" a"), "=?base64?IGE=?=");
        assert_eq!(header_text("é"), "=?base64?w6k=?=");
        assert_eq!(header_text("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
    }

    #[test]
    fn marked_arguments_become_param_headers() {
        let schema = json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "deep": {"properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
            "absent": {"type": "string", "x-mcp-header": "Absent"},
        }});
        let schema = schema.as_object().cloned().expect("an object");
        let headers = param_headers(&schema, &json!({"region": "eu", "deep": {"n": 3}}));
        let headers: Vec<(String, String)> = headers
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        assert_eq!(
            headers,
            [
                ("mcp-param-region".to_owned(), "eu".to_owned()),
                ("mcp-param-n".to_owned(), "3".to_owned())
            ]
        );
    }

    #[test]
    fn an_answer_is_found_in_an_sse_stream_once_complete() {
        let progress = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n";
        let answer = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n";
        assert_eq!(sse_answer(progress.as_bytes()), None);
        let half = format!("{progress}{}", &answer[..20]);
        assert_eq!(sse_answer(half.as_bytes()), None);
        let whole = format!("{progress}{answer}");
        let found = sse_answer(whole.as_bytes()).expect("the answer");
        assert_eq!(unwrap(found), Ok(json!({"content": []})));
    }

    #[test]
    fn results_read_as_plain_answers() {
        let waiting = json!({"content": [], "isError": false, "structuredContent":
            {"status": "waiting", "sessionId": "s", "runId": "r"}});
        let waits = Kind {
            graph: true,
            may_wait: true,
        };
        let answer = tool_answer("t", waiting.clone(), waits).expect("answer");
        assert_eq!(
            answer.waiting,
            Some(Waiting {
                session_id: "s".into(),
                run_id: Some("r".into())
            })
        );
        // A tool that cannot wait only looks like it.
        let plain = Kind::default();
        assert_eq!(tool_answer("t", waiting, plain).expect("a").waiting, None);
        let failed = json!({"content": [{"type": "text", "text": "boom"}], "isError": true});
        let answer = tool_answer("t", failed.clone(), waits).expect("answer");
        assert!(answer.is_error);
        assert_eq!(answer.error.as_deref(), Some("boom"));
        assert_eq!(answer.result, json!([{"type": "text", "text": "boom"}]));
        // A graph tool's output that is not an object is given back as itself; another tool's
        // text stays content.
        let listed = json!({"content": [{"type": "text", "text": "[2,4]"}]});
        let answer = tool_answer("t", listed.clone(), waits).expect("answer");
        assert_eq!(answer.result, json!([2, 4]));
        let answer = tool_answer("t", listed.clone(), plain).expect("answer");
        assert_eq!(answer.result, listed["content"]);
        let prose = json!({"content": [{"type": "text", "text": "not json"}]});
        let answer = tool_answer("t", prose.clone(), waits).expect("answer");
        assert_eq!(answer.result, prose["content"]);
        assert_eq!(
            refusal((-32602, "unknown tool `x`; this server has: a".into())),
            Refusal::UnknownTool("unknown tool `x`; this server has: a".into())
        );
        assert_eq!(
            refusal((-32001, "too many".into())),
            Refusal::TooManyRuns("too many".into())
        );
    }
}
