//! A Streamable HTTP upstream's first request waits for the session's standalone GET stream:
//! rmcp opens that stream on a task of its own after `initialize`, and a server that answers the
//! GET slowly (or a loaded machine) would otherwise see the first request before the stream,
//! and lose whatever it sends there in reaction. The MCP conformance suite's `sse-retry` client
//! scenario failed that way, now and then, under a full test run.
//!
//! The server here is a bare HTTP/1.1 loop on a real socket that holds the GET's answer back
//! for a while and records the order in which things happen.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{pool, server};
use serde_json::{Value, json};

/// How long the server sits on the GET before answering it.
const GET_DELAY: Duration = Duration::from_millis(400);

type Log = Arc<Mutex<Vec<String>>>;

fn note(log: &Log, what: impl Into<String>) {
    log.lock().expect("log lock").push(what.into());
}

/// One request: method and body (the head's other lines are not needed here).
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, String)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let method = line.split_whitespace().next()?.to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some((method, String::from_utf8_lossy(&body).into_owned()))
}

fn json_answer(stream: &mut TcpStream, body: &Value) {
    let body = body.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
}

fn serve_connection(stream: TcpStream, log: Log) {
    let mut writer = stream.try_clone().expect("clone the socket");
    let mut reader = BufReader::new(stream);
    while let Some((method, body)) = read_request(&mut reader) {
        if method == "GET" {
            std::thread::sleep(GET_DELAY);
            note(&log, "GET answered");
            let _ = writer.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                  cache-control: no-cache\r\nmcp-session-id: s1\r\n\r\n",
            );
            // Held open (the standalone stream) until the client goes away.
            let mut rest = Vec::new();
            let _ = reader.read_to_end(&mut rest);
            return;
        }
        let message: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let name = message["method"].as_str().unwrap_or("?").to_owned();
        note(&log, format!("POST {name}"));
        match name.as_str() {
            "initialize" => json_answer(
                &mut writer,
                &json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "slow-get", "version": "1"}}}),
            ),
            "tools/list" => json_answer(
                &mut writer,
                &json!({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [
                    {"name": "t", "inputSchema": {"type": "object"}}]}}),
            ),
            _ if message.get("id").is_none() => {
                let _ = writer.write_all(
                    b"HTTP/1.1 202 Accepted\r\nmcp-session-id: s1\r\ncontent-length: 0\r\n\r\n",
                );
            }
            _ => json_answer(
                &mut writer,
                &json!({"jsonrpc": "2.0", "id": message["id"], "result": {}}),
            ),
        }
    }
}

#[tokio::test]
async fn the_first_request_waits_for_the_standalone_stream() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let log: Log = Arc::default();
    let server_log = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = server_log.clone();
            std::thread::spawn(move || serve_connection(stream, log));
        }
    });

    let url = format!("http://127.0.0.1:{port}/mcp");
    let pool = pool(vec![(
        "slow",
        server(json!({"type": "streamableHttp", "url": url, "timeoutMs": 10000})),
    )]);
    let tools = pool.list_tools("slow").await.expect("lists tools");
    assert_eq!(tools.len(), 1, "{tools:?}");

    let log = log.lock().expect("log lock").clone();
    let get = log.iter().position(|e| e == "GET answered");
    let list = log.iter().position(|e| e == "POST tools/list");
    assert!(
        matches!((get, list), (Some(get), Some(list)) if get < list),
        "the first request went out before the standalone stream was answered: {log:?}"
    );
    pool.shutdown().await;
}
