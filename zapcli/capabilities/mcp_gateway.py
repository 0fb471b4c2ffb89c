"""The scoped MCP gateway (docs/explanation/rules.md#undeclared-means-unreachable): tools mcp_search, mcp_describe, mcp_call over the
declared servers only. Imports the `mcp` SDK lazily (inside functions), zapcli.agent.types.

Connections are stdio clients from the official SDK, held open by one asyncio
loop on a background thread; the synchronous Tool.run calls hop onto it. A
call to an undeclared server is refused before anything starts; a declared
server's allowlisted tools run, any other tool asks the `Approver`.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zapcli.agent.types import Approver, ToolContext, ToolResult, ToolSpec
from zapcli.approvals import Decision
from zapcli.capabilities.mcpconfig import ServerConfig

MAX_RESULT = 100_000  # characters of one call's result
MAX_LISTED = 50


@dataclass(frozen=True)
class RemoteTool:
    server: str
    name: str
    description: str
    schema: dict[str, Any]


def _attr(obj: Any, *names: str, default: Any = None) -> Any:
    """The first attribute present (SDK 1.x camelCase, 2.x snake_case)."""
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return default


def _own_children() -> set[int]:
    import psutil

    try:
        return {p.pid for p in psutil.Process().children()}
    except psutil.Error:
        return set()


_SDK_SAID: list[str] = []  # the SDK's last log lines, for a server's failure reason


def _hush_sdk() -> None:
    """The SDK logs what a server did wrong (a line on stdout that is not
    JSON-RPC) with a whole traceback on stderr — a person's terminal at
    `doctor`, a subagent's own stderr in a runner. Its words go into the
    server's failure reason instead (`_said`); nothing is printed."""
    import logging

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            _SDK_SAID.append(record.getMessage().strip()[:200])
            del _SDK_SAID[:-3]

    log = logging.getLogger("mcp")
    if not any(type(h).__name__ == "Keep" for h in log.handlers):
        log.addHandler(Keep(logging.WARNING))
        log.propagate = False


def _said() -> str:
    return f" (the MCP SDK: {_SDK_SAID[-1]})" if _SDK_SAID else ""


def _leaf(exc: BaseException) -> BaseException:
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


