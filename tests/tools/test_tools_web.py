"""WebFetch and WebSearch against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from zapcli.tools.web import MAX_BYTES, WebFetchTool, WebSearchTool

PAGE = b"""<html><head><title>Hello page</title><style>.x{color:red}</style>
<script>var secret = 1;</script></head>
<body><h1>Welcome</h1><p>First &amp; foremost.</p><ul><li>one</li><li>two</li></ul></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, code, ctype, body, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = urlsplit(self.path).path
        if path == "/page":
            self.send(200, "text/html; charset=utf-8", PAGE)
        elif path == "/plain":
            self.send(200, "text/plain; charset=latin-1", "café".encode("latin-1"))
        elif path == "/big":
            self.send(200, "text/plain", b"a" * (MAX_BYTES + 1000))
        elif path == "/img":
            self.send(200, "image/png", b"\x89PNG\x00")
        elif path == "/redirect-file":
            self.send(302, "text/plain", b"", [("Location", "file:///etc/passwd")])
        elif path == "/redirect-ftp":
            self.send(302, "text/plain", b"", [("Location", "ftp://127.0.0.1/x")])
        elif path == "/redirect-ok":
            self.send(302, "text/plain", b"", [("Location", "/plain")])
        elif path == "/search":
            q = parse_qs(urlsplit(self.path).query)["q"][0]
            body = json.dumps({"results": [
                {"title": f"About {q}", "url": "http://example.com/1", "content": "first  hit"},
                {"title": "Second", "url": "http://example.com/2"}]}).encode()
            self.send(200, "application/json", body)
        else:
            self.send(404, "text/html", b"<html><body><p>Nothing here</p></body></html>")


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def test_fetch_html_reduced_to_text(server, ctx):
    res = WebFetchTool().run({"url": f"{server}/page"}, ctx)
    assert res.ok
    assert "HTTP 200, text/html" in res.content
    assert "# Hello page" in res.content and "Welcome" in res.content
    assert "First & foremost." in res.content and "- one" in res.content
    assert "secret" not in res.content and "color" not in res.content


def test_fetch_plain_charset_and_redirect(server, ctx):
    res = WebFetchTool().run({"url": f"{server}/plain"}, ctx)
    assert res.ok and res.content.endswith("café")
    res = WebFetchTool().run({"url": f"{server}/redirect-ok"}, ctx)
    assert res.ok and res.content.startswith(f"{server}/plain") and "café" in res.content


def test_fetch_caps_size(server, ctx):
    res = WebFetchTool().run({"url": f"{server}/big"}, ctx)
    assert res.ok and "truncated at 512 KB" in res.content
    assert len(res.content) < 110_000 and "folded" in res.content


def test_fetch_errors(server, ctx):
    res = WebFetchTool().run({"url": f"{server}/missing"}, ctx)
    assert not res.ok and "HTTP 404" in res.content and "Nothing here" in res.content
    res = WebFetchTool().run({"url": f"{server}/img"}, ctx)
    assert not res.ok and "image/png" in res.content
    res = WebFetchTool().run({"url": f"{server}/redirect-file"}, ctx)
    assert not res.ok and "not allowed" in res.content  # urllib's own refusal
    res = WebFetchTool().run({"url": f"{server}/redirect-ftp"}, ctx)
    assert not res.ok and "not http(s); not followed" in res.content  # ours
    for url in ("file:///etc/passwd", "ftp://example.com/x", "example.com"):
        res = WebFetchTool().run({"url": url}, ctx)
        assert not res.ok and "http(s) URL" in res.content
    res = WebFetchTool(timeout_s=2).run({"url": "http://127.0.0.1:9/"}, ctx)
    assert not res.ok and "could not fetch" in res.content


def test_search_with_url_provider(server, ctx):
    tool = WebSearchTool(f"{server}/search?q={{query}}&format=json")
    res = tool.run({"query": "zap cli"}, ctx)
    assert res.ok
    assert res.content.splitlines() == ["1. About zap cli", "   http://example.com/1",
                                        "   first hit", "2. Second", "   http://example.com/2"]


def test_search_with_callable_provider(ctx):
    def provider(query, n):
        assert n == 2
        return [{"title": "T", "url": "u", "snippet": query}]

    assert WebSearchTool(provider).run({"query": "q", "max_results": 2}, ctx).content == \
        "1. T\n   u\n   q"

    def broken(query, n):
        raise RuntimeError("quota exceeded")

    res = WebSearchTool(broken).run({"query": "q"}, ctx)
    assert not res.ok and "quota exceeded" in res.content
    with pytest.raises(ValueError):
        WebSearchTool("http://no-placeholder")
