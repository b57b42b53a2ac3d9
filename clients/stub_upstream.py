"""A loopback stand-in for every upstream during client checks: answers any request
with 200 and a small JSON body. `GET /v2/task.list` answers one task, so the MCP
client can see that a proxied call reached it; `GET /__stub/writes` answers how many
requests other than GET it received, by "METHOD path", so a check can count what a
confirmed write sent; `GET /__stub/keys` answers the `Authorization` value of every other
request in order (`""` when it had none), so the hub check sees which key was sent;
`POST /__stub/delay` with a number of milliseconds as its body makes every later answer
wait that long (the drain check's call in flight). Binds 127.0.0.1, or the address its
second argument names (the pods' bridge in deploy/kubernetes/play.sh); stops with its
parent (clients/run.sh kills it)."""

import json
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

writes = Counter()
keys = []
delay = [0.0]
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path == "/__stub/delay":
            with lock:
                delay[0] = float(raw or 0) / 1000
        elif not self.path.startswith("/__stub/"):
            time.sleep(delay[0])
        if not self.path.startswith("/__stub/"):
            with lock:
                keys.append(self.headers.get("authorization") or "")
        if self.command != "GET" and not self.path.startswith("/__stub/"):
            with lock:
                writes[f"{self.command} {self.path.split('?')[0]}"] += 1
        if self.path == "/__stub/keys":
            with lock:
                body = list(keys)
        elif self.path in ("/__stub/writes", "/__stub/delay"):
            with lock:
                body = dict(writes)
        elif self.path.startswith("/v2/task.list"):
            body = {"ok": True, "data": [{"id": "task_stub"}], "has_more": False}
        else:
            body = {"ok": True, "id": "stub", "object": "stub", "data": []}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

    def log_message(self, *args):
        pass


host = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"
server = ThreadingHTTPServer((host, int(sys.argv[1])), Handler)
server.serve_forever()
