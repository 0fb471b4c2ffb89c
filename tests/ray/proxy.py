"""A proxy on 127.0.0.1 in front of a Ray dashboard, for the Ray tests: it
passes requests on and can delay an answer, drop a connection (before or
after passing the request on), and counts the bytes of every answer.

Imports the standard library only. `rule(method, path)` decides per
request: None (pass it on), ("delay", seconds) (pass it on, answer late),
("drop-after", 0) (pass it on, close without answering: the answer is
lost), ("drop-before", 0) (close without passing it on).
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Rule = Callable[[str, str], "tuple[str, float] | None"]


class Proxy:
    def __init__(self, target: str, rule: Rule | None = None):
        self.target = urllib.parse.urlsplit(target)
        self.rule: Rule = rule or (lambda method, path: None)
        self.answered: list[tuple[str, str, int]] = []  # (method, path, body bytes)
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                proxy.handle(self)

            do_GET = do_PUT = do_POST = do_DELETE = _any  # noqa: N815 - http.server's names

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def bytes_for(self, part: str) -> int:
        with self.lock:
            return sum(n for _, path, n in self.answered if part in path)

    def handle(self, req: BaseHTTPRequestHandler) -> None:
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else None
        what = self.rule(req.command, req.path)
        if what and what[0] == "drop-before":
            req.close_connection = True
            return
        conn = http.client.HTTPConnection(self.target.hostname, self.target.port, timeout=120)
        headers = {k: v for k, v in req.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(req.command, req.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if what and what[0] == "drop-after":
            req.close_connection = True
            return
        if what and what[0] == "delay":
            time.sleep(what[1])
        with self.lock:
            self.answered.append((req.command, req.path, len(data)))
        try:
            req.send_response(resp.status)
            for key, value in resp.getheaders():
                if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                    req.send_header(key, value)
            req.send_header("Content-Length", str(len(data)))
            req.end_headers()
            req.wfile.write(data)
        except OSError:  # the client gave up waiting (a delayed answer): as it would be
            req.close_connection = True

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
