"""The gate on an agent CLI's MCP sessions, outside its sandbox: what a
connection to a relay socket (`zapcli.backends.cli_broker`) may make the
real server do. The CLI's own permission prompt decides inside the
sandbox, but any process there (a command the person approved) can reach
the socket too. So a socket answers ONE session (`admits`), and on it
every request that would run the server's code is decided again here, by
zapcli's one decision (`zapcli.approvals`, `mcp_call` with the server's
`allow` list), before the server sees it.

One session: the first, which the CLI opens at its launch (its relay
connects as it starts, before any command of it can run; claude and codex
open each server once). A later connection starts no server: each of its
requests is answered with a refusal (`turn_away`). So neither a server's
tools nor its resources or prompts answer a process that is not the CLI,
and a command cannot raise a question on zapcli's approval server recorded
as the CLI's and spend its approval here.

What passes on that session, by method (default deny, `UNASKED`):
- lifecycle and listing — `initialize`, `server/discover` (MCP 2026's
  handshake; claude 2.1.328 sends it first), `ping`, a notification,
  `tools/list`, `resources/list`, `resources/templates/list`,
  `prompts/list`, `logging/setLevel`, a `subscriptions/listen` for lists'
  changes only (claude sends one) — the `tasks/*` of a session's own
  tool calls (each decided as it was made), and the client's answers to
  the server's own requests: unasked (what a CLI does at launch; they run
  no tool and read nothing the listing does not show);
- `tools/call`: decided as below, call by call;
- any other request — `resources/read`, `resources/subscribe` (or a
  `subscriptions/listen` naming resources), `prompts/get`,
  `completion/complete`, one the gate does not know: it runs
  the server's code outside, as the person (a filesystem server's
  `file:///…/.ssh/id_ed25519`), and no CLI asks about it (claude's resource
  tools are not among those it is given, and never ask), so it is decided
  like a call of a tool no `allow` list names that nobody approved: it
  passes in `full`, or on zapcli's own servers; otherwise refused.

A `tools/call`, by zapcli's decision:
- allowed (an allowlisted tool outside `confirm`, every tool in `full`,
  zapcli's own servers): passes;
- to be asked: passes only on an approval the person gave for this exact
  call (server, tool, arguments — their canonical text, which is what the
  question showed: `1`, `1.0` and `true` differ; and a name claude gives no
  other server's tool: `deploy.prod` and `deploy_prod` share
  `mcp__deploy_prod__run`) through the CLI's own
  prompt — claude's `--permission-prompt-tool`, an `approval_request` of
  the approval server approved at most `FRESH_S` ago — used once. Otherwise it is refused: the
  CLI asks before such a call, so one it never asked about is not the CLI's
  decision, and a second question from the broker would let any sandboxed
  process put words before the person;
- denied (`--unattended`): refused.

A message a server could read otherwise than the gate does is refused
whatever its method (`_twofold`): a key that is a JSON-RPC or MCP member but
for its case (`"Method"`), or two keys of one object that differ in case
alone — servers in Go match keys case-insensitively, so `"Method":
"tools/call"` would pass here as an answer and run there as a call (the
CLI's session is reachable from its commands: a command can take a copy of
its relay's socket, `pidfd_getfd`).

A refusal is a JSON-RPC error answering the call's id, and a diagnostic in
the subagent's trail. The client→server direction is parsed: newline-
delimited JSON-RPC (a batch array, which MCP 2025-03-26 allowed, element by
element), at most `MAX_LINE` bytes a line; each message is forwarded as
re-encoded from what was checked, never as received. A line that is not a
JSON object or array of objects ends the session. The server→client
direction is a byte pump; a refusal goes in between two of its lines.

Imports the standard library, `zapcli.approvals`, `zapcli.trail` (where
the approval server records what the person approved) and
`zapcli.backends.clis` (McpServer, claude's MCP tool names, the approval
server's canonical text of a call).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from typing import Any

from zapcli.approvals import Policy
from zapcli.backends.clis.approval_server import canonical
from zapcli.backends.clis.base import McpServer
from zapcli.backends.clis.claude import mcp_tool_name
from zapcli.trail import reader, store
from zapcli.trail.records import parse_iso

MAX_LINE = 8 << 20  # one JSON-RPC message from the client: a file's content fits, a flood does not
CHUNK = 1 << 16
FRESH_S = 60.0  # how long the person's approval of a call waits for the call
REFUSED = -32001  # JSON-RPC: a server-defined error
# requests that pass unasked: a session's lifecycle and listings, and the state of its own
# tool calls (tasks/*: a call made a task, which the gate decided); notifications pass too
UNASKED = frozenset({"initialize", "server/discover", "ping", "tools/list", "resources/list",
                     "resources/templates/list", "prompts/list", "logging/setLevel",
                     "tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
# MCP 2026's stream of notifications passes unasked for these (a list changed), not for a
# resource's updates (`resourceSubscriptions`, the former resources/subscribe)
LISTS_CHANGED = frozenset({"toolsListChanged", "promptsListChanged", "resourcesListChanged"})


class Malformed(ValueError):
    """A client line that is not JSON-RPC: the session ends."""


def _constant(name: str) -> Any:
    raise Malformed(f"{name} is not JSON")


class McpGate:
    """zapcli's decision on each `tools/call` of subagent `sid`'s MCP
    sessions: `policy` is its approval mode and folders."""

    def __init__(self, sid: str, policy: Policy, own: tuple[McpServer | None, ...] = (),
                 servers: tuple[McpServer, ...] = ()):
        self.sid, self.policy = sid, policy
        self.own = tuple(s for s in own if s is not None)  # zapcli's approval server: by identity
        self.servers = (*servers, *self.own)  # every server of the run: whose names claude's may be
        self._used: set[str] = set()  # approvals already spent on a call
        self._opened: set[int] = set()  # servers whose one session has started
        self._turned: set[int] = set()  # servers a later session was refused of
        self._lock = threading.Lock()

    def admits(self, server: McpServer) -> bool:
        """Whether a new session of `server` may start: its first only (the
        CLI's, opened at its launch before any command runs); a later one is
        another process in the sandbox. `server` by identity: one object per
        socket."""
        with self._lock:
            first = id(server) not in self._opened
            told = id(server) in self._turned  # the trail says it once, not per connection
            self._opened.add(id(server))
            if not first:
                self._turned.add(id(server))
        if not first and not told:
            self._note(f"refused a later connection to MCP server {server.name!r} (and refuses "
                       "any more): its socket answers the agent CLI's first session only, and "
                       "another process in the sandbox reached it")
        return first

    def turn_away(self, conn: socket.socket, server: McpServer) -> None:
        """A session `admits` refused: every request on `conn` is answered
        with a refusal until the client ends it (or sends what is not
        JSON-RPC); no server is started."""
        why = (f"zapcli refused this session: MCP server {server.name!r} answers the agent "
               "CLI's own session only")
        try:
            for line in _lines(conn):
                if not line.strip():
                    continue
                message = _parse(line)
                batch = message if isinstance(message, list) else [message]
                refused = [{"jsonrpc": "2.0", "id": i["id"], "error": {"code": REFUSED,
                                                                        "message": why}}
                           for i in batch if i.get("id") is not None]
                if refused:
                    conn.sendall(_encode(refused if isinstance(message, list) else refused[0]))
        except (OSError, ValueError):  # Malformed too: the session ends
            pass
        finally:
            conn.close()

    def refusal(self, server: McpServer, tool: str, arguments: dict[str, Any]) -> str | None:
        """Why `tool(arguments)` on `server` may not run (None: it runs)."""
        if self._own(server):
            return None  # zapcli's own: the team board, the approval server (which only asks)
        call = {"server": server.name, "tool": tool, "arguments": arguments}
        verdict = self.policy.check("mcp_call", call, allowlisted=tool in server.allow)
        if verdict.action == "allow":
            return None
        name = mcp_tool_name(server.name, tool)
        shared = self._sharing(server, name)
        if verdict.action == "ask" and not shared and self._spend(name, arguments):
            return None
        why = verdict.reason if verdict.action == "deny" else (
            f"{verdict.reason}, and claude names it {name}, a name a tool of server {shared!r} "
            "may have as well (claude makes what is not a letter, digit, _ or - a _): an "
            "approval of that name is not one of this call; rename one of the servers in "
            "mcp.json" if shared else
            f"{verdict.reason}, and no approval of this exact call came through the agent "
            "CLI's permission prompt")
        self._note(f"refused a call of MCP tool {tool!r} on server {server.name!r} that reached "
                   f"its socket: {why}")
        return f"zapcli refused this call: {why}"

    def _own(self, server: McpServer) -> bool:
        return server.trusted or any(server is s for s in self.own)

    def other(self, server: McpServer, method: Any, params: Any) -> str | None:
        """Why request `method` (not `tools/call`, not one of `UNASKED`) may
        not reach `server` (None: it does). It runs the server's code as the
        person and no CLI asks a question about it: decided as a call of a
        tool no `allow` list names, that nobody approved."""
        if self._own(server):
            return None
        shown = method if isinstance(method, str) else json.dumps(method)
        uri = params.get("uri") if isinstance(params, dict) else None
        what = f"{shown} {uri}" if isinstance(uri, str) else shown
        call = {"server": server.name, "tool": shown, "arguments": params}
        verdict = self.policy.check("mcp_call", call, allowlisted=False)
        if verdict.action == "allow":
            return None
        why = verdict.reason if verdict.action == "deny" else (
            f"{shown} is not a tool call: it runs the MCP server's code outside the sandbox and "
            "the agent CLI asks no question about it; only the approval mode `full` lets it pass")
        self._note(f"refused {what[:200]!r} on MCP server {server.name!r}: {why}")
        return f"zapcli refused this request: {why}"

    def _sharing(self, server: McpServer, name: str) -> str | None:
        """Another server of the run whose tool claude could name `name` too
        (`a.b` and `a_b`; `a` with `b__c` and `a__b` with `c`), or None."""
        for other in self.servers:
            if other is not server and name.startswith(mcp_tool_name(other.name, "")):
                return other.name
        return None

    def _spend(self, name: str, arguments: dict[str, Any]) -> bool:
        """Use the person's approval of `name(arguments)`, given through the
        CLI's prompt at most FRESH_S ago and not used yet."""
        try:
            records = reader.read(store.path_for(self.sid)).records
        except (OSError, ValueError):
            return False
        call = canonical(arguments)  # what the person was shown: `1`, `1.0`, `true` differ
        asked = {r.get("req_id") for r in records if r.get("type") == "approval_request"
                 and r.get("by") == "claude" and r.get("tool") == name
                 and isinstance(r.get("arguments"), dict) and canonical(r["arguments"]) == call}
        decided: set[Any] = set()
        now = time.time()
        with self._lock:
            for rec in records:
                req_id = rec.get("req_id")
                if rec.get("type") != "approval_decision" or req_id not in asked or req_id in decided:
                    continue
                decided.add(req_id)  # the first decision on a request is the one that counts
                if rec.get("decision") != "approve" or str(req_id) in self._used:
                    continue
                try:
                    fresh = now - parse_iso(str(rec.get("ts"))) <= FRESH_S
                except ValueError:
                    continue
                if fresh:
                    self._used.add(str(req_id))
                    return True
        return False

    def _note(self, message: str) -> None:
        try:
            store.append(store.path_for(self.sid), "diagnostic",
                         {"dimension": "mcp", "name": "gate", "message": message})
        except (OSError, ValueError):
            pass

    def session(self, conn: socket.socket, proc: subprocess.Popen[bytes],
                server: McpServer) -> None:
        """Carry one MCP session between the client on `conn` and the server
        `proc` (its stdin and stdout pipes) until either side ends."""
        assert proc.stdin is not None and proc.stdout is not None
        out = _Out(conn)
        back = threading.Thread(target=out.pump, args=(proc.stdout,), daemon=True,
                                name="zapcli-broker")
        back.start()
        bad = False
        try:
            for line in _lines(conn):
                if not line.strip():
                    continue  # carries nothing: dropped
                for message in self._pass(_parse(line), server, out):
                    proc.stdin.write(message)
                    proc.stdin.flush()
        except Malformed:
            bad = True
        except (OSError, ValueError):
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
            if bad:  # the session ends now, whatever the server would still say
                proc.terminate()
            try:
                conn.shutdown(socket.SHUT_RD)
            except OSError:
                pass
            back.join()
            conn.close()

    def _pass(self, message: dict[str, Any] | list[Any], server: McpServer,
              out: _Out) -> list[bytes]:
        """What of `message` goes on to the server, re-encoded; refused calls
        are answered on `out`."""
        batch = message if isinstance(message, list) else [message]
        kept, refused = [], []
        for item in batch:
            why = self._check(item, server)
            if why is None:
                kept.append(item)
            elif item.get("id") is not None:  # a notification gets no answer
                refused.append({"jsonrpc": "2.0", "id": item["id"],
                                "error": {"code": REFUSED, "message": why}})
        if refused:
            out.inject(_encode(refused if isinstance(message, list) else refused[0]))
        if not kept:
            return []
        return [_encode(kept if isinstance(message, list) else kept[0])]

    def _check(self, item: dict[str, Any], server: McpServer) -> str | None:
        twofold = _twofold(item)
        if twofold:
            self._note(f"refused a message to MCP server {server.name!r}: {twofold}")
            return f"zapcli refused this message: {twofold}"
        if "method" not in item:
            return None  # the client's answer to a request of the server's
        method = item["method"]
        if isinstance(method, str) and (method in UNASKED or (
                method.startswith("notifications/") and "id" not in item)):
            return None
        if method == "subscriptions/listen" and _lists_only(item.get("params")):
            return None
        if method != "tools/call":
            return self.other(server, method, item.get("params"))
        params = item.get("params")
        params = params if isinstance(params, dict) else {}
        tool, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(tool, str) or not isinstance(arguments, dict):
            return "zapcli refused this call: tools/call needs a string name and object arguments"
        return self.refusal(server, tool, arguments)


# what a JSON-RPC message and a tools/call's params are made of: a key that is one of
# these but for its case is read as it by a server that matches keys case-insensitively
_MEMBERS = frozenset({"jsonrpc", "id", "method", "params", "result", "error", "name",
                      "arguments", "_meta", "task", "uri"})


def _twofold(message: dict[str, Any]) -> str | None:
    """Why the server may read `message` otherwise than the gate (None: it
    may not): a key of it or of its params that is a member but for its
    case, or two keys of one object that differ in case alone (Go's
    encoding/json: the last case-insensitive match wins). A tool's own
    arguments may be named `Name`."""
    params = message.get("params")
    for obj in (message, params if isinstance(params, dict) else {}):
        for key in obj:
            if key.casefold() in _MEMBERS and key != key.casefold():
                return f"its key {key!r} is {key.casefold()!r} but for its case"
    stack: list[Any] = [message]
    while stack:
        obj = stack.pop()
        if isinstance(obj, list):
            stack += obj
        elif isinstance(obj, dict):
            seen: dict[str, str] = {}
            for key, value in obj.items():
                if key.casefold() in seen:
                    return f"its keys {seen[key.casefold()]!r} and {key!r} differ in case alone"
                seen[key.casefold()] = key
                stack.append(value)
    return None


def _lists_only(params: Any) -> bool:
    """Whether a `subscriptions/listen` asks for nothing but lists' changes."""
    if not isinstance(params, dict) or not set(params) <= {"_meta", "notifications"}:
        return False
    wanted = params.get("notifications")
    return isinstance(wanted, dict) and set(wanted) <= LISTS_CHANGED


def _lines(conn: socket.socket) -> Any:
    """The client's lines (without the newline), each at most MAX_LINE
    bytes: a longer one is Malformed."""
    buf = bytearray()
    while True:
        data = conn.recv(CHUNK)
        if not data:
            if buf.strip():
                raise Malformed("the last line has no end")
            return
        buf += data
        while True:
            end = buf.find(b"\n")
            if end < 0:
                break
            if end > MAX_LINE:
                raise Malformed("line too long")
            line = bytes(buf[:end])
            del buf[:end + 1]
            yield line
        if len(buf) > MAX_LINE:
            raise Malformed("line too long")


def _parse(line: bytes) -> dict[str, Any] | list[Any]:
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise Malformed(str(exc) or "nested too deep") from None
    items = message if isinstance(message, list) else [message]
    if not items or not all(isinstance(i, dict) for i in items):
        raise Malformed("not a JSON-RPC message")
    return message  # type: ignore[no-any-return]


def _encode(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"


class _Out:
    """The server→client direction: its bytes as they come, and a refusal
    put in only where a server's line has ended."""

    def __init__(self, conn: socket.socket):
        self.conn = conn
        self._lock = threading.Lock()
        self._boundary = True
        self._waiting: list[bytes] = []

    def pump(self, stdout: Any) -> None:
        fd = stdout.fileno()
        try:
            while True:
                data = os.read(fd, CHUNK)
                if not data:
                    break
                with self._lock:
                    self.conn.sendall(data)
                    self._boundary = data.endswith(b"\n")
                    if self._boundary and self._waiting:
                        self.conn.sendall(b"".join(self._waiting))
                        self._waiting.clear()
        except OSError:
            pass
        try:
            self.conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def inject(self, line: bytes) -> None:
        with self._lock:
            if self._boundary:
                self.conn.sendall(line)
            else:
                self._waiting.append(line)
