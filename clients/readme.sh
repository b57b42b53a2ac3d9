#!/usr/bin/env bash
# The README's quick start as a reader runs it: the `sh` blocks of its "Run it" section,
# pasted in order into one shell in the checkout (the key exported, the broker started
# in the background with `cargo run --release --bin tool-broker`, the example `curl`), and the answer
# checked: the call succeeds with the reader's own key. Port 8080 on loopback, as the
# README says; bounded: the broker must answer within 20 minutes (a cold release build).
set -euo pipefail
cd "$(dirname "$0")/.."

if python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8080), timeout=1)' 2>/dev/null; then
  echo "port 8080 is taken: the README's commands need it" >&2
  exit 1
fi
work=$(mktemp -d)
python3 - "$work" <<'PY'
import pathlib, re, sys
text = pathlib.Path("README.md").read_text()
section = text.split("\n## Run it\n", 1)[1].split("\n## ", 1)[0]
blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
if len(blocks) < 2:
    sys.exit(f"README.md's Run it section has {len(blocks)} sh blocks, not the start and the call")
out = pathlib.Path(sys.argv[1])
(out / "start.sh").write_text(blocks[0])
(out / "call.sh").write_text(blocks[1])
PY
{
  echo 'set -euo pipefail'
  echo 'unset TOOL_BROKER_API_KEY'
  cat "$work/start.sh"
  echo 'trap '\''kill %1 2>/dev/null || true; wait'\'' EXIT'
  echo 'for _ in $(seq 1 2400); do'
  echo '  curl -fs -o /dev/null http://127.0.0.1:8080/readyz && break'
  # `kill -0 %1` succeeds on a job that has exited but is still in bash's table
  # (the README step then waited out its 20 minutes): ask for the running jobs.
  echo '  [ -n "$(jobs -rp)" ] || { echo "the broker stopped" >&2; exit 1; }'
  echo '  sleep 0.5'
  echo 'done'
  cat "$work/call.sh"
} > "$work/reader.sh"
answer=$(bash "$work/reader.sh" 2>"$work/stderr") || {
  echo "FAIL the README's commands: $(tail -5 "$work/stderr")" >&2
  exit 1
}
rm -rf "$work"
python3 -c '
import json, sys
envelope = json.loads(sys.argv[1])
assert envelope.get("error") is None and envelope["data"]["authenticated"] is True, envelope
print("ok   the README quick start, pasted as written: the call answers with the reader'"'"'s own key")
' "$answer" || { echo "FAIL the README's call answered: ${answer:0:300}" >&2; exit 1; }
