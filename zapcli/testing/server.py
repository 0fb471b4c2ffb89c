"""The HTTP side every scripted protocol server shares: a threaded server on
127.0.0.1, request logging, JSON and streamed replies, and the command line.
Imports only the standard library and `zapcli.testing.script`.

A protocol (`zapcli.testing.chat` for Chat Completions, and its siblings) is
a `Protocol` subclass: it routes a request to a reply, reading its turn from
the shared `Conversations` by the (system prompt, first user message) that
its own request format carries.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import import_module
from pathlib import Path
from typing import Any

from zapcli.testing.script import Conversations, load_script, validate_script

PROTOCOLS = {"chat": "zapcli.testing.chat:ChatProtocol",
             "responses": "zapcli.testing.responses:ResponsesProtocol",
             "anthropic": "zapcli.testing.anthropic:AnthropicProtocol",
             "gemini": "zapcli.testing.gemini:GeminiProtocol"}


class Protocol:
    """One wire protocol. Subclasses implement `get` and `post`."""

    name = "base"
    base_path = "/v1"  # what `ScriptedServer.base_url` ends in
    url_variable = "OPENAI_BASE_URL"  # the variable that takes `base_url` (printed by main)

    def __init__(self, server: ScriptedServer):
        self.server = server

    def get(self, h: Handler, path: str) -> None:
        h.send_json(404, {"error": {"message": f"Invalid URL (GET {path})"}})

    def head(self, h: Handler, path: str) -> None:
        h.send_response(404)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def post(self, h: Handler, path: str, body: dict[str, Any]) -> None:
        h.send_json(404, {"error": {"message": f"Invalid URL (POST {path})"}})


def protocol_class(name: str) -> type[Protocol]:
    """The Protocol class registered as `name`. Raises KeyError for others."""
    module, _, cls = PROTOCOLS[name].partition(":")
    return getattr(import_module(module), cls)  # type: ignore[no-any-return]


class ScriptedServer:
    """A model server on 127.0.0.1 that answers from a script.

    `ScriptedServer(script, variables=None, models=None, api_key=None, port=0,
    protocol="chat")`; `models`: ids served by the model list (others get a
    404; None accepts any model); `api_key`: when set, other keys get 401.
    Use as a context manager or call start()/stop(). `requests` is a copy of
    every request body received; with `log_dir` each is also written there
    as `req-N.json`. `side_requests` counts requests a protocol answered
    outside the script (e.g. a CLI's title generation; see the protocol).
    """

    def __init__(self, script: Any, *, variables: dict[str, str] | None = None,
                 models: list[str] | None = None, api_key: str | None = None, port: int = 0,
                 protocol: str = "chat", log_dir: str | Path | None = None):
        self.rules = validate_script(script)
        self.conversations = Conversations(self.rules, variables)
        self.models = models
        self.api_key = api_key
        self.log_dir = Path(log_dir) if log_dir else None
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self.side_requests = 0
        self.protocol = protocol_class(protocol)(self)
        self._httpd = _Server(("127.0.0.1", port), Handler)
        self._httpd.scripted = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def variables(self) -> dict[str, str]:
        return self.conversations.variables

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.root_url + self.protocol.base_path

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    def start(self) -> ScriptedServer:
        """Serve on a background thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                            name="scripted-server", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; requests in flight are abandoned
        (a held turn is let go, so its thread ends)."""
        self.conversations.release()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fill(self, value: Any) -> Any:
        return self.conversations.fill(value)

    def release(self, name: str) -> None:
        """Answer the turns that wait on `hold: name` (now and from now on)."""
        self.conversations.release(name)

    def count_side_request(self) -> None:
        with self._lock:
            self.side_requests += 1

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(body)
            n = len(self._requests)
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            tmp = self.log_dir / f".req-{n}.json"
            tmp.write_text(json.dumps(body), encoding="utf-8")
            os.replace(tmp, self.log_dir / f"req-{n}.json")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up is normal
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """Parses requests for the protocol and offers it the reply primitives."""

    protocol_version = "HTTP/1.1"
    server_version = "zapcli-scripted/1"

    @property
    def srv(self) -> ScriptedServer:
        return self.server.scripted  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # quiet by default
        pass

    def do_GET(self) -> None:
        self.srv.protocol.get(self, self.path)

    def do_HEAD(self) -> None:
        self.srv.protocol.head(self, self.path)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "gzip":
            import gzip

            raw = gzip.decompress(raw)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        self.srv.protocol.post(self, self.path, body if isinstance(body, dict) else {"_invalid": True})

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_stream(self, items: list[Any], close: str = "clean",
                    content_type: str = "text/event-stream; charset=utf-8") -> None:
        """A chunked reply: strings sent as they are, objects as `data: <json>`
        SSE events, a float pauses that many seconds (so the next item arrives
        in a read of its own). `close="abort"` drops the connection without
        ending it."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for item in items:
                if isinstance(item, float):
                    time.sleep(item)
                    continue
                data = (item if isinstance(item, str) else f"data: {json.dumps(item)}\n\n").encode()
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
            if close == "abort":
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def main(argv: list[str] | None = None, *, default_protocol: str = "chat") -> int:
    p = argparse.ArgumentParser(prog="python -m zapcli.testing.scripted_server",
                                description="Serve a scripted model on 127.0.0.1.")
    p.add_argument("--script", required=True, help="JSON or YAML file: a list of rules")
    p.add_argument("--protocol", default=default_protocol, choices=sorted(PROTOCOLS),
                   help=f"wire protocol to speak (default {default_protocol})")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--port-file", metavar="FILE", help="also write the port number to FILE")
    p.add_argument("--log", metavar="DIR", help="write every request body to DIR/req-N.json")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="fill {NAME} placeholders in the script")
    p.add_argument("--model", action="append", dest="models", metavar="ID",
                   help="serve only these model ids, listed by the model list (default: any "
                        "model is accepted and the list holds 'scripted')")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="require the API key held in this environment variable")
    p.add_argument("--background", action="store_true",
                   help="serve from a process of its own and print, once it listens, shell "
                        "lines to eval: `export VARIABLE=URL` and `export SCRIPTED_SERVER_PID=PID` "
                        "(e.g. eval \"$(python -m zapcli.testing.scripted_server --script s.json "
                        "--background)\"; kill $SCRIPTED_SERVER_PID when done)")
    given = list(sys.argv[1:] if argv is None else argv)
    a = p.parse_args(given)
    try:
        script = load_script(a.script)
    except (OSError, ValueError) as exc:
        print(f"scripted_server: {a.script}: {exc}", file=sys.stderr)
        return 2
    if a.background:
        try:
            validate_script(script)  # said here, before anything runs in the background
        except ValueError as exc:
            print(f"scripted_server: {a.script}: {exc}", file=sys.stderr)
            return 2
        return _background([x for x in given if x != "--background"], a.port_file, a.protocol)
    variables = dict(v.split("=", 1) for v in a.var if "=" in v)
    key = os.environ.get(a.api_key_env) if a.api_key_env else None
    srv = ScriptedServer(script, variables=variables, models=a.models, api_key=key, port=a.port,
                         protocol=a.protocol, log_dir=a.log)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    srv.start()
    if a.port_file:
        tmp = Path(a.port_file + ".tmp")
        tmp.write_text(str(srv.port), encoding="utf-8")
        os.replace(tmp, a.port_file)
    print(f"listening {srv.base_url}", flush=True)
    print(f"use: {srv.protocol.url_variable}={srv.base_url}", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    srv.stop()
    return 0


BACKGROUND_START_S = 30.0


def _background(args: list[str], port_file: str | None, protocol: str) -> int:
    """Start this server in a process of its own (a new session: the shell
    that evals our output may go on, or end), wait until it listens, and
    print the `export` lines a shell evals. Its stdout goes nowhere; its
    stderr stays the caller's."""
    import shlex
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="scripted-") as tmp:
        where = port_file or os.path.join(tmp, "port")
        extra = [] if port_file else ["--port-file", where]
        child = subprocess.Popen([sys.executable, "-m", "zapcli.testing.scripted_server", *args,
                                  *extra], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 start_new_session=True)
        give_up = time.monotonic() + BACKGROUND_START_S
        while not os.path.exists(where):
            if child.poll() is not None:
                return child.returncode or 1
            if time.monotonic() > give_up:
                child.kill()
                print(f"scripted_server: not listening after {BACKGROUND_START_S:g} s",
                      file=sys.stderr)
                return 1
            time.sleep(0.02)
        port = Path(where).read_text(encoding="utf-8").strip()
    proto = protocol_class(protocol)
    url = f"http://127.0.0.1:{int(port)}{proto.base_path}"
    print(f"export {proto.url_variable}={shlex.quote(url)}")
    print(f"export SCRIPTED_SERVER_PID={child.pid}")
    return 0
