#!/usr/bin/env bash
# Conformance of imported tools against Prism mocks of their upstream documents.
#   conformance/run.sh [--services a,b] [--skip-services a,b]
# Needs TOOL_BROKER_SPECS_DIR (the folder of the upstreams' OpenAPI documents) and
# Node.js with npm (installed from Debian where absent). Prism is pinned in
# conformance/tools/package-lock.json and installed there; loopback only; one call per
# imported tool. Writes target/conformance-report.md. See docs/conformance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
specs=${TOOL_BROKER_SPECS_DIR:?set TOOL_BROKER_SPECS_DIR to the folder of the upstream OpenAPI documents}
. clients/lib.sh
tools=conformance/tools
npm_ci_current "$tools" >/dev/null
cargo run -q -p tool-broker --example conformance -- --specs-dir "$specs" \
  --prism "$tools/node_modules/.bin/prism" --out target/conformance-report.md "$@"
