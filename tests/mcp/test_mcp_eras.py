"""MCP's current revision and the one before it on one server (issue 30
item 7): `zapcli mcp serve` — and zapcli's team MCP server, which agent CLIs
start — answers a 2026-07-28 client (`server/discover`, then requests that
carry their version in `_meta`) and a 2025 one (`initialize`), also one
after the other on one stdio connection, as Claude Code 2.1.280 does (its
probe, then the handshake: anthropics/claude-code #96183); and a version it
does not serve gets the error the specification names for it, never a
generic one: -32022 (UnsupportedProtocolVersion, with the versions it
supports) and, over HTTP, -32020 (HeaderMismatch) for a 2026-07-28 request
that lacks its `MCP-Protocol-Version` header.

The wire is written and read by hand (JSON lines over the real process's
pipes; real HTTP requests), byte for byte what those clients send.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.conftest import wait_until

MODERN = "2026-07-28"
CLAUDE_2_1_280 = {"name": "claude-code", "title": "Claude Code", "version": "2.1.280"}


def meta(version: str = MODERN) -> dict[str, Any]:
    return {"_meta": {"io.modelcontextprotocol/protocolVersion": version,
                      "io.modelcontextprotocol/clientInfo": CLAUDE_2_1_280,
                      "io.modelcontextprotocol/clientCapabilities": {}}}


def initialize(version: str = "2025-11-25") -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {"roots": {}},
            "clientInfo": CLAUDE_2_1_280}


class Wire:
    """One stdio connection to a real MCP server process: JSON lines in, JSON lines out."""

    def __init__(self, argv: list[str], zap: Any):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=dict(zap.env), cwd=zap.cwd)
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.inbox.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"id": rid, "method": method, **({"params": params} if params is not None else {})})
        while True:
            got = self.inbox.get(timeout=60)
            if got.get("id") == rid and "method" not in got:
                return got

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        return self.proc.stderr.read().decode(errors="replace")


def _servers(zap: Any) -> dict[str, tuple[list[str], str, dict[str, Any]]]:
    holder = zap.spawn_sh("sleep 120", timeout=120)
    return {"mcp serve": ([sys.executable, "-m", "zapcli", "mcp", "serve"], "list", {}),
            "team": ([sys.executable, "-m", "zapcli.mcpserver.team", "--id", holder], "board",
                     {"action": "list"})}


@pytest.mark.parametrize("which", ["mcp serve", "team"])
def test_a_probe_then_the_handshake_on_one_connection_as_claude_code_2_1_280_does(zap, which):
    argv, tool, args = _servers(zap)[which]
    wire = Wire(argv, zap)
    try:
        probe = wire.request("server-discover-probe-1", "server/discover", meta())
        found = probe.get("result") or {}
        assert found.get("supportedVersions", [None])[0] == MODERN, probe
        assert "2025-11-25" in found["supportedVersions"], probe  # it also serves the handshake
        hello = wire.request(0, "initialize", initialize())
        assert hello.get("result", {}).get("protocolVersion") == "2025-11-25", hello
        assert "tools" in hello["result"]["capabilities"]
        wire.send({"method": "notifications/initialized"})
        listed = wire.request(1, "tools/list")
        assert tool in [t["name"] for t in listed["result"]["tools"]], listed
        called = wire.request(2, "tools/call", {"name": tool, "arguments": args})
        assert called.get("result", {}).get("isError") is False, called
        # the 2026-07-28 era still answers on the same connection, request by request
        modern = wire.request(3, "tools/list", meta())
        assert modern.get("result", {}).get("resultType") == "complete", modern
        again = wire.request(4, "tools/call", {"name": tool, "arguments": args, **meta()})
        assert again.get("result", {}).get("isError") is False, again
        # and a second probe is answered, not taken for a change of era
        assert wire.request(5, "server/discover", meta()).get("result"), "second probe"
        assert wire.request(6, "tools/list").get("result"), "the handshake era goes on"
    finally:
        wire.close()


def _unsupported(answer: dict[str, Any], requested: str) -> None:
    error = answer.get("error") or {}
    assert error.get("code") == -32022, answer  # UnsupportedProtocolVersion
    assert error["data"]["requested"] == requested and MODERN in error["data"]["supported"], answer


def test_unsupported_versions_over_stdio_get_unsupported_protocol_version(zap):
    wire = Wire([sys.executable, "-m", "zapcli", "mcp", "serve"], zap)
    try:
        _unsupported(wire.request(1, "tools/list", meta("1900-01-01")), "1900-01-01")
        _unsupported(wire.request(2, "server/discover", meta("2099-01-01")), "2099-01-01")
        # the handshake answers an unknown version with the newest it speaks (2025 rules)
        hello = wire.request(3, "initialize", initialize("1900-01-01"))
        assert hello.get("result", {}).get("protocolVersion") == "2025-11-25", hello
        wire.send({"method": "notifications/initialized"})
        # after the handshake a request carrying a version is still judged by that version
        _unsupported(wire.request(4, "tools/list", meta("1900-01-01")), "1900-01-01")
        assert wire.request(5, "tools/list", meta()).get("result", {}).get("tools"), "modern"
    finally:
        wire.close()


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            status, raw, kind = res.status, res.read().decode(), res.headers.get("content-type", "")
    except urllib.error.HTTPError as err:
        status, raw, kind = err.code, err.read().decode(), err.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        raw = next(line[5:] for line in raw.splitlines() if line.startswith("data:"))
    return status, json.loads(raw)


def test_unsupported_versions_over_http_get_the_errors_the_spec_names(zap):
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "mcp", "serve", "--http",
                             "127.0.0.1:0", "--no-token"], stderr=subprocess.PIPE,
                            env=dict(zap.env), cwd=zap.cwd)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(x.decode() for x in proc.stderr),  # type: ignore[union-attr]
                     daemon=True).start()
    try:
        found = wait_until(lambda: next((m for x in lines if (m := re.search(
            r"(http://127\.0\.0\.1:\d+/mcp)", x))), None), 60)
        url = found.group(1)  # type: ignore[union-attr]
        modern = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}
        status, ok = _post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", **{
            "params": meta()}}, modern)
        assert status == 200 and ok["result"]["tools"], ok
        # a 2025 client: the handshake, then a request naming a version nobody serves
        status, hello = _post(url, {"jsonrpc": "2.0", "id": 2, "method": "initialize",
                                    "params": initialize()}, {})
        assert status == 200 and hello["result"]["protocolVersion"] == "2025-11-25", hello
        session = _session(url)
        status, bad = _post(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                            {"MCP-Protocol-Version": "1900-01-01", "Mcp-Session-Id": session})
        assert status == 400, (status, bad)
        _unsupported(bad, "1900-01-01")
        # a 2026-07-28 request without its version header: HeaderMismatch, not "no session"
        status, missing = _post(url, {"jsonrpc": "2.0", "id": 4, "method": "server/discover",
                                      "params": meta()}, {"Mcp-Method": "server/discover"})
        assert status == 400 and missing.get("error", {}).get("code") == -32020, (status, missing)
        assert "MCP-Protocol-Version" in missing["error"]["message"], missing
        # both naming a version nobody serves
        status, both = _post(url, {"jsonrpc": "2.0", "id": 5, "method": "tools/list",
                                   "params": meta("1900-01-01")},
                             {"MCP-Protocol-Version": "1900-01-01", "Mcp-Method": "tools/list"})
        assert status == 400, both
        _unsupported(both, "1900-01-01")
    finally:
        proc.terminate()
        proc.wait(30)


def _session(url: str) -> str:
    """A fresh 2025 session's id (the handshake and its `initialized`)."""
    req = urllib.request.Request(url, data=json.dumps({
        "jsonrpc": "2.0", "id": 9, "method": "initialize", "params": initialize()}).encode(),
        method="POST", headers={"Content-Type": "application/json",
                                "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(req, timeout=30) as res:
        sid = res.headers["mcp-session-id"]
        res.read()
    note = urllib.request.Request(url, data=json.dumps({
        "jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                 "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
    with urllib.request.urlopen(note, timeout=30) as res:
        res.read()
    return sid
