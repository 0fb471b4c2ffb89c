"""The Ray dashboard client's HTTP (`zapcli.executors.ray_api`) against real
local servers: a dashboard stand-in on 127.0.0.1 and a real forwarding HTTP
proxy started here. HTTP(S)_PROXY / NO_PROXY are honoured as urllib honours
them, redirects are followed (headers kept to their origin), and one
connection carries a command's requests (keep-alive). Runs without Ray.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from zapcli.executors import ray_api


class Server:
    """A small HTTP/1.1 server on 127.0.0.1 that keeps connections alive;
    `route(handler)` answers; every request is noted with its connection."""

    def __init__(self, route):
        self.seen: list[dict] = []
        self.connections: set[tuple[str, int]] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                server.connections.add(self.client_address)
                server.seen.append({"method": self.command, "path": self.path, "body": body,
                                    "headers": dict(self.headers.items())})
                route(self, body)

            do_GET = do_PUT = do_POST = do_DELETE = _any  # noqa: N815 - http.server's names

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def answer(h: BaseHTTPRequestHandler, status: int, doc: object = None, headers: dict | None = None,
           close: bool = False) -> None:
    data = json.dumps(doc).encode() if doc is not None else b""
    h.send_response(status)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)
    if close:  # drop the connection without saying so: the client finds out on its next request
        h.close_connection = True


def dashboard_route(h: BaseHTTPRequestHandler, body: bytes) -> None:
    if h.path == "/api/version":
        answer(h, 200, {"ray_version": "2.60.0", "session_name": "s1"})
    elif h.path == "/api/old-version":
        answer(h, 307, headers={"Location": "/api/version"})
    elif h.path.startswith("/api/packages/"):
        answer(h, 200, {"stored": len(body)})
    elif h.path == "/api/drop":
        answer(h, 200, {"ok": True}, close=True)
    elif h.path.startswith("/api/v0/logs/file?"):  # says what it was asked
        data = h.path.split("?", 1)[1].encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
    elif h.path == "/api/chunked":  # as the dashboard streams a log file
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for part in (b"line 1\n", b"line 2\n" * 5000, b"last"):
            h.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(part), part))
        h.wfile.write(b"0\r\nX-Trailer: t\r\n\r\n")
    elif h.path == "/api/short":  # says 100 bytes, sends 10, hangs up
        h.send_response(200)
        h.send_header("Content-Length", "100")
        h.end_headers()
        h.wfile.write(b"0123456789")
        h.close_connection = True
    else:
        answer(h, 404, {"error": "no such route"})


class Proxy:
    """A real forwarding HTTP proxy: takes `GET http://host:port/path` and
    passes it on; counts what it forwarded and the credentials it was given."""

    def __init__(self) -> None:
        self.forwarded: list[str] = []
        self.auth: list[str | None] = []
        proxy = self

        def route(h: BaseHTTPRequestHandler, body: bytes) -> None:
            url = urllib.parse.urlsplit(h.path)
            proxy.forwarded.append(h.path)
            proxy.auth.append(h.headers.get("Proxy-Authorization"))
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
            headers = {k: v for k, v in h.headers.items()
                       if k.lower() not in ("host", "connection", "proxy-authorization")}
            conn.request(h.command, url.path + (f"?{url.query}" if url.query else ""),
                         body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            h.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                    h.send_header(k, v)
            h.send_header("Via", "1.1 test-proxy")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            conn.close()

        self.server = Server(route)
        self.url = self.server.url


@pytest.fixture
def dashboard() -> Iterator[Server]:
    server = Server(dashboard_route)
    yield server
    server.close()


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    p = Proxy()
    yield p
    p.server.close()


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "RAY_JOB_HEADERS"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    ray_api._connections().clear()
    ray_api._unreachable.clear()
    yield
    for conn in ray_api._connections().values():
        conn.close()
    ray_api._connections().clear()


def test_one_connection_carries_a_commands_requests(dashboard: Server) -> None:
    for _ in range(3):
        assert ray_api.version(dashboard.url) == ("2.60.0", "s1")
    ray_api.put_package(dashboard.url, "zapcli_k_sub_x.json", b"{}")
    assert len(dashboard.seen) == 4
    assert len(dashboard.connections) == 1, dashboard.connections


def test_a_connection_the_dashboard_closed_meanwhile_is_replaced(dashboard: Server) -> None:
    assert ray_api.call(dashboard.url, "GET", "/api/drop") == {"ok": True}
    assert ray_api.version(dashboard.url)[0] == "2.60.0"  # the kept one was closed under it
    assert len(dashboard.connections) == 2


def test_a_chunked_answer_is_read_whole_and_the_connection_kept(dashboard: Server) -> None:
    assert ray_api.call(dashboard.url, "GET", "/api/chunked") == "line 1\n" + "line 2\n" * 5000 + "last"
    assert ray_api.version(dashboard.url)[0] == "2.60.0"
    assert len(dashboard.connections) == 1


def test_an_answer_cut_short_is_an_error_and_not_sent_again(dashboard: Server) -> None:
    with pytest.raises(ConnectionResetError, match="ended early"):
        ray_api.call(dashboard.url, "GET", "/api/short")
    assert [r["path"] for r in dashboard.seen] == ["/api/short"]


def test_a_plain_dashboard_is_asked_without_loading_what_a_command_goes_without(dashboard: Server) -> None:
    """`http.client` brings `email` and `ssl`; `urllib.parse` brings `re` and
    `ipaddress` (what `zapcli.lean` keeps out of every command); `hashlib`
    OpenSSL's library: together more than the rest of a command's start-up,
    for every command that asks a Ray cluster. Without `site`, as in
    tests/test_lean.py (the editable install's hook imports pathlib)."""
    import subprocess
    import sys
    import urllib.parse
    from pathlib import Path

    later = ("http.client", "ssl", "email.parser", "encodings.idna", "urllib.parse", "ipaddress", "re",
             "hashlib", "base64", "threading", "json", "shlex")
    code = ("import sys; from zapcli import lean; lean.pathlib_alone();"
            "from zapcli.executors import ray, ray_api, ray_collect, ray_pool, ray_wire;"
            "a = sys.argv[1]; ray_api.version(a); ray_api.put_package(a, 'zapcli_k_sub_x.json', b'{}');"
            "asked = ray_api.tail(a, 'n1', 'zapcli/k x/st~at.us', 5);"
            "key = ray_wire.pool_key('/tmp/s', a); frame = ray_wire.parse_frame(ray_wire.frame(1, 'o', 0, b'hi'));"
            f"print(sorted(m for m in {later!r} if m in sys.modules)); print(asked); print(key, frame[3])")
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-S", "-c", code, dashboard.url], env={"PYTHONPATH": str(repo)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded, asked, key = out.stdout.splitlines()
    assert loaded == "[]"
    assert asked == urllib.parse.urlencode({"node_id": "n1", "filename": "zapcli/k x/st~at.us", "lines": 5})
    import hashlib
    import os

    from zapcli.executors import ray_wire

    raw = "\0".join((ray_wire.machine_id(), os.path.realpath("/tmp/s"), dashboard.url))
    assert key == f"{hashlib.sha256(raw.encode()).hexdigest()[:12]} b'hi'"  # the same key as ever


def test_http_proxy_is_used(dashboard: Server, proxy: Proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://alice:s3cret@"))
    assert ray_api.version(dashboard.url)[0] == "2.60.0"
    assert proxy.forwarded == [f"{dashboard.url}/api/version"]
    assert len(dashboard.seen) == 1  # the one request, passed on by the proxy
    import base64

    assert proxy.auth == ["Basic " + base64.b64encode(b"alice:s3cret").decode()]


def test_lower_case_and_all_proxy_are_used(dashboard: Server, proxy: Proxy,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("all_proxy", proxy.url)
    ray_api.version(dashboard.url)
    assert len(proxy.forwarded) == 1


def test_no_proxy_goes_direct(dashboard: Server, proxy: Proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert ray_api.version(dashboard.url)[0] == "2.60.0"
    assert proxy.forwarded == [] and len(dashboard.seen) == 1


def test_a_redirect_is_followed_with_its_method(dashboard: Server) -> None:
    assert ray_api.call(dashboard.url, "GET", "/api/old-version")["ray_version"] == "2.60.0"
    assert [s["path"] for s in dashboard.seen] == ["/api/old-version", "/api/version"]


def test_headers_stay_with_their_origin_across_a_redirect(dashboard: Server,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """RAY_JOB_HEADERS often carry a token: a redirect to another host must
    not take it along (the other host sees the request, not the token)."""
    def elsewhere(h: BaseHTTPRequestHandler, body: bytes) -> None:
        answer(h, 302, headers={"Location": f"{dashboard.url}/api/version"})

    other = Server(elsewhere)
    try:
        monkeypatch.setenv("RAY_JOB_HEADERS", json.dumps({"Authorization": "Bearer tok-123"}))
        assert ray_api.version(other.url)[0] == "2.60.0"
        assert other.seen[0]["headers"].get("Authorization") == "Bearer tok-123"
        assert "Authorization" not in dashboard.seen[0]["headers"]
    finally:
        other.close()


def test_a_refused_address_is_not_sent_and_not_asked_again(dashboard: Server) -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    addr = f"http://127.0.0.1:{port}"
    with pytest.raises(OSError) as first:
        ray_api.call(addr, "POST", "/api/jobs/", b"{}")
    assert not ray_api.answer_lost(first.value)
    with pytest.raises(ray_api.Unreachable):
        ray_api.call(addr, "GET", "/api/version")
