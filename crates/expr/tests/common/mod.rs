//! Shared by the integration tests: where the conformance corpora live, JSON equality that
//! treats `1` and `1.0` as the same number, and the process's peak memory.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value as Json;

/// `../shared/` beside the repository root, which holds the conformance corpora.
pub fn shared_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        dir.join("conformance").is_dir(),
        "the conformance corpora are missing: this test needs the `../shared/` directory beside \
         the repository root (looked for {})",
        dir.join("conformance").display()
    );
    dir
}

pub fn read_json(path: &std::path::Path) -> Json {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Structural equality, numbers compared as `f64` (with a relative tolerance when `approx`).
pub fn json_eq(a: &Json, b: &Json, approx: bool) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (approx && (x - y).abs() <= 1e-10 * x.abs().max(y.abs()))
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b, approx))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w, approx)))
        }
        _ => a == b,
    }
}

/// This process's peak resident set (`VmHWM`), in bytes.
pub fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM")
        * 1024
}
