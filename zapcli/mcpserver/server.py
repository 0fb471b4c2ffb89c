"""The MCP server: the low-level SDK `Server`, its two handlers, and the
stdio / streamable-HTTP runners, each in both protocol eras (`.eras`).
Imports `mcp`, `anyio`, `.eras`, `zapcli.toolapi`, `zapcli.lifecycle.session`,
`zapcli.ops.steer` (decisions from elicitations). A tool call runs the
blocking op in a worker thread, inside the connection's session
(`session.using`): each connection is its own session unless ZAPCLI_SESSION
is set (a 2026-07-28 HTTP request has no connection: they share the
server's). While poll/wait block, the worker reports progress and forwards the
approval requests of this connection's subagents as elicitations when the
client declares the capability: a request to the client on a connection
that can take one (stdio, legacy HTTP; asked in the background, so progress
goes on and the wait's timeout holds; an unanswered one ends with the call),
an `InputRequiredResult` on a 2026-07-28 one (the client answers and calls
again; the wait goes on with what is left of its timeout: the deadline rides
in `request_state`). poll and wait block at most `WAIT_CAP_S` (40 s; C22:
hosts drop a call after about a minute), then answer "still running" as an
ordinary result. A call whose client cancels it or goes away stops at its
worker's next tick, and never its subagents; a stdio client gone is one
line on stderr.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from zapcli import __version__
from zapcli.lifecycle import session as sessions
from zapcli.mcpserver import eras
from zapcli.mcpserver.tools import TOOLS, result
from zapcli.render.common import elicited
from zapcli.toolapi.dispatch import Env, Reply, call
from zapcli.toolapi.spec import BY_NAME

INSTRUCTIONS = ("zapcli runs work in parallel background subagents (OS processes). spawn returns "
                "an id at once; wait (or poll) for it; output and replay show what it did. "
                "Subagents keep running after this connection ends.")
PROGRESS_EVERY_S = 1.0
# Several MCP hosts end a tools/call after about a minute and drop its result
# (C22): poll and wait answer "still running" by then. ZAPCLI_MCP_WAIT_CAP_S
# changes it (a client known to wait longer; tests).
WAIT_CAP_S = 40.0
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string", "title": "Reason (optional)",
                              "description": "Told to the subagent's model."}},
}


class NeedInput(Exception):  # noqa: N818 - a signal, not an error
    """Raised from a worker: the client must answer these elicitations first."""

    def __init__(self, requests: dict[str, types.ElicitRequest]):
        super().__init__("input required")
        self.requests = requests


@dataclass
class Conn:
    """One connection's state: its session and the subagents it started."""

    session: str
    env: Env = field(default_factory=lambda: Env(surface="tool"))
    asked: set[tuple[str, str]] = field(default_factory=set)
    confirmed: dict[str, Any] = field(default_factory=dict)  # "confirm:<key>" -> ElicitResult


class Zapserver:
    def __init__(self) -> None:
        self.fixed = os.environ.get("ZAPCLI_SESSION") or None
        self.cap_s = wait_cap()
        self.conns: dict[str, Conn] = {}
        self.cut = 0  # tool calls cancelled before they answered
        self.closing = threading.Event()  # set: every blocking call stops at its next tick

    def conn(self, ctx: Any) -> Conn:
        connection = getattr(ctx.session, "_connection", None)
        key = getattr(connection, "session_id", None) or "-"
        if key not in self.conns:
            from zapcli import ids

            name = self.fixed or f"mcp-{ids.new_id()[3:]}"
            self.conns[key] = Conn(name)
            _log(f"connection {key}: session {name} (protocol {ctx.protocol_version})")
        return self.conns[key]

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        if params.name not in BY_NAME:  # the protocol's error, not a tool's (MCP: tools/call)
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}; zapcli's tools: "
                           + ", ".join(BY_NAME))
        args, deadline = _resume(params.name, params.arguments, params.request_state)
        try:
            conn = self.conn(ctx)
            await self._answers(conn, params.input_responses)
            reply = await self._run(ctx, conn, params.name, args)
        except NeedInput as need:
            state = json.dumps({"approvals": True, "deadline": deadline})
            return types.InputRequiredResult(input_requests=dict(need.requests),
                                             request_state=state)
        except Exception as exc:  # noqa: BLE001 - the server answers; it never crashes on input
            reply = Reply(f"internal error: {type(exc).__name__}: {exc}", None, 1, error=True,
                          code="internal")
        return result(reply)

    async def _run(self, ctx: Any, conn: Conn, name: str, args: Any) -> Reply:
        ticker = _Ticker(ctx, conn, self.closing)
        # shares the connection's ids and lock; a client that cannot elicit decides
        # approvals itself, so poll/wait show a request at once
        env = conn.env.copy(on_tick=ticker, stop_on_approval=not ticker.can_elicit,
                            confirm=ticker.confirm if ticker.can_elicit else None,
                            cap_s=self.cap_s)

        def work() -> Reply:
            with sessions.using(conn.session):
                return call(name, args, env)

        async with anyio.create_task_group() as ticker.asks:  # questions asked meanwhile
            try:
                reply = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            except anyio.get_cancelled_exc_class():
                ticker.cancelled.set()  # the client cancelled it or went away: stop the worker
                self.cut += 1
                raise
            # a question still unanswered ends with the call (its request stays pending)
            ticker.asks.cancel_scope.cancel()
        if ticker.need:
            raise NeedInput(ticker.need)
        return reply

    async def _answers(self, conn: Conn, responses: Any) -> None:
        """Answers to elicitations we asked for in an InputRequiredResult."""
        for key, answer in (responses or {}).items():
            if str(key).startswith("confirm:") and isinstance(answer, types.ElicitResult):
                conn.confirmed[str(key)] = answer  # the call asked again finds it
                continue
            parts = str(key).split(":")
            if len(parts) == 3 and parts[0] == "approval" and isinstance(answer, types.ElicitResult):
                await anyio.to_thread.run_sync(_decide, parts[1], parts[2], answer)


