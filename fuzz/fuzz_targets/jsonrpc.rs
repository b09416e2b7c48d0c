//! JSON-RPC as both transports decode it: a stdio stream cut into lines by rmcp's codec (what
//! `mcpflow serve` reads from a client, and from a stdio upstream), and one HTTP body as a
//! whole. Messages are read both as a client's (the server side) and as a server's (an
//! upstream's answers). A message that decodes must encode and decode again.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::async_rw::JsonRpcMessageCodec;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    lines::<ClientJsonRpcMessage>(data);
    lines::<ServerJsonRpcMessage>(data);
    body::<ClientJsonRpcMessage>(data);
    body::<ServerJsonRpcMessage>(data);
});

/// The stdio framing, with the line limit small enough that the fuzzer reaches it.
fn lines<T: DeserializeOwned + Serialize>(data: &[u8]) {
    let mut codec = JsonRpcMessageCodec::<T>::new_with_max_length(256);
    let mut buf = BytesMut::from(data);
    // Each call consumes at least one line or returns, so this ends; the bound is a guard.
    for _ in 0..=data.len() {
        match codec.decode_eof(&mut buf) {
            Ok(Some(message)) => roundtrip(&message),
            Ok(None) if buf.is_empty() => break,
            Ok(None) | Err(_) => {}
        }
        if buf.is_empty() {
            break;
        }
    }
}

fn body<T: DeserializeOwned + Serialize>(data: &[u8]) {
    if let Ok(message) = serde_json::from_slice::<T>(data) {
        roundtrip(&message);
    }
}

fn roundtrip<T: DeserializeOwned + Serialize>(message: &T) {
    let text = serde_json::to_string(message).expect("a decoded message encodes");
    if let Err(e) = serde_json::from_str::<T>(&text) {
        panic!("{text} was encoded from a decoded message but does not decode: {e}");
    }
}
