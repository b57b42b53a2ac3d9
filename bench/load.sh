#!/usr/bin/env bash
# Throughput and latency through the broker against a local stub, side by side with the
# same load sent to the stub directly: a proxied read on POST / and on POST /mcp, a
# write (one audit record per call) and a write with a fresh Idempotency-Key per call.
# The store is SQLite in a temporary folder, or PostgreSQL when
# TOOL_BROKER_BENCH_DATABASE_URL is set. Loopback only, bounded.
#   bench/load.sh [seconds] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p tool-broker --bin tool-broker --example load
extra=()
if [[ -n "${TOOL_BROKER_BENCH_DATABASE_URL:-}" ]]; then
  extra=(--database-url "$TOOL_BROKER_BENCH_DATABASE_URL")
fi
./target/release/examples/load --broker target/release/tool-broker --seconds "${1:-5}" --concurrency "${2:-16}" "${extra[@]}"
