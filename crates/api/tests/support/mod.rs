#![allow(dead_code)]
//! The run API served in process on a real TCP port, over a config given as text, and an
//! HTTP client with an SSE reader.

use std::time::Duration;

use mcpflow_api::{Api, Position};
use mcpflow_engine::Engine;
use mcpflow_upstream::UpstreamPool;
use serde_json::{Value as Json, json};

/// Tools the tests share: a foreach over a list, a parallel, a switch loop.
pub const TOOLS: &str = r#"
version: "1.0"
server: { name: api-test, version: "1.0.0" }
executionLimits: { maxNodeExecutions: 1000000, maxExecutionTimeMs: 600000 }
mcpServers: {}
tools:
  - name: each
    description: doubles every item of a list, one at a time
    inputSchema: { type: object, properties: { list: { type: array } }, required: [list] }
    nodes:
      - { id: entry, type: entry, next: fe }
      - { id: fe, type: foreach, items: 'entry.list', concurrency: 1, body: dbl, next: exit }
      - { id: dbl, type: transform, transform: { expr: '$.fe.item * 2' }, next: fe }
      - { id: exit, type: exit }
  - name: par
    description: two branches joined
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: p }
      - id: p
        type: parallel
        branches: { a: a1, b: b1 }
        next: join
      - { id: a1, type: transform, transform: { expr: '"a"' }, next: join }
      - { id: b1, type: transform, transform: { expr: '"b"' }, next: join }
      - { id: join, type: transform, transform: { expr: '$.p' }, next: exit }
      - { id: exit, type: exit }
  - name: count
    description: counts to n
    inputSchema: { type: object, properties: { n: { type: integer } }, required: [n] }
    nodes:
      - { id: entry, type: entry, next: inc }
      - { id: inc, type: transform, transform: { expr: '{"i": ($exists($.inc.i) ? $.inc.i : 0) + 1}' }, next: check }
      - id: check
        type: switch
        conditions:
          - { rule: { "<": [{ var: "inc.i" }, { var: "entry.n" }] }, next: inc }
        next: exit
      - { id: exit, type: exit }
"#;

pub struct Served {
    pub base: String,
    pub api: Api,
    pub engine: Engine,
    pub http: reqwest::Client,
}

/// `yaml` loaded and compiled as `mcpflow serve` does, its run API on 127.0.0.1:0.
pub async fn serve(yaml: &str) -> Served {
    let draft = mcpflow_config::Loader::new()
        .read_str(yaml, "api.yaml")
        .unwrap_or_else(|e| panic!("the config reads: {e}"));
    let (loaded, engine) = draft
        .compile(
            |config, base_dir| {
                let pool = UpstreamPool::new(config.mcp_servers.clone(), base_dir.into());
                Engine::new(config, pool)
            },
            mcpflow_engine::check,
        )
        .unwrap_or_else(|e| panic!("the config compiles: {e}"));
    let current = engine.clone();
    let sources = loaded.sources.clone();
    let api = Api::new(
        move || current.clone(),
        move |p| {
            sources.locate(p).map(|s| Position {
                file: s.file,
                line: s.line,
                col: s.col,
            })
        },
    );
    api.attach(&engine);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let addr = listener.local_addr().expect("address");
    let app = api.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Served {
        base: format!("http://{addr}"),
        api,
        engine,
        http: reqwest::Client::new(),
    }
}

impl Served {
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Json>,
    ) -> (u16, Json) {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = tokio::time::timeout(Duration::from_secs(30), req.send())
            .await
            .expect("answers within 30 s")
            .expect("HTTP works");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        let json = serde_json::from_str(&text).unwrap_or(Json::String(text));
        (status, json)
    }

    pub async fn get(&self, path: &str) -> (u16, Json) {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Json) -> (u16, Json) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn put(&self, path: &str, body: Json) -> (u16, Json) {
        self.call(reqwest::Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> (u16, Json) {
        self.call(reqwest::Method::DELETE, path, None).await
    }

    /// Starts `tool` through the API; returns the run id.
    pub async fn start(&self, tool: &str, args: Json, debug: Json) -> String {
        let (status, body) = self
            .post(
                "/api/runs",
                json!({"tool": tool, "args": args, "debug": debug}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().expect("id").to_owned()
    }

    /// Polls the run until `f` holds of it (within 10 s).
    pub async fn until(&self, id: &str, f: impl Fn(&Json) -> bool) -> Json {
        for _ in 0..1000 {
            let (status, run) = self.get(&format!("/api/runs/{id}")).await;
            if status == 200 && f(&run) {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("run {id} never reached the expected state");
    }

    pub async fn events(&self, path: &str) -> Sse {
        let resp = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("stream opens");
        assert_eq!(resp.status().as_u16(), 200);
        Sse {
            resp,
            buf: String::new(),
        }
    }
}

/// A Server-Sent Events reader.
pub struct Sse {
    resp: reqwest::Response,
    buf: String,
}

impl Sse {
    /// The next event `(name, data)`, `None` at the end of the stream (within 10 s).
    pub async fn next(&mut self) -> Option<(String, Json)> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let mut name = String::from("message");
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        name = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some((name, serde_json::from_str(&data).unwrap_or(Json::Null)));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.resp.chunk())
                .await
                .expect("an event within 10 s")
                .expect("stream readable")?;
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Events until one named `name` (included).
    pub async fn until(&mut self, name: &str) -> Vec<(String, Json)> {
        let mut seen = Vec::new();
        while let Some(e) = self.next().await {
            let done = e.0 == name;
            seen.push(e);
            if done {
                return seen;
            }
        }
        panic!("the stream ended before `{name}`: {seen:?}");
    }
}