class McpGateway:
    """Connections to the declared servers. `status[name]` is `running`, `not configured`,
    `not started` or `failed: <reason>`; `diagnostics` collects start-up problems."""

    def __init__(self, declared: tuple[str, ...], configs: dict[str, ServerConfig],
                 workspace: Path, *, start_timeout: float = 30.0, call_timeout: float = 120.0):
        self.declared = declared
        self.configs = {n: configs[n] for n in declared if n in configs}
        self.workspace = workspace
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self.status = {n: ("not started" if n in self.configs else "not configured")
                       for n in declared}
        self.tools: dict[str, dict[str, RemoteTool]] = {}
        self.diagnostics: list[dict[str, str]] = []
        self._sessions: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._tasks: dict[str, asyncio.Future[Any]] = {}
        self._lock = threading.Lock()
        self._started = False

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> list[dict[str, str]]:
        """Start every configured declared server once; returns new diagnostics."""
        with self._lock:
            if self._started:
                return []
            self._started = True
            if not self.configs:
                return []
            self._loop = asyncio.new_event_loop()
            threading.Thread(target=self._loop.run_forever, name="zapcli-mcp", daemon=True).start()
            atexit.register(self.close)
            before = _own_children()
            future = asyncio.run_coroutine_threadsafe(self._start_all(), self._loop)
            future.result()
            from zapcli import children

            for pid in sorted(_own_children() - before):  # the servers (or their wrappers)
                children.started(pid, "mcp")
        return list(self.diagnostics)

    async def _start_all(self) -> None:
        self._stop = asyncio.Event()
        waits = []
        for name, config in self.configs.items():
            ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._tasks[name] = asyncio.ensure_future(self._serve(config, ready))
            waits.append((name, ready))
        # One shared deadline: the servers start side by side, so N hung servers
        # cost one start_timeout before the first model call, not N of them.
        deadline = asyncio.get_running_loop().time() + self.start_timeout
        for name, ready in waits:
            try:
                left = max(0.0, deadline - asyncio.get_running_loop().time())
                await asyncio.wait_for(asyncio.shield(ready), left)
                self.status[name] = "running"
            except Exception as exc:  # noqa: BLE001 - every failure becomes a diagnostic
                reason = (f"did not answer within {self.start_timeout:g}s"
                          if isinstance(exc, asyncio.TimeoutError) else str(exc))
                self.status[name] = f"failed: {reason}"
                self._tasks[name].cancel()
                self.diagnostics.append({"dimension": "mcp", "name": name, "message": (
                    f"server '{name}' did not start: {reason}; check `command`/`args` for "
                    f"'{name}' in {self.configs[name].source}")})

    def _placed(self, config: ServerConfig) -> tuple[str, str]:
        """(the server's program, the folder it starts in). Not the workspace
        unless its `cwd` says so: a sandboxed agent writes there, and a
        program looks for its code in the folder it starts in (`python -m`
        a module, `npx` its `node_modules/.bin`) — it would run the agent's
        in place of the person's, outside the sandbox. So an empty folder of
        zapcli's own; a relative `cwd` (and a relative program) is taken from
        the workspace."""
        from zapcli.paths import make_dirs, state_dir

        command = config.command
        if "/" in command and not os.path.isabs(command):
            command = str(self.workspace / command)
        if config.cwd:
            return command, str(self.workspace / os.path.expanduser(config.cwd))
        return command, str(make_dirs(state_dir() / "mcp" / "cwd"))

    async def _serve(self, config: ServerConfig, ready: asyncio.Future[Any]) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        _hush_sdk()
        errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        try:
            command, cwd = self._placed(config)
            params = StdioServerParameters(
                command=command, args=list(config.args),
                env=config.expanded_env() or None, cwd=cwd)
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self.tools[config.name] = await self._list_tools(session, config.name)
                    self._sessions[config.name] = session
                    ready.set_result(None)
                    assert self._stop is not None
                    await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported through `ready`
            if isinstance(exc, asyncio.CancelledError) and not ready.done():
                ready.cancel()  # start-up timed out; the waiter already reported it
            elif not ready.done():
                errlog.flush()  # only the end: a server may have written gigabytes
                size = os.fstat(errlog.fileno()).st_size
                text = os.pread(errlog.fileno(), 4096, max(0, size - 4096)).decode("utf-8", "replace")
                tail = text[-300:]
                if len(text) > 300 and "\n" in tail:  # start on a line, not mid-word
                    tail = tail[tail.index("\n") + 1:]
                tail = tail.strip()
                leaf = _leaf(exc)
                reason = f"{type(leaf).__name__}: {leaf}" + (f" (stderr: {tail})" if tail else "")
                reason += _said()
                ready.set_exception(RuntimeError(reason))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._sessions.pop(config.name, None)
            errlog.close()

    @staticmethod
    async def _list_tools(session: Any, server: str) -> dict[str, RemoteTool]:
        result = await session.list_tools()
        items = list(result.tools)
        cursor, pages = _attr(result, "next_cursor", "nextCursor"), 1
        while cursor and pages < 20:
            from mcp import types

            result = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
            items += list(result.tools)
            cursor, pages = _attr(result, "next_cursor", "nextCursor"), pages + 1
        return {t.name: RemoteTool(server, t.name, t.description or "",
                                   dict(_attr(t, "input_schema", "inputSchema", default={})))
                for t in items}

    def close(self) -> None:
        """Stop every server (stdin closed, then terminated by the SDK) and the loop."""
        loop = self._loop
        if loop is None or not loop.is_running():
            return
        stop = self._stop
        if stop is not None:
            loop.call_soon_threadsafe(stop.set)

        async def _drain() -> None:
            if self._tasks:
                await asyncio.wait(list(self._tasks.values()), timeout=10)

        try:
            asyncio.run_coroutine_threadsafe(_drain(), loop).result(15)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        loop.call_soon_threadsafe(loop.stop)
        self._loop = None

    # -- operations --------------------------------------------------------------
    def refusal(self, server: Any) -> str | None:
        """Why `server` cannot be used (undeclared or not running), or None."""
        if server not in self.declared:
            return (f"MCP server {server!r} is not available to this subagent; it may use: "
                    + (", ".join(self.declared) or "none"))
        self.start()
        if self.status.get(server) != "running":
            return f"MCP server '{server}' cannot be used: {self.status.get(server)}"
        return None

    def call(self, server: str, tool: str, arguments: dict[str, Any],
             timeout: float | None = None) -> ToolResult:
        session = self._sessions.get(server)
        if session is None or self._loop is None:
            return ToolResult(False, f"MCP server '{server}' is not running")
        coro = session.call_tool(tool, arguments)
        wait = timeout or self.call_timeout
        try:
            result = asyncio.run_coroutine_threadsafe(
                asyncio.wait_for(coro, wait), self._loop).result(wait + 5)
        except Exception as exc:  # noqa: BLE001 - a failed call goes back to the model
            leaf = _leaf(exc)
            return ToolResult(False, f"{server}/{tool} failed: {type(leaf).__name__}: {leaf}")
        return _render(result)


def _render(result: Any) -> ToolResult:
    parts = []
    for block in _attr(result, "content", default=[]):
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {_attr(block, 'mime_type', 'mimeType', default='?')}]")
        elif kind == "resource":
            res = block.resource
            parts.append(getattr(res, "text", None) or f"[resource: {res.uri}]")
        else:
            parts.append(f"[{kind}: {_attr(block, 'uri', 'name', default='')}]")
    structured = _attr(result, "structured_content", "structuredContent")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) > MAX_RESULT:
        text = text[:MAX_RESULT] + f"\n[result cut at {MAX_RESULT} characters]"
    return ToolResult(not _attr(result, "is_error", "isError", default=False), text)