def wait_cap() -> float:
    """The longest a poll/wait call blocks: WAIT_CAP_S, or ZAPCLI_MCP_WAIT_CAP_S."""
    given = os.environ.get("ZAPCLI_MCP_WAIT_CAP_S", "").strip()
    if not given:
        return WAIT_CAP_S
    try:
        cap = float(given)
    except ValueError:
        cap = -1.0
    if not 1 <= cap <= 3600:
        from zapcli.errors import UsageError

        raise UsageError(f"ZAPCLI_MCP_WAIT_CAP_S must be a number of seconds from 1 to 3600 "
                         f"(default {WAIT_CAP_S:g}), got {given!r}")
    return cap


def _resume(name: str, args: Any, state: str | None) -> tuple[Any, float | None]:
    """A wait's arguments and the time its timeout ends. Called again after an
    InputRequiredResult (`state` is what we sent), the wait gets what is left
    of its first call's timeout: the client's round trip counts."""
    if name != "wait" or not isinstance(args, dict) or not isinstance(args.get("timeout"), (int, float)):
        return args, None
    try:
        deadline = float(json.loads(state or "{}").get("deadline"))
    except (ValueError, TypeError, AttributeError):
        return args, time.time() + args["timeout"]  # the first call (or a state we did not write)
    return {**args, "timeout": round(max(deadline - time.time(), 0.0), 3)}, deadline


def _decide(sid: str, req: str, answer: types.ElicitResult) -> str:
    """Approve on accept; deny on decline or cancel, with the reason given."""
    from zapcli.errors import ZapcliError
    from zapcli.ops.steer import decide

    given = (answer.content or {}).get("reason") if answer.content else None
    reason = str(given) if given else None
    approve = answer.action == "accept"
    if not approve and reason is None:
        reason = ("declined by the user of the MCP client" if answer.action == "decline"
                  else "the user of the MCP client dismissed the approval request")
    try:
        decide(sid, req, approve, reason or "approved by the user of the MCP client")
    except ZapcliError as exc:  # decided elsewhere meanwhile, or it ended
        return exc.message
    return "approve" if approve else "deny"


class _Ticker:
    """Called from the worker while poll/wait block: progress notifications
    (at most one a second) and approval requests forwarded as elicitations."""

    def __init__(self, ctx: Any, conn: Conn, closing: threading.Event):
        self.ctx, self.conn, self.closing = ctx, conn, closing
        self.cancelled = threading.Event()
        self.asks: Any = None  # the call's task group: elicitations in flight
        self.last = -PROGRESS_EVERY_S
        self.need: dict[str, types.ElicitRequest] = {}
        caps = ctx.session.client_capabilities
        elicit = getattr(caps, "elicitation", None)
        self.can_elicit = elicit is not None and (elicit.form is not None or elicit.url is None)
        self.back_channel = bool(ctx.session.can_send_request)

    def __call__(self, views: list[Any], elapsed: float) -> None:
        if self.cancelled.is_set() or self.closing.is_set():
            raise _Cancelled()
        if elapsed - self.last >= PROGRESS_EVERY_S:
            self.last = elapsed
            running = sum(1 for v in views if not v.terminal)
            message = f"{running} of {len(views)} still running ({int(elapsed)}s)"
            try:
                anyio.from_thread.run(self.ctx.session.report_progress, elapsed, None, message)
            except Exception:  # noqa: BLE001 - progress is best effort
                pass
        if self.can_elicit:
            self._forward([v for v in views if v.pending_approval])

    def _forward(self, views: list[Any]) -> None:
        with self.conn.env.lock:
            mine = set(self.conn.env.started)
        for v in views:
            req = v.pending_approval
            key = (v.id, str(req.get("req_id")))
            if v.id not in mine or key in self.conn.asked:
                continue
            self.conn.asked.add(key)
            message = elicited(v.id, req, v.task)
            if self.back_channel:  # asked meanwhile: progress goes on, the timeout holds
                anyio.from_thread.run_sync(self.asks.start_soon, self._ask, key, message)
            else:
                self.need[f"approval:{key[0]}:{key[1]}"] = types.ElicitRequest(
                    params=types.ElicitRequestFormParams(message=message,
                                                         requested_schema=APPROVAL_SCHEMA))
        if self.need:
            raise _StopWaiting()

    def confirm(self, what: str) -> tuple[bool, str]:
        """Ask the client's user to approve `what` (from the worker): at once
        over a back channel, else through an InputRequiredResult whose answer
        the call asked again finds (`Conn.confirmed`)."""
        import hashlib

        key = "confirm:" + hashlib.sha256(what.encode()).hexdigest()[:16]
        message = f"zapcli: {what}. Accept to allow it, decline to refuse it."
        answer = self.conn.confirmed.pop(key, None)
        if answer is None and self.back_channel:
            answer = anyio.from_thread.run(self._elicit, message)
        if answer is None:
            self.need[key] = types.ElicitRequest(params=types.ElicitRequestFormParams(
                message=message, requested_schema=APPROVAL_SCHEMA))
            raise _StopWaiting()
        if answer.action == "accept":
            return True, "approved by the user of the MCP client"
        given = (answer.content or {}).get("reason") if answer.content else None
        return False, str(given) if given else (
            "declined by the user of the MCP client" if answer.action == "decline"
            else "the user of the MCP client dismissed it")

    async def _ask(self, key: tuple[str, str], message: str) -> None:
        try:
            answer = await self._elicit(message)
        except anyio.get_cancelled_exc_class():
            self.conn.asked.discard(key)  # unanswered when the call ended: a later one asks again
            raise
        await anyio.to_thread.run_sync(_decide, key[0], key[1], answer)

    async def _elicit(self, message: str) -> types.ElicitResult:
        try:
            return await self.ctx.session.elicit_form(message, APPROVAL_SCHEMA,
                                                      related_request_id=self.ctx.request_id)
        except Exception as exc:  # noqa: BLE001 - a client that fails to answer denies
            return types.ElicitResult(action="cancel", content={"reason": f"no answer ({exc})"})


