#!/usr/bin/env python3
"""A minimal OTLP/HTTP sink for bench/telemetry.sh: answers every POST /v1/traces with an empty
ExportTraceServiceResponse (an empty protobuf message is zero bytes) and counts requests and
bytes. Prints `port N` on stdout once listening; on SIGTERM prints `requests R bytes B`.
Loopback only. Standard library only."""
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {"requests": 0, "bytes": 0}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 (the stdlib's name)
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        counts["requests"] += 1
        counts["bytes"] += length
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    print(f"port {server.server_address[1]}", flush=True)

    def stop(*_):
        print(f"requests {counts['requests']} bytes {counts['bytes']}", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
