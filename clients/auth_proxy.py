"""A loopback proxy that adds `Authorization: Bearer <token>` to requests that carry none.

The official MCP conformance suite has no option to send a header, and the broker
answers nothing without a bearer token. Every other header, `Host` and `Origin`
included, passes through unchanged, so the suite's DNS-rebinding checks reach the
broker as the suite sent them.

    python3 clients/auth_proxy.py LISTEN_PORT BROKER_URL   (token from BROKER_TOKEN)
"""

import http.client
import http.server
import os
import sys
import urllib.parse

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
}


def main() -> None:
    port = int(sys.argv[1])
    target = urllib.parse.urlsplit(sys.argv[2])
    token = os.environ["BROKER_TOKEN"]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def forward(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            if not any(k.lower() == "authorization" for k in headers):
                headers["Authorization"] = f"Bearer {token}"
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            try:
                # skip_host: the client's own Host header goes through untouched.
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for k, v in headers.items():
                    conn.putheader(k, v)
                if body is not None:
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body)
                response = conn.getresponse()
                data = response.read()
                self.send_response(response.status, response.reason)
                for k, v in response.getheaders():
                    if k.lower() not in HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                conn.close()

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = forward

        def log_message(self, *args) -> None:  # quiet
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address) -> None:
            # A client that connects and goes (the readiness probe, a closed test
            # connection) is not an error worth a traceback.
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    Server(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
