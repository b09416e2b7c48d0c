mod common;
use common::*;
use serde_json::json;
use std::time::Instant;
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench() {
    let pool = pool(vec![("fx", fixture(&[], json!({})))]);
    let t = Instant::now();
    pool.list_tools("fx").await.unwrap();
    eprintln!("cold start + list: {:?}", t.elapsed());
    let t = Instant::now();
    for i in 0..2000 { pool.call_tool("fx", "echo", args(json!({"i": i}))).await.unwrap(); }
    eprintln!("sequential echo: {:?}/call", t.elapsed() / 2000);
    let t = Instant::now();
    let futs = (0..2000).map(|i| { let p = pool.clone(); async move { p.call_tool("fx", "echo", args(json!({"i": i}))).await.unwrap() } });
    let mut set = tokio::task::JoinSet::new();
    for f in futs { set.spawn(f); }
    while set.join_next().await.is_some() {}
    eprintln!("2000 concurrent echo: {:?} total, {:.0} calls/s", t.elapsed(), 2000.0 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    let _ = pool.call_tool("fx", "crash", args(json!({}))).await;
    eprintln!("crash detected in {:?}", t.elapsed());
    let t = Instant::now();
    pool.call_tool("fx", "echo", args(json!({}))).await.unwrap();
    eprintln!("restart + call: {:?}", t.elapsed());
    let t = Instant::now();
    pool.shutdown().await;
    eprintln!("shutdown: {:?}", t.elapsed());
}
