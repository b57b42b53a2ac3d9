#!/usr/bin/env bash
# Conformance of imported tools against Prism mocks of their upstream documents.
#   conformance/run.sh [--services a,b] [--skip-services a,b]
# Needs TOOL_BROKER_SPECS_DIR (the folder of the upstreams' OpenAPI documents) and
# Node.js with npm. Installs Prism
# into target/conformance-tools; loopback only; one call per imported tool.
# Writes target/conformance-report.md. See docs/conformance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
specs=${TOOL_BROKER_SPECS_DIR:?set TOOL_BROKER_SPECS_DIR to the folder of the upstream OpenAPI documents}
tools=target/conformance-tools
if [ ! -x "$tools/node_modules/.bin/prism" ]; then
  mkdir -p "$tools"
  (cd "$tools" && npm install --no-audit --no-fund --silent @stoplight/prism-cli@5 >/dev/null)
fi
cargo run -q -p tool-broker --example conformance -- --specs-dir "$specs" \
  --prism "$tools/node_modules/.bin/prism" --out target/conformance-report.md "$@"
