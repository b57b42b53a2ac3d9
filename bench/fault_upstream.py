"""A loopback upstream that misbehaves, for bench/soak.sh: each request gets the next
fault of a fixed cycle (so every run sends the same mix). Raw sockets, so a fault can be
a reset in the middle of a body or chunked garbage, which an HTTP library would not
send. Binds 127.0.0.1 only.

Faults, per 100 requests: 55 good JSON answers, 10 x 500, 5 x 503, 6 resets mid-body,
6 non-JSON bodies, 6 bodies cut short of their Content-Length, 5 chunked garbage,
3 stalls of 2 s, 2 oversized bodies (9 MiB, over the broker's 8 MiB answer limit),
1 stall of 35 s (past the 30 s upstream timeout), 1 answer with no header end."""

import itertools
import socket
import socketserver
import struct
import sys
import threading
import time

GOOD = b'[{"id":"hostingercom-vps-kvm2","name":"KVM 2","category":"VPS","prices":[{"id":"p1","price":1299}]}]'
CYCLE = (
    ["good"] * 55 + ["500"] * 10 + ["503"] * 5 + ["reset"] * 6 + ["html"] * 6 + ["short"] * 6
    + ["chunked"] * 5 + ["stall"] * 3 + ["huge"] * 2 + ["timeout"] + ["nohead"]
)
# Interleaved so faults are spread over the run rather than in blocks.
ORDER = [CYCLE[(i * 37) % len(CYCLE)] for i in range(len(CYCLE))]
counter = itertools.count()
lock = threading.Lock()


def head(status, length=None, extra=b""):
    reason = {200: b"OK", 500: b"Internal Server Error", 503: b"Service Unavailable"}[status]
    lines = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n" % (status, reason)
    if length is not None:
        lines += b"content-length: %d\r\n" % length
    return lines + extra + b"\r\n"


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                data = sock.recv(65536)
                if not data:
                    return
                buf += data
            request_head, buf = buf.split(b"\r\n\r\n", 1)
            length = 0
            for line in request_head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(buf) < length:
                buf += sock.recv(65536)
            buf = buf[length:]
            with lock:
                fault = ORDER[next(counter) % len(ORDER)]
            if not self.answer(sock, fault):
                return

    def answer(self, sock, fault):
        """Sends one answer; False when the connection is done."""
        if fault == "good":
            sock.sendall(head(200, len(GOOD)) + GOOD)
        elif fault in ("500", "503"):
            body = b'{"error":{"message":"upstream trouble"}}'
            sock.sendall(head(int(fault), len(body)) + body)
        elif fault == "reset":
            sock.sendall(head(200, 1000) + GOOD[:20])
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
            return False
        elif fault == "html":
            body = b"<html><body>502 Bad Gateway</body></html>"
            sock.sendall(head(200, len(body)) + body)
        elif fault == "short":
            sock.sendall(head(200, len(GOOD) + 50) + GOOD)
            sock.close()
            return False
        elif fault == "chunked":
            sock.sendall(head(200, extra=b"transfer-encoding: chunked\r\n") + b"zz\r\nnot a chunk\r\n0\r\n")
            sock.close()
            return False
        elif fault == "stall":
            time.sleep(2)
            sock.sendall(head(200, len(GOOD)) + GOOD)
        elif fault == "timeout":
            time.sleep(35)
            return False
        elif fault == "huge":
            size = 9 * 1024 * 1024
            sock.sendall(head(200, size))
            chunk = b"[" + b"1," * 32767 + b"1]"
            sent = 0
            try:
                while sent < size:
                    part = chunk[: size - sent]
                    sock.sendall(part)
                    sent += len(part)
            except OSError:
                return False
        elif fault == "nohead":
            sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
            sock.close()
            return False
        return True


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
