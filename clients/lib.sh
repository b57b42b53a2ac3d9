# Shared by the client checks (sourced): a free loopback port, and waiting until a
# started broker answers /readyz (bounded: 10 s).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {
  for _ in $(seq 1 100); do
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$1/readyz" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "the broker at $1 did not become ready" >&2
  return 1
}
