//! A client's `tools/call` (a stdio line, an HTTP body) read straight into the message rmcp's
//! handler takes.
//!
//! rmcp reads a client's message as `JsonRpcMessage`, an untagged union: serde buffers the whole
//! message as `Content`, tries it as each variant in turn (every failure an allocated error),
//! then buffers it twice more for the flattened request and `params._meta`. A `tools/call` is
//! nearly every line a busy client sends, so it is read here in one pass as exactly that; any
//! line this does not read (another method, a field the envelope does not have, a duplicate
//! key) goes rmcp's way as before, and errors are rmcp's to word.

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, ClientRequest, JsonRpcMessage,
    JsonRpcRequest, JsonRpcVersion2_0, RequestId,
};
use rmcp::service::RxJsonRpcMessage;

pub(crate) fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ToolCall {
        jsonrpc: JsonRpcVersion2_0,
        id: RequestId,
        #[serde(rename = "method")]
        _method: CallToolRequestMethod,
        params: CallToolRequestParams,
    }
    let call = serde_json::from_slice::<ToolCall>(line).ok()?;
    let mut params = call.params;
    // Where rmcp's reading leaves `_meta` (a progress token, say): in the request's
    // extensions, not in its params.
    let meta = params.meta.take();
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(meta);
    }
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: call.jsonrpc,
        id: call.id,
        request: ClientRequest::CallToolRequest(request),
    }))
}

#[cfg(test)]
mod tests {
    use rmcp::model::{GetExtensions, RequestMetaObject};
    use serde_json::{Value, json};

    use super::*;

    fn by_rmcp(line: &str) -> RxJsonRpcMessage<RoleServer> {
        serde_json::from_str(line).expect("rmcp reads the line")
    }

    fn meta_of(message: &RxJsonRpcMessage<RoleServer>) -> Option<Value> {
        let JsonRpcMessage::Request(request) = message else {
            return None;
        };
        let ClientRequest::CallToolRequest(call) = &request.request else {
            return None;
        };
        assert!(call.params.meta.is_none(), "_meta is in extensions only");
        let meta = call.extensions().get::<RequestMetaObject>();
        meta.map(|m| serde_json::to_value(m).expect("meta serialises"))
    }

    #[test]
    fn reads_a_call_as_rmcp_does() {
        let lines = [
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo"}}),
            json!({"jsonrpc": "2.0", "id": "a-1", "method": "tools/call",
                   "params": {"name": "sum", "arguments": {"n": [1, {"x": null}], "s": "é"}}}),
            json!({"params": {"_meta": {"progressToken": 3, "trace": {"k": "v"}}, "name": "t",
                   "arguments": {}}, "method": "tools/call", "id": 1, "jsonrpc": "2.0"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "t", "requestState": "opaque", "extra": true}}),
        ];
        for line in lines {
            let line = line.to_string();
            let fast = tool_call(line.as_bytes()).expect("read as a tools/call");
            let slow = by_rmcp(&line);
            assert_eq!(
                serde_json::to_value(&fast).expect("serialises"),
                serde_json::to_value(&slow).expect("serialises"),
                "{line}"
            );
            assert_eq!(meta_of(&fast), meta_of(&slow), "{line}");
        }
    }

    #[test]
    fn leaves_every_other_line_to_rmcp() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"x":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ];
        for line in lines {
            assert!(tool_call(line.as_bytes()).is_none(), "{line}");
        }
    }
}
