#!/usr/bin/env bash
# The traces check (docs/traces.md): the built broker exports its spans to a loopback
# OTLP receiver over http/json and http/protobuf, read with the official OTLP protobuf
# classes (opentelemetry-proto, installed into target/client-venv). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! python3 -m venv --help >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
fi
venv=target/client-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r clients/requirements.txt
cargo build -q -p tool-broker
"$venv/bin/python" clients/otlp_check.py ./target/debug/tool-broker
