"""Both protocol eras on one server: the 2026-07-28 revision (every request
carries its version in `_meta`; `server/discover`) and the handshake
revisions before it (`initialize`, 2024-11-05 to 2025-11-25) — for
`zapcli mcp serve` and zapcli's team MCP server alike.

Imports `mcp`, `mcp_types`, `anyio`. The SDK decides a stdio connection's
era once, by its first request, and then refuses the other era; so a
client that probes with `server/discover` and then sends `initialize` (Claude
Code 2.1.280 does, and any client whose probe timed out) is refused the
handshake, and an `initialize` after a request that failed is refused too.
The specification lets a server serve both eras on one process, request by
request, and that is what this does:

- **stdio** (`serve_stdio`): every message goes to one of two loops of the
  SDK's own: a request carrying the 2026-07-28 envelope (or `server/discover`)
  to the per-request loop, which validates it (an unsupported version is
  -32022, UnsupportedProtocolVersion, naming what is supported) and serves
  it statelessly; `initialize` and every other message to the handshake
  loop, whose state is the process's. A cancellation goes where its request went.
- **HTTP** (`VersionGate`, in front of the SDK's app): a request naming in
  `MCP-Protocol-Version` a version no era serves is answered 400 with -32022
  whatever its body's shape (the SDK would complain of a missing envelope),
  and a 2026-07-28 body without that header 400 with -32020, HeaderMismatch
  (the SDK would take it for a 2025 request without a session).
- `server/discover` lists every version served, newest first.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.models import InitializationOptions
from mcp.server.runner import modern_error_data, modern_on_request, serve_loop
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
)
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

SUPPORTED = (*reversed(MODERN_PROTOCOL_VERSIONS), *reversed(HANDSHAKE_PROTOCOL_VERSIONS))
VERSION_KEY = types.PROTOCOL_VERSION_META_KEY
MODERN, LEGACY = "modern", "legacy"
BUFFER = 64  # messages waiting for a loop: a client that floods waits on its pipe


def install(server: Server[Any]) -> Server[Any]:
    """`server` (the SDK's low-level Server), its `server/discover` naming
    every version it serves, the handshake ones too."""

    async def discover(ctx: Any, params: Any) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=list(SUPPORTED),
            capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=server.instructions)

    server.add_request_handler("server/discover", types.RequestParams, discover)
    return server


def _enveloped(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return isinstance(meta, Mapping) and VERSION_KEY in meta


def era_of(message: Any, owners: dict[Any, str]) -> str:
    """Which loop a message from the client goes to; remembers requests'."""
    if isinstance(message, types.JSONRPCRequest):
        era = MODERN if message.method != "initialize" and (
            message.method == "server/discover" or _enveloped(message.params)) else LEGACY
        owners[message.id] = era
        return era
    if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
        wanted = (message.params or {}).get("requestId")
        return owners.get(wanted, LEGACY)
    return LEGACY  # the handshake's notifications, answers to the server's own requests


async def serve_stdio(server: Server[Any], read_stream: Any, write_stream: Any,
                      init_options: InitializationOptions) -> None:
    """Serve one stream pair in both eras until the client closes it."""
    async with server.lifespan(server) as state:
        legacy_in, legacy_out = anyio.create_memory_object_stream[SessionMessage | Exception](BUFFER)
        modern_in, modern_out = anyio.create_memory_object_stream[SessionMessage | Exception](BUFFER)
        replies, outgoing = anyio.create_memory_object_stream[SessionMessage](BUFFER)
        owners: dict[Any, str] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_loop(server, legacy_out, replies.clone(),
                                             lifespan_state=state, init_options=init_options))
            tg.start_soon(_serve_modern, server, modern_out, replies.clone(), state)
            replies.close()  # each loop holds a clone: the last to end closes the way out
            tg.start_soon(_forward, outgoing, write_stream)
            async with legacy_in, modern_in:
                async for item in read_stream:
                    message = item.message if isinstance(item, SessionMessage) else None
                    era = era_of(message, owners) if message is not None else LEGACY
                    await (modern_in if era == MODERN else legacy_in).send(item)


async def _forward(outgoing: Any, write_stream: Any) -> None:
    async with write_stream:
        async for message in outgoing:
            await write_stream.send(message)


async def _serve_modern(server: Server[Any], read: Any, write: Any, state: Any) -> None:
    """The per-request loop: each request validated by its own envelope, then
    served on a connection of its own (no server-to-client requests)."""
    handle = modern_on_request(server, state)

    async def on_request(dctx: Any, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        route = classify_inbound_request({"method": method, "params": params})
        if isinstance(route, InboundLadderRejection):
            raise MCPError(code=route.code, message=route.message, data=route.data)
        try:
            return await handle(dctx, method, params)
        except (MCPError, ValidationError):
            raise
        except Exception as exc:  # noqa: BLE001 - a handler's failure is the client's error answer
            error = modern_error_data(exc)
            raise MCPError(code=error.code, message=error.message, data=error.data) from exc

    async def on_notify(dctx: Any, method: str, params: Mapping[str, Any] | None) -> None:
        return None  # cancellation and progress are the dispatcher's; nothing else applies

    await JSONRPCDispatcher(read, write).run(on_request, on_notify)


# -- HTTP -------------------------------------------------------------------

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
MAX_PEEK = 4 * 1024 * 1024  # a body larger than this goes on to the SDK unread (it limits it)


class VersionGate:
    """ASGI, in front of the SDK's streamable-HTTP app: the version errors the
    specification names, where the SDK's routing by header alone answers
    with another (see the module docstring)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers") or []
                       if k.lower() == MCP_PROTOCOL_VERSION_HEADER.encode()), None)
        body, more = await _peek(receive)
        refusal = None if more else _refusal(header, body)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        await self.app(scope, _replay(body, more, receive), send)


async def _peek(receive: Receive) -> tuple[bytes, bool]:
    """The request body (up to MAX_PEEK), and whether more is left unread."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return b"".join(chunks), False
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if not message.get("more_body"):
            return b"".join(chunks), False
        if size > MAX_PEEK:
            return b"".join(chunks), True


def _replay(body: bytes, more: bool, receive: Receive) -> Receive:
    sent = False

    async def again() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return again


def _refusal(header: str | None, body: bytes) -> tuple[Any, int, str, dict[str, Any] | None] | None:
    """(id, code, message, data) for a request to refuse here, else None."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(VERSION_KEY) if isinstance(meta, dict) else None
    rid = message.get("id")
    if message["method"] == "initialize":
        return None  # the handshake, however it is decorated: the SDK's to answer
    if header is None and version is not None:
        return (rid, HEADER_MISMATCH, "the MCP-Protocol-Version header is missing; this request's "
                f"_meta names protocol version {version!r}: send it in the header too", None)
    if header is not None and version is None and header not in SUPPORTED:
        return (rid, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                {"supported": list(SUPPORTED), "requested": header})
    return None


async def _answer(send: Send, rid: Any, code: int, message: str, data: Any) -> None:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode()
    await send({"type": "http.response.start", "status": 400, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
