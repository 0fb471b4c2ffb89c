"""WebFetch keeps what a page links to and lays out in tables (#31.7: a
maintained converter, markdownify on beautifulsoup4), from a real HTTP
server on 127.0.0.1: links come back absolute, tables as Markdown tables,
and what a reader never sees stays out."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from zapcli.tools.htmltext import to_text
from zapcli.tools.web import WebFetchTool

PAGE = b"""<!doctype html><html><head><title>Release notes</title>
<script>document.write('tracking')</script><style>td{color:red}</style></head>
<body><nav><a href="/docs/">Docs</a> | <a href="../about">About</a></nav>
<h2>Versions</h2>
<table><thead><tr><th>Version</th><th>Date</th></tr></thead>
<tbody><tr><td>2.1</td><td>2026-05-01</td></tr><tr><td>2.0</td><td>2026-01-12</td></tr></tbody></table>
<p>See <a href="https://example.org/changelog">the full changelog</a> or
<a href="javascript:alert(1)">nothing</a>.</p>
<img src="/logo.png" alt="the logo"><img src="/pixel.gif">
<form><input type="hidden" name="csrf" value="tok-secret-1"></form>
</body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def test_links_come_back_absolute_and_tables_as_tables(server, ctx):
    res = WebFetchTool().run({"url": f"{server}/news/2026/notes.html"}, ctx)
    assert res.ok, res.content
    text = res.content
    assert "# Release notes" in text and "## Versions" in text
    assert f"[Docs]({server}/docs/)" in text
    assert f"[About]({server}/news/about)" in text
    assert "[the full changelog](https://example.org/changelog)" in text
    assert "| Version | Date |" in text and "| 2.1 | 2026-05-01 |" in text
    assert "[image: the logo]" in text


def test_what_a_reader_never_sees_stays_out(server, ctx):
    text = WebFetchTool().run({"url": f"{server}/x"}, ctx).content
    for unseen in ("tracking", "color:red", "tok-secret-1", "javascript:", "pixel.gif"):
        assert unseen not in text


def test_broken_markup_is_still_text():
    assert "caf\u00e9 **ok**" in to_text("<p>caf&eacute; <b>ok</p></div></table><<>")
    assert to_text("") == ""