def _server_tool(gateway: McpGateway, args: dict[str, Any]) -> tuple[RemoteTool | None, str]:
    server, name = args.get("server"), args.get("tool")
    refusal = gateway.refusal(server)
    if refusal:
        return None, refusal
    tool = gateway.tools.get(str(server), {}).get(name) if isinstance(name, str) else None
    if tool is None:
        return None, f"server '{server}' has no tool {name!r}; find tools with mcp_search"
    return tool, ""


def _spec(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(name, description, {"type": "object", "properties": props,
                                        "required": required, "additionalProperties": False})


class McpSearchTool:
    def __init__(self, gateway: McpGateway):
        self.gateway = gateway
        self.spec = _spec("mcp_search", "List tools of your MCP servers ("
                          + ", ".join(gateway.declared) + ") whose name or description matches "
                          "`query` (all when empty).", {"query": {"type": "string"},
                                                        "server": {"type": "string"}}, [])

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.gateway.start()
        terms = str(args.get("query") or "").lower().split()
        wanted = args.get("server")
        if wanted and wanted not in self.gateway.declared:
            return ToolResult(False, self.gateway.refusal(wanted) or "")
        lines, matched = [], 0
        for server in self.gateway.declared:
            if wanted and server != wanted:
                continue
            if self.gateway.status[server] != "running":
                lines.append(f"[{server}: {self.gateway.status[server]}]")
                continue
            for tool in self.gateway.tools.get(server, {}).values():
                hay = f"{tool.name} {tool.description}".lower()
                if all(t in hay for t in terms):
                    matched += 1
                    if matched <= MAX_LISTED:
                        first = tool.description.strip().splitlines()[0] if tool.description else ""
                        lines.append(f"{server}/{tool.name}: {first[:200]}")
        if matched > MAX_LISTED:
            lines.append(f"[truncated: {matched} tools matched; showing {MAX_LISTED}]")
        return ToolResult(True, "\n".join(lines) or "no MCP tools match")


class McpDescribeTool:
    def __init__(self, gateway: McpGateway):
        self.gateway = gateway
        self.spec = _spec("mcp_describe", "Show an MCP tool's description and input schema.",
                          {"server": {"type": "string"}, "tool": {"type": "string"}},
                          ["server", "tool"])

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        tool, problem = _server_tool(self.gateway, args)
        if tool is None:
            return ToolResult(False, problem)
        allowed = tool.name in self.gateway.configs[tool.server].allow
        return ToolResult(True, json.dumps({
            "server": tool.server, "tool": tool.name, "description": tool.description,
            "input_schema": tool.schema,
            "approval": "runs without asking" if allowed else "asks for approval"}, indent=2))


class McpCallTool:
    """`mcp_call(server, tool, arguments)` on a declared server.

    With an `approver`, every call is checked with `approver.check("mcp_call",
    {"server", "tool", "arguments"}, allowlisted=...)`, which applies the one
    decision function (docs/explanation/rules.md#approvals: `confirm` asks even for allowlisted tools;
    `workspace`/`auto-edit` let allowlisted tools run; `full` allows all), and
    what it does not allow goes to `approver.ask`. Without an approver,
    allowlisted tools run and any other call is denied (never run unasked).
    """

    def __init__(self, gateway: McpGateway, approver: Approver | None = None):
        self.gateway = gateway
        self.approver = approver
        self.spec = _spec("mcp_call", "Call a tool on one of your MCP servers ("
                          + ", ".join(gateway.declared) + ").",
                          {"server": {"type": "string"}, "tool": {"type": "string"},
                           "arguments": {"type": "object"}}, ["server", "tool"])

    def needs_approval(self, args: dict[str, Any]) -> bool:
        """True unless the tool is on its declared server's allowlist."""
        config = self.gateway.configs.get(str(args.get("server")))
        return config is None or args.get("tool") not in config.allow

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        arguments = args.get("arguments") or {}
        if not isinstance(arguments, dict):
            return ToolResult(False, "`arguments` must be an object")
        tool, problem = _server_tool(self.gateway, args)
        if tool is None:
            return ToolResult(False, problem)
        allowlisted = not self.needs_approval(args)
        if self.approver is not None:
            call = {"server": tool.server, "tool": tool.name, "arguments": arguments}
            verdict = self.approver.check("mcp_call", call, allowlisted=allowlisted)
            if verdict.action != "allow":
                summary = f"MCP {tool.server}/{tool.name} {json.dumps(arguments)[:200]}"
                approved, reason = self.approver.ask(
                    "mcp_call", Decision(verdict.action, summary, verdict.reason,  # type: ignore[arg-type]
                                         getattr(verdict, "unasked", False)),
                    {**call, "allowlisted": allowlisted})
                if not approved:
                    return ToolResult(False, f"denied: {reason}" if reason else "denied")
        elif not allowlisted:
            return ToolResult(False, f"{tool.server}/{tool.name} needs approval and no "
                              "approver is available; it was not run")
        return self.gateway.call(tool.server, tool.name, arguments)


def gateway_tools(gateway: McpGateway, approver: Approver | None) -> list[Any]:
    return [McpSearchTool(gateway), McpDescribeTool(gateway), McpCallTool(gateway, approver)]
