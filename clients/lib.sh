# Shared by the client checks (sourced): a free loopback port, waiting until a URL
# answers (`wait_for`) or a started broker answers /readyz (`wait_ready`; bounded:
# 10 s), and where cargo builds: `target_dir` (cargo's target folder: CARGO_TARGET_DIR
# or the workspace's, as `cargo metadata` says) and `broker_bin`, the debug binary the
# checks start (BROKER_BIN to start another).
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
broker_bin=${BROKER_BIN:-$target_dir/debug/tool-broker}
# The broker a check starts, ready: BROKER_BIN as given (CI passes the release binary it
# built once), else the debug binary, built now when stale.
ensure_broker() {
  if [ -n "${BROKER_BIN:-}" ]; then
    [ -x "$BROKER_BIN" ] || { echo "BROKER_BIN=$BROKER_BIN is not an executable file" >&2; return 1; }
  else
    cargo build -q -p tool-broker
  fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # URL: until it answers 2xx (bounded: 10 s)
  for _ in $(seq 1 100); do
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "$1 did not answer" >&2
  return 1
}
wait_ready() { # BROKER_URL
  wait_for "$1/readyz" || { echo "the broker at $1 did not become ready" >&2; return 1; }
}

# Node (with npm) from Debian where absent.
need_npm() {
  if ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
  fi
}
# DIR/node_modules exactly as DIR/package-lock.json pins it: `npm ci` (extra npm flags
# after DIR) unless node_modules was installed from this very lock, as the lock's
# sha256 kept beside it says. A node_modules an earlier checkout or lock left is
# replaced, never reused.
npm_ci_current() { # DIR [npm ci flags...]
  local dir=$1 lock_sum
  shift
  need_npm
  lock_sum=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$dir/node_modules/.tool-broker-lock-sha256" 2>/dev/null)" != "$lock_sum" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error "$@")
    echo "$lock_sum" >"$dir/node_modules/.tool-broker-lock-sha256"
  fi
}
# Debian's chromium where absent, and DIR's pinned npm packages (the browser checks).
need_browser_and_npm() { # DIR
  if [ ! -x /usr/bin/chromium ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
  npm_ci_current "$1"
}

# The Python packages of clients/requirements.txt in <target>/client-venv (python3-venv
# from Debian where absent); prints the venv's folder.
client_venv() {
  if ! python3 -m venv --help >/dev/null 2>&1; then
    { apt-get update -qq >&2 && apt-get install -y -qq python3 python3-venv >/dev/null; } || return 1
  fi
  local venv=$target_dir/client-venv
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2 || return 1
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check -r clients/requirements.txt >&2 || return 1
  echo "$venv"
}

# How many `METHOD path` requests the stub upstream at BASE (clients/stub_upstream.py)
# received: what a check counts to see a write reach it, or not again.
stub_writes() { # BASE "METHOD path"
  curl -s "$1/__stub/writes" | python3 -c 'import json, sys; print(json.load(sys.stdin).get(sys.argv[1], 0))' "$2"
}
