"""The traces check (docs/traces.md): runs the built broker with
OTEL_EXPORTER_OTLP_ENDPOINT pointed at a loopback OTLP receiver held here, once over
http/json and once over http/protobuf, calls a tool with a `traceparent`, and checks:

- the SERVER span arrives, continues the caller's trace and names the tool; its CLIENT
  span is a child, and is the parent the upstream saw;
- the upstream request carries the trace id; `meta.traceId` is the trace id;
- no key, token or argument value is in an export, and the collector's key (an
  OTEL_EXPORTER_OTLP_HEADERS value) reached the collector, not the broker's log;
- `.` and `..` path parameters are refused before anything is sent.

Protobuf is read with the official OTLP classes (opentelemetry-proto); JSON is read as
the OTLP JSON mapping says (hex ids) and then parsed into the same classes, so a field
the proto does not have fails. Loopback only; every wait is bounded.

usage: otlp_check.py BROKER_BINARY
"""

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

TRACE = "5cf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "01f067aa0ba902b7"
UPSTREAM_KEY = "pk_otlp_check_canary_3"
BROKER_TOKEN = "tb_otlp_check_token_0123456789"
ARGUMENT = "argument-canary-otlp@example.com"
COLLECTOR_KEY = "collector-canary-key-9"

exports = []  # (content type, body)
upstream_seen = []  # request headers, as dicts
lock = threading.Lock()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        with lock:
            exports.append((self.headers.get("content-type"), body, dict(self.headers)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


class Upstream(BaseHTTPRequestHandler):
    def do_GET(self):
        with lock:
            upstream_seen.append({k.lower(): v for k, v in self.headers.items()})
        body = json.dumps({"object": "list", "data": [], "has_more": False}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(handler):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(url, tool, arguments, traceparent):
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": "otlp-1",
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
    ).encode()
    request = urllib.request.Request(
        url + "/",
        data=body,
        method="POST",
        headers={
            "authorization": f"Bearer {BROKER_TOKEN}",
            "content-type": "application/json",
            "x-payments-api-key": UPSTREAM_KEY,
            "traceparent": traceparent,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def hex_ids_to_base64(node):
    """OTLP JSON writes ids as hex; protobuf's JSON reader wants base64 for bytes."""
    if isinstance(node, dict):
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in node:
                node[key] = base64.b64encode(bytes.fromhex(node[key])).decode()
        for value in node.values():
            hex_ids_to_base64(value)
    elif isinstance(node, list):
        for value in node:
            hex_ids_to_base64(value)


def spans_of(content_type, body, protocol):
    """Every span of one export as (trace hex, span hex, parent hex, name, kind, attrs)."""
    if protocol == "http/json":
        assert content_type == "application/json", content_type
        doc = json.loads(body)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    assert isinstance(s["kind"], int), s
                    assert isinstance(s["startTimeUnixNano"], str), s
                    assert len(s["traceId"]) == 32 and s["traceId"] == s["traceId"].lower(), s
        hex_ids_to_base64(doc)
        message = json_format.ParseDict(doc, ExportTraceServiceRequest())
    else:
        assert content_type == "application/x-protobuf", content_type
        message = ExportTraceServiceRequest.FromString(body)
    out = []
    for rs in message.resource_spans:
        resource = {a.key: a.value.string_value for a in rs.resource.attributes}
        assert resource["service.name"] == "otlp-check-broker", resource
        for ss in rs.scope_spans:
            for s in ss.spans:
                attrs = {}
                for a in s.attributes:
                    which = a.value.WhichOneof("value")
                    attrs[a.key] = getattr(a.value, which)
                out.append(
                    (
                        s.trace_id.hex(),
                        s.span_id.hex(),
                        s.parent_span_id.hex(),
                        s.name,
                        s.kind,
                        attrs,
                    )
                )
    return out


def check(binary, protocol):
    exports.clear()
    upstream_seen.clear()
    receiver = serve(Receiver)
    upstream = serve(Upstream)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ)
    env.update(
        {
            "TOOL_BROKER_API_KEY": BROKER_TOKEN,
            "TOOL_BROKER_UPSTREAM_PAYMENTS": f"http://127.0.0.1:{upstream.server_port}",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_port}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_EXPORTER_OTLP_HEADERS": f"x-collector-key={COLLECTOR_KEY}",
            "OTEL_SERVICE_NAME": "otlp-check-broker",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
    )
    target = os.environ.get("TARGET_DIR", "target")
    log = open(os.path.join(target, f"otlp-check-{protocol.replace('/', '-')}.log"), "w+")
    data = tempfile.mkdtemp(prefix="otlp-check-")
    broker = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/readyz", timeout=2)
                break
            except Exception:
                time.sleep(0.1)
        else:
            raise SystemExit(f"{protocol}: the broker did not become ready")
        traceparent = f"00-{TRACE}-{CALLER_SPAN}-01"
        status, envelope = call(url, "payments.get_customers", {"email": ARGUMENT}, traceparent)
        assert status == 200, (status, envelope)
        assert envelope["meta"]["traceId"] == TRACE, envelope["meta"]
        with lock:
            seen = list(upstream_seen)
        assert len(seen) == 1, seen
        sent = seen[0].get("traceparent", "")
        assert sent.startswith(f"00-{TRACE}-") and sent.endswith("-01"), sent
        # Dot segments: refused, nothing sent.
        for value in (".", ".."):
            status, envelope = call(
                url,
                "payments.get_customers_customer",
                {"path_params": {"customer": value}},
                traceparent,
            )
            assert status == 422, (value, status, envelope)
            assert envelope["error"]["classification"] == "validation_error", envelope
        with lock:
            assert len(upstream_seen) == 1, "a dot segment went upstream"
        spans = []
        for _ in range(100):
            with lock:
                got = list(exports)
            spans = [s for ct, body, _ in got for s in spans_of(ct, body, protocol)]
            if any(s[4] == 3 for s in spans) and len([s for s in spans if s[4] == 2]) >= 3:
                break
            time.sleep(0.1)
        servers = [s for s in spans if s[4] == 2 and s[3] == "tools/call payments.get_customers"]
        assert len(servers) == 1, spans
        server = servers[0]
        assert server[0] == TRACE and server[2] == CALLER_SPAN, server
        attrs = server[5]
        assert attrs["gen_ai.tool.name"] == "payments.get_customers", attrs
        assert attrs["mcp.method.name"] == "tools/call", attrs
        assert attrs["gen_ai.operation.name"] == "execute_tool", attrs
        assert attrs["jsonrpc.request.id"] == "otlp-1", attrs
        assert attrs["tool_broker.upstream.status"] == 200, attrs
        clients = [s for s in spans if s[4] == 3]
        assert len(clients) == 1, spans
        client = clients[0]
        assert client[0] == TRACE and client[2] == server[1], (client, server)
        assert sent == f"00-{TRACE}-{client[1]}-01", (sent, client)
        refused = [s for s in spans if s[3] == "tools/call payments.get_customers_customer"]
        assert len(refused) == 2 and all(s[5]["error.type"] == "validation_error" for s in refused), refused
        for _, body, headers in got:
            for secret in (UPSTREAM_KEY, BROKER_TOKEN, ARGUMENT, COLLECTOR_KEY):
                assert secret.encode() not in body, f"{protocol}: an export holds {secret}"
            assert headers.get("x-collector-key") == COLLECTOR_KEY, headers.keys()
        print(f"{protocol}: {len(spans)} spans, trace continued, upstream carried it, no secret exported")
    finally:
        broker.send_signal(signal.SIGTERM)
        try:
            broker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            broker.kill()
        receiver.shutdown()
        upstream.shutdown()
        shutil.rmtree(data, ignore_errors=True)
    log.seek(0)
    text = log.read()
    for secret in (UPSTREAM_KEY, BROKER_TOKEN, ARGUMENT, COLLECTOR_KEY):
        assert secret not in text, f"{protocol}: the broker's log holds {secret}"


def main():
    binary = sys.argv[1]
    for protocol in ("http/json", "http/protobuf"):
        check(binary, protocol)
    print("traces: 2 passed, 0 failed")


if __name__ == "__main__":
    main()
