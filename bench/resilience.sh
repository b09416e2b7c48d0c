#!/usr/bin/env bash
# parallel / foreach against the fixture upstream: 100 calls of 50 ms each should finish in
# about 50 ms × ceil(100 / concurrency); also the engine's cost per foreach item.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin mcpflow-fixture
cargo bench -p mcpflow-engine --bench resilience
