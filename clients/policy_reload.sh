#!/usr/bin/env bash
# The policy reload check (docs/policy.md): the built broker, sent SIGHUP, reads its
# policy folder again; a valid set decides the next call on the same connection, an
# invalid one is rejected and the last valid set still decides. Python's standard
# library only; loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
. clients/lib.sh
ensure_broker
python3 clients/policy_reload.py "$broker_bin" clients/stub_upstream.py
