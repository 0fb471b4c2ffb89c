"""What of a plain-HTTP model endpoint `network: false` lets through (adversary
round 9): the broker (`zapcli.backends.cli_broker`) carries a connection to
a local endpoint request by request, reading each (HTTP/1.1, with h11's
framing: every request of a kept-alive connection, bodies by length or
chunks) and passing only the model API's — the base URL's path, or where it
has none a versioned API's (`/v1/…`, `/v1beta/…`). A local endpoint is very
often a model server with an API of its own (Ollama's `/api/pull` fetches
from any host it is told, `/api/push` uploads): a command in the sandbox
must not reach other hosts through it. A refused request gets 403 and the
connection ends; so does a method but GET and POST (a gateway's `DELETE
/v1/files/…` is not a model call), an `Upgrade`, a target not in origin
form, one whose path a server could read another way (dot segments,
encoded slashes or dots, backslashes), one whose body is framed both by a
length and by chunks (a server framing by the length would read the
chunks' data as a request of its own: what is carried is re-written in
h11's framing, so a framing trick lives only in the headers passed on), or
a body with a GET (a server that reads none for a GET would read it as
its next request; the model API sends bodies with POST only).
A model call's body is read whole first (`MAX_BODY`), as JSON, and refused
where it names media or a server by URL (`media_url`: an `image_url` that
is not a `data:` URL, Anthropic's `{"type": "url"}` source, a tool's
`server_url`): vLLM, llama.cpp's server and LiteLLM fetch such a URL
themselves, so a command would reach another host through the model API
proper; the CLIs send media inline. A body that is not JSON, or is
encoded (`Content-Encoding`), is refused too: it cannot be read.
And each request carried goes to the endpoint on a connection of its own,
asking it to close after its answer: what a server leaves unread of a
carried request (a body it turned away unread) is never its next request;
its Host is the base URL's (a server choosing a site by it sees the model's).
An https endpoint is TLS end to end and is carried as bytes (the docs say
what that leaves).

Imports h11 (httpx's parser, which the openai SDK brings), orjson and the
standard library.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import h11
import orjson

READ = 65536
MAX_BODY = 64 * 2**20  # a model call's body (a long conversation, images inline) read whole
# where a model API takes a URL it fetches itself: media parts (OpenAI chat's `image_url`,
# vLLM's `video_url` and `audio_url`, the Responses API's `input_image`/`file_url`, Gemini's
# `fileUri`) and a remote MCP server of the Responses API (`server_url`)
MEDIA_KEYS = frozenset({"image_url", "video_url", "audio_url", "file_url", "fileUri", "file_uri",
                        "server_url"})
VERSIONED = re.compile(r"v\d+(?:alpha|beta)?\d*")
# an encoded dot, slash, backslash or NUL; a backslash; a `;` (a path parameter: `/v1/..;/api`
# is `/api` to a server that strips them)
UNREADABLE = re.compile(r"%(?:2[eEfF]|5[cC]|00)|[\\;]")


def allowed(target: bytes, prefix: str) -> bool:
    """Whether a request to `target` is one of the model API's: origin form,
    a path no server can read as another one, under `prefix` (or, where
    the base URL names none, under a versioned API's first segment)."""
    try:
        text = target.decode("ascii")
    except UnicodeDecodeError:
        return False
    path = text.split("?", 1)[0]
    if not path.startswith("/") or UNREADABLE.search(path):
        return False
    segments = unquote(path).split("/")[1:]
    if any(s in (".", "..") for s in segments) or "" in segments[:-1]:
        return False
    if prefix:
        return path == prefix or path.startswith(prefix + "/")
    return bool(segments) and VERSIONED.fullmatch(segments[0]) is not None


def media_url(doc: Any) -> str | None:
    """The first URL in `doc` (a model call's body) that the model API would
    fetch itself — under a media key, or an Anthropic `{"type": "url"}`
    source — and that is not a `data:` URL; None where there is none."""
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        for key, value in item.items():
            if key in MEDIA_KEYS:
                url = value.get("url") if isinstance(value, dict) else value
                if isinstance(url, str) and not url[:5].lower() == "data:":
                    return url
            stack.append(value)
        if item.get("type") == "url" and isinstance(item.get("url"), str) \
                and not item["url"][:5].lower() == "data:":
            return str(item["url"])
    return None


def _body(cli: h11.Connection, conn: socket.socket) -> bytes | None:
    """The request's whole body (None: past `MAX_BODY`)."""
    out = bytearray()
    while True:
        event = _next(cli, conn)
        if isinstance(event, h11.EndOfMessage):
            return bytes(out)
        if not isinstance(event, h11.Data):
            raise h11.RemoteProtocolError("the request ended in its body")
        out += event.data
        if len(out) > MAX_BODY:
            return None


def _unreadable(request: Any, body: bytes) -> str | None:
    """Why a model call's body cannot be carried: encoded, not JSON, or
    naming a URL the model API would fetch; None when it can."""
    if not body:
        return None
    if any(k.lower() == b"content-encoding" and v.strip().lower() not in (b"", b"identity")
           for k, v in request.headers):
        return "an encoded body cannot be read"
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "a body that is not JSON is not a model call"
    url = media_url(doc)
    if url is not None:
        return f"the call names a URL the model API would fetch itself ({url[:100]})"
    return None


def _refuse(cli: h11.Connection, conn: socket.socket, why: str) -> None:
    body = (f"zapcli: {why}: with network: false only the model API's requests reach the "
            "endpoint\n").encode()
    try:
        conn.sendall(cli.send(h11.Response(status_code=403, headers=[
            ("content-type", "text/plain"), ("content-length", str(len(body))),
            ("connection", "close")])) or b"")
        conn.sendall(cli.send(h11.Data(data=body)) or b"")
        conn.sendall(cli.send(h11.EndOfMessage()) or b"")
    except (OSError, h11.LocalProtocolError):
        pass


def _next(peer: h11.Connection, sock: socket.socket) -> Any:
    """The next event from `peer`, reading from `sock` as it needs."""
    while True:
        event = peer.next_event()
        if event is not h11.NEED_DATA:
            return event
        peer.receive_data(sock.recv(READ))


def carry(conn: socket.socket, connect: Callable[[], socket.socket], prefix: str,
          authority: str) -> None:
    """Carry `conn`'s requests to the endpoint and the answers back, one
    exchange at a time, until either side closes or a request is refused.
    Each request goes on a connection of its own (`connect()`), asking the
    endpoint to close it after its answer: whatever of a carried request a
    server leaves unread (a body it did not want, a length it reads another
    way) is never read as a request of its own. Its Host is `authority`
    (the base URL's, as the CLI names it): a server choosing a site by it
    (a reverse proxy for several) sees the model's."""
    cli = h11.Connection(h11.SERVER)  # the CLI's side: we answer it
    try:
        while _exchange(cli, conn, connect, prefix, authority.encode("ascii")):
            cli.start_next_cycle()
    except (OSError, h11.ProtocolError):
        return


HOP = {b"connection", b"keep-alive", b"proxy-connection"}  # the endpoint's connection is ours
OURS = HOP | {b"host"}


def _exchange(cli: h11.Connection, conn: socket.socket, connect: Callable[[], socket.socket],
              prefix: str, authority: bytes) -> bool:
    """One request and its answer; whether the connection goes on."""
    request = _next(cli, conn)
    if not isinstance(request, h11.Request):
        return False  # closed (ConnectionClosed) or paused
    names = {k.lower() for k, _ in request.headers}
    if request.method == b"CONNECT" or b"upgrade" in names:
        _refuse(cli, conn, "a protocol switch or tunnel is not carried")
        return False
    if request.method not in (b"GET", b"POST"):  # the model calls': the models list, and calls
        _refuse(cli, conn, f"{request.method.decode('ascii', 'replace')} is not a model call")
        return False
    if b"transfer-encoding" in names and b"content-length" in names:
        # h11 reads the chunks; a server that frames by the length reads the chunks' data
        # as a request of its own (RFC 9112 6.1: reject, or never pass the length on)
        _refuse(cli, conn, "a body framed both by its length and by chunks is not carried")
        return False
    if request.method == b"GET" and (b"transfer-encoding" in names or any(
            k.lower() == b"content-length" and v != b"0" for k, v in request.headers)):
        # a server that reads no body for a GET (http.server's handlers, cpp-httplib's) would
        # read it as its next request; the model API sends one with a POST only
        _refuse(cli, conn, "a body with GET is not carried")
        return False
    if not allowed(request.target, prefix):
        _refuse(cli, conn, f"{request.method.decode('ascii', 'replace')} "
                           f"{request.target.decode('ascii', 'replace')[:200]} is not the model API")
        return False
    body = _body(cli, conn)
    why = "a body past 64 MB is not carried" if body is None else _unreadable(request, body)
    if why is not None:
        _refuse(cli, conn, why)
        return False
    upstream = connect()
    try:
        up = h11.Connection(h11.CLIENT)  # the endpoint's side: we ask it
        head = up.send(h11.Request(
            method=request.method, target=request.target, http_version=request.http_version,
            headers=[(b"host", authority),
                     *((k, v) for k, v in request.headers if k.lower() not in OURS),
                     (b"connection", b"close")])) or b""
        try:
            upstream.sendall(head + (up.send(h11.Data(data=body)) or b"" if body else b"")
                             + (up.send(h11.EndOfMessage()) or b""))
        except OSError:  # it answered (and closed) before it read it all: the answer
            pass
        while True:  # the answer, as it comes (a stream of events included)
            event = _next(up, upstream)
            if isinstance(event, h11.ConnectionClosed):
                return False
            if isinstance(event, h11.Response):  # whether the CLI's connection goes on is h11's
                event = h11.Response(status_code=event.status_code, reason=event.reason,
                                     http_version=event.http_version, headers=[
                                         (k, v) for k, v in event.headers if k.lower() not in HOP])
            conn.sendall(cli.send(event) or b"")
            if isinstance(event, h11.EndOfMessage):
                break
    finally:
        upstream.close()
    return cli.our_state is h11.DONE and cli.their_state is h11.DONE