class _StopWaiting(Exception):
    """Ends the blocking op early so the handler can return InputRequiredResult."""


class _Cancelled(Exception):
    """Ends the blocking op of a call nobody waits for any more."""


def build(zs: Zapserver | None = None) -> Server[Any]:
    zs = zs or Zapserver()
    return eras.install(Server("zapcli", version=__version__, instructions=INSTRUCTIONS,
                               on_list_tools=zs.list_tools, on_call_tool=zs.call_tool))


def _log(message: str) -> None:
    sys.stderr.write(f"zapcli mcp: {message}\n")
    sys.stderr.flush()


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    zs = Zapserver()
    server = build(zs)
    broken = False
    try:
        async with stdio_server() as (read, write):
            await eras.serve_stdio(server, read, write, server.create_initialization_options())
    except Exception as exc:  # noqa: BLE001 - re-raised unless the client went away
        if not _disconnected(exc):
            raise
        broken = True
    finally:
        zs.closing.set()  # a worker still blocking ends at its next tick (<= 0.5 s)
    if broken or zs.cut:
        _log("the client disconnected" + (f"; {zs.cut} call(s) cancelled" if zs.cut else ""))


def _disconnected(exc: BaseException) -> bool:
    """A broken pipe or closed stream, alone or in (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    if inner is not None:
        return all(_disconnected(e) for e in inner)
    return isinstance(exc, (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError,
                            anyio.ClosedResourceError))


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (port 0: one the system picks), or a
    ZapcliError naming the address and why."""
    from zapcli.errors import ZapcliError

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ZapcliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}".lower()) from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        why = (exc.strerror or str(exc)).lower()
        raise ZapcliError(f"cannot listen on {host}:{port}: {why}") from None
    return sock


async def serve_http(sock: socket.socket, token: str | None = None,
                     token_file: str | None = None) -> None:
    """Streamable HTTP on a socket from `listen` (or `lock.listen_unix`); says
    "serving" once uvicorn has started on it, with the port bound. With
    `token`, every request must carry it (`zapcli.mcpserver.lock`)."""
    import uvicorn

    from zapcli.mcpserver.lock import BearerGate

    server = build()
    unix = sock.family == socket.AF_UNIX
    if unix:  # no browser reaches a unix socket: no DNS rebinding to guard against
        from mcp.server.transport_security import TransportSecuritySettings

        app: Any = server.streamable_http_app(transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=False))
        where = f"the unix socket {sock.getsockname()} (mode 0600: this user only)"
    else:
        host, port = sock.getsockname()[:2]
        app = server.streamable_http_app(host=host)
        where = f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
    app = eras.VersionGate(app)
    if token is not None:
        app = BearerGate(app, token)
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    async def announce() -> None:
        while not web.started:
            await anyio.sleep(0.02)
        _log(f"serving streamable HTTP on {where}")
        if token_file is not None:
            _log(f"every request needs the header `Authorization: Bearer <token>`; the token is "
                 f"in {token_file} (mode 0600, removed when this server stops)")
        elif not unix:
            _log("WARNING: no token: any user of this machine can use this server, and what it "
                 "starts runs as you")

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await web.serve(sockets=[sock])
        tg.cancel_scope.cancel()
