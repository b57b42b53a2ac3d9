#!/usr/bin/env bash
# Throughput and latency of POST / for one proxied read tool against a local stub,
# side by side with the same load sent to the stub directly. Loopback only, bounded.
#   bench/load.sh [seconds] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p tool-broker --bin tool-broker --example load
./target/release/examples/load --broker target/release/tool-broker --seconds "${1:-5}" --concurrency "${2:-16}"
