#!/usr/bin/env python3
"""A collector that takes OTLP/HTTP exports and drops them (for bench/observability_overhead.sh):
answers 200 to every POST and prints the port it listens on, on loopback."""
import http.server
import sys


class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
sys.stdout.close()
server.serve_forever()
