#!/usr/bin/env bash
# The traces check (docs/traces.md): the built broker exports its spans to a loopback
# OTLP receiver over http/json and http/protobuf, read with the official OTLP protobuf
# classes (opentelemetry-proto, installed into <target>/client-venv). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

. clients/lib.sh
venv=$(client_venv)
ensure_broker
TARGET_DIR=$target_dir "$venv/bin/python" clients/otlp_check.py "$broker_bin"
