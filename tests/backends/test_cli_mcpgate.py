"""The gate on an agent CLI's MCP relay sockets (`zapcli.backends.cli_mcpgate`),
as a process inside the sandbox meets it: a raw MCP client on the real
broker's socket, the real MCP SDK server behind it (tests/redteam's `deploy`
server, whose `deploy` writes a file outside), approvals recorded by the
real approval server and given with `zapcli approve`. Each test asserts
what the server did outside: the file `deploy` writes, or its absence."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Zap, wait_until
from tests.redteam import mcp_relay
from tests.redteam.test_adv3_mcp_socket import DEPLOY
from tests.redteam.test_adv5_mcp_framing import TRICKS
from tests.redteam.test_adv6_mcp_methods import KEY, RESOURCES
from zapcli.approvals import Policy
from zapcli.backends import cli_mcpgate
from zapcli.backends.cli_broker import TCP_AT_ONCE, TURNED_AT_ONCE, Broker
from zapcli.backends.cli_mcpgate import McpGate
from zapcli.backends.clis import approval_server
from zapcli.backends.clis.base import McpServer
from zapcli.sandbox import relay


class Client:
    """A raw MCP client on the socket, as `tools/check.py` in the sandbox is."""

    def __init__(self, path: str):
        self.sock = relay.connect(path)
        self.sock.settimeout(30)
        self.file = self.sock.makefile("rb")
        self.ids = iter(range(1, 1000))

    def send(self, raw: bytes) -> None:
        self.sock.sendall(raw)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        n = next(self.ids)
        self.send(json.dumps({"jsonrpc": "2.0", "id": n, "method": method,
                              "params": params}).encode() + b"\n")
        while True:
            line = self.file.readline()
            assert line, "the session ended"
            msg = json.loads(line)
            if msg.get("id") == n:
                return msg  # type: ignore[no-any-return]

    def start(self) -> None:
        assert "result" in self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}})
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def closed(self) -> bool:
        """True once the gate ended the session (end of file, whatever came before)."""
        while True:
            try:
                if not self.file.readline():
                    return True
            except (TimeoutError, OSError):
                return False


@pytest.fixture
def served(zap: Zap, tmp_path: Path):
    """(a socket factory for an approval mode, the live subagent, the folder
    `deploy` writes in)."""
    out = tmp_path / "OUT"
    out.mkdir()
    script = tmp_path / "deploy_server.py"
    script.write_text(mcp_relay.server(mcp_relay.STATUS + DEPLOY + RESOURCES))
    (out / "id_ed25519").write_text(KEY)  # what its `secret://key` resource reads
    sid = zap.spawn_sh("sleep 60")  # a live subagent: its trail is where approvals are
    folder = tmp_path / "sockets"
    folder.mkdir(mode=0o700)
    broker = Broker(folder)
    server = McpServer("deploy", sys.executable, (str(script), str(out)), allow=("status",))

    def socket_for(mode: str, unattended: bool = False) -> str:
        gate = McpGate(sid, Policy(mode, str(zap.cwd), str(zap.cwd), (), unattended))
        return broker.mcp("deploy", server, dict(os.environ), str(tmp_path), gate)

    yield socket_for, sid, out
    broker.close()
    zap("kill", sid)


def approve_through_the_prompt(zap: Zap, sid: str, tool: str, args: dict[str, Any]) -> None:
    """What claude's permission prompt does: the approval server records the
    request and waits; the person approves it."""
    got: list[tuple[bool, str]] = []
    asking = threading.Thread(target=lambda: got.append(
        approval_server.request(sid, tool, args, "toolu_1")))
    asking.start()
    wait_until(lambda: zap.json("poll", "--no-wait", sid)["subagents"][0].get("pending_approval"), 20)
    zap("approve", sid, check=True)
    asking.join(20)
    assert got and got[0][0], got


def test_a_raw_client_gets_the_allowlisted_tool_and_a_refusal_for_the_rest(served, zap: Zap):
    socket_for, sid, out = served
    client = Client(socket_for("workspace"))
    client.start()
    tools = client.request("tools/list", {})["result"]["tools"]
    assert {t["name"] for t in tools} == {"status", "deploy"}  # listing passes
    assert "green" in json.dumps(client.call("status"))  # allowlisted: runs unasked
    refused = client.call("deploy", target="raw")
    assert refused["error"]["code"] == cli_mcpgate.REFUSED, refused
    assert not (out / "deployed.txt").exists()
    assert "green" in json.dumps(client.call("status"))  # the session goes on
    assert zap.json("poll", "--no-wait", sid)["subagents"][0].get("pending_approval") is None


def test_an_approval_through_the_prompt_lets_that_call_through_once(served, zap: Zap):
    socket_for, sid, out = served
    client = Client(socket_for("workspace"))
    client.start()
    approve_through_the_prompt(zap, sid, "mcp__deploy__deploy", {"target": "prod-1"})
    other = client.call("deploy", target="prod-2")  # not what the person approved
    assert "error" in other and not (out / "deployed.txt").exists()
    assert "deployed prod-1" in json.dumps(client.call("deploy", target="prod-1"))
    assert (out / "deployed.txt").read_text() == "prod-1"
    (out / "deployed.txt").unlink()
    again = client.call("deploy", target="prod-1")  # one approval, one call
    assert "error" in again and not (out / "deployed.txt").exists()


def test_confirm_mode_holds_the_allowlist_too_and_unattended_refuses(served):
    socket_for, _sid, out = served
    for mode, unattended in (("confirm", False), ("workspace", True)):
        client = Client(socket_for(mode, unattended))
        client.start()
        assert "error" in client.call("status" if mode == "confirm" else "deploy", target="x")
    assert not (out / "deployed.txt").exists()
    client = Client(socket_for("full"))
    client.start()
    assert "deployed x" in json.dumps(client.call("deploy", target="x"))  # full: nothing asks


@pytest.mark.parametrize("bad", [
    b"not json\n",
    b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"deploy"}} trailing\n',
    b"[1, 2]\n",
    b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":NaN}}\n',
    b'{"jsonrpc":"2.0","id":9,"method":"ping","params":' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    b"x" * (cli_mcpgate.MAX_LINE + 2),  # no end of line in sight
], ids=["text", "trailing", "not-objects", "nan", "deep", "too-long"])
def test_a_malformed_line_ends_the_session_and_nothing_after_it_runs(served, bad: bytes):
    socket_for, _sid, out = served
    client = Client(socket_for("full"))  # full: a call that got through would run
    client.start()
    call = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                       "params": {"name": "deploy", "arguments": {"target": "after"}}}).encode()
    try:
        client.send(bad + b"\n" + call + b"\n")
    except OSError:
        pass  # already closed by the gate
    assert client.closed()
    assert not (out / "deployed.txt").exists()


def test_a_batch_is_decided_element_by_element(served):
    """MCP 2025-03-26's batches: the refused element is answered by the gate,
    the other goes on (this server answers a batch as its SDK does)."""
    socket_for, _sid, out = served
    client = Client(socket_for("workspace"))
    client.start()
    client.send(json.dumps([
        {"jsonrpc": "2.0", "id": 41, "method": "tools/call",
         "params": {"name": "deploy", "arguments": {"target": "batched"}}},
        {"jsonrpc": "2.0", "id": 42, "method": "ping"}]).encode() + b"\n")
    seen = json.loads(client.file.readline())
    refusals = seen if isinstance(seen, list) else [seen]
    assert any(m.get("id") == 41 and "error" in m for m in refusals), seen
    assert not (out / "deployed.txt").exists()


def test_only_zapcli_s_own_approval_server_is_waved_through_not_its_name(served, zap: Zap):
    """A workspace's mcp.json may name a server `zapcli_approval`: the gate
    knows zapcli's own by the object the runner made, not by its name."""
    _socket_for, sid, _out = served
    own = McpServer("zapcli_approval", sys.executable, ("-m", "zapcli.backends.clis.approval_server"))
    named = McpServer("zapcli_approval", sys.executable, ("/tmp/theirs.py",))
    gate = McpGate(sid, Policy("workspace", str(zap.cwd), str(zap.cwd), (), False), own=(own,))
    assert gate.refusal(own, "approve", {"tool_name": "x", "input": {}}) is None
    assert gate.refusal(named, "approve", {"tool_name": "x", "input": {}}) is not None


def test_the_same_call_is_the_same_canonical_text_types_and_all(served, zap: Zap):
    """What the person approved is the call's canonical text, the summary
    they were shown: `1`, `1.0` and `true` are three calls; key order is
    not a difference."""
    _socket_for, sid, _out = served
    server = McpServer("deploy", sys.executable, ())
    gate = McpGate(sid, Policy("workspace", str(zap.cwd), str(zap.cwd), (), False))
    approve_through_the_prompt(zap, sid, "mcp__deploy__deploy",
                               {"target": "prod-1", "replicas": 1, "notes": {"a": 1, "b": [1]}})
    for other in ({"replicas": 1.0}, {"replicas": True}, {"notes": {"a": 1.0, "b": [1]}},
                  {"notes": {"a": 1, "b": [True]}}):
        call = {"target": "prod-1", "replicas": 1, "notes": {"a": 1, "b": [1]}, **other}
        assert gate.refusal(server, "deploy", call) is not None, call
    shown = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert gate.refusal(server, "deploy", {"notes": {"b": [1], "a": 1}, "replicas": 1,
                                           "target": "prod-1"}) is None, shown


def test_an_approval_shows_every_argument_of_an_mcp_call():
    """Only Bash's `description` (claude's words, which nothing runs) is
    left out; the same name on an MCP tool, or on another built-in, is shown."""
    summary = approval_server.summary
    assert summary("mcp__deploy__deploy", {"target": "p", "description": "SECRET"}) == \
        'mcp__deploy__deploy: {"description": "SECRET", "target": "p"}'
    assert summary("mcp__fs__read", {"path": "/x", "mode": 1.0}) == \
        'mcp__fs__read: {"mode": 1.0, "path": "/x"}'  # no argument promoted to a head
    assert summary("Bash", {"command": "ls", "description": "list"}) == "Bash: ls"
    assert "SECRET" in summary("Agent", {"prompt": "go", "description": "SECRET"})
    assert summary("mcp__x__y", {}) == "mcp__x__y"


def test_the_approval_server_answers_the_cli_s_first_session_only(zap: Zap, tmp_path: Path):
    """The approval server's socket is reachable from anywhere in the sandbox:
    its first session is the CLI's (opened at its launch); a later
    connection is closed before it can raise a question as the CLI's."""
    sid = zap.spawn_sh("sleep 60")
    folder = tmp_path / "sockets"
    folder.mkdir(mode=0o700)
    broker = Broker(folder)
    own = McpServer("zapcli_approval", sys.executable,
                    ("-m", "zapcli.backends.clis.approval_server", "--id", sid))
    gate = McpGate(sid, Policy("workspace", str(zap.cwd), str(zap.cwd), (), False), own=(own,))
    try:
        path = broker.mcp(own.name, own, {**os.environ, **zap.env}, str(tmp_path), gate)
        cli = Client(path)
        cli.start()
        assert {t["name"] for t in cli.request("tools/list", {})["result"]["tools"]} == {"approve"}
        ended: list[str] = []

        def intrude() -> None:  # a command in the sandbox, on the same socket
            try:
                intruder = Client(path)
                intruder.start()
                intruder.call("approve", tool_name="mcp__deploy__deploy",
                              input={"target": "prod-1"})
                ended.append("answered")
            except (AssertionError, OSError, ValueError) as exc:
                ended.append(type(exc).__name__)

        threading.Thread(target=intrude, daemon=True).start()
        wait_until(lambda: ended or zap.json("poll", "--no-wait", sid)["subagents"][0]
                   .get("pending_approval"), 20)
        time.sleep(2)  # a request would be recorded by now
        assert zap.json("poll", "--no-wait", sid)["subagents"][0].get("pending_approval") is None
        assert ended and ended[0] != "answered", ended
        assert {t["name"] for t in cli.request("tools/list", {})["result"]["tools"]} == {"approve"}
    finally:
        broker.close()
        zap("kill", sid)


OTHER = {  # a request other than tools/call, and the file its handler writes (None: it reads the key)
    "resources/read": ({"uri": "secret://key"}, None),
    "resources/read ": ({"uri": "notes://raw"}, "resource-wrote.txt"),
    "prompts/get": ({"name": "release", "arguments": {"version": "raw"}}, "prompt-wrote.txt"),
    "completion/complete": ({"ref": {"type": "ref/prompt", "name": "release"},
                             "argument": {"name": "version", "value": "raw"}},
                            "completion-wrote.txt"),
}


def test_on_the_cli_s_own_session_listing_passes_and_what_runs_the_server_s_code_is_decided(
        served):
    """Listing (what a CLI does at launch) passes; a resource read, a prompt,
    a completion or any method the gate does not know would run the server's
    code outside, as the person, and no CLI asks about it: refused but in
    `full`."""
    socket_for, _sid, out = served
    client = Client(socket_for("workspace"))
    client.start()
    assert "secret://key" in json.dumps(client.request("resources/list", {}))
    assert "notes://" in json.dumps(client.request("resources/templates/list", {}))
    assert "release" in json.dumps(client.request("prompts/list", {}))
    assert "result" in client.request("ping", {})
    for method, (params, _wrote) in OTHER.items():
        got = client.request(method.strip(), params)
        assert got.get("error", {}).get("code") == cli_mcpgate.REFUSED, (method, got)
        assert KEY not in json.dumps(got), got
    assert client.request("resources/subscribe", {"uri": "secret://key"})["error"]["code"] == \
        cli_mcpgate.REFUSED
    assert client.request("x/unknown", {})["error"]["code"] == cli_mcpgate.REFUSED
    listen = {"jsonrpc": "2.0", "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["secret://key"]}}}
    assert "zapcli refused" in json.dumps(client.request(listen["method"], listen["params"]))
    assert not [p.name for p in out.iterdir() if p.name != "id_ed25519"]
    assert "green" in json.dumps(client.call("status"))  # the session goes on
    full = Client(socket_for("full"))
    full.start()
    assert KEY in json.dumps(full.request("resources/read", {"uri": "secret://key"}))
    assert "Release raw" in json.dumps(full.request("prompts/get", OTHER["prompts/get"][0]))
    assert (out / "prompt-wrote.txt").read_text() == "raw"  # full: nothing asks


def test_a_later_session_of_any_server_is_turned_away(served):
    """The first session of a relay socket is the agent CLI's, opened at its
    launch; a later one is another process in the sandbox: nothing it asks
    reaches the server — not an allowlisted tool, not a listing, not a
    resource."""
    socket_for, _sid, out = served
    path = socket_for("workspace")
    cli = Client(path)
    cli.start()
    intruder = Client(path)
    answer = intruder.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "raw", "version": "1"}})
    assert answer["error"]["code"] == cli_mcpgate.REFUSED, answer
    for method, (params, _wrote) in OTHER.items():
        got = intruder.request(method.strip(), params)
        assert "error" in got and KEY not in json.dumps(got), got
    assert "green" not in json.dumps(intruder.call("status"))
    assert not [p.name for p in out.iterdir() if p.name != "id_ed25519"]
    assert "green" in json.dumps(cli.call("status"))  # the CLI's own session goes on


@pytest.mark.parametrize("trick", TRICKS, ids=[str(i) for i in range(len(TRICKS))])
def test_a_framing_trick_on_the_cli_s_own_session_runs_nothing_unapproved(served, trick: bytes):
    """tests/redteam/test_adv5_mcp_framing's tricks, on the session the gate
    decides message by message (the first), not the turned-away later one."""
    socket_for, _sid, out = served
    client = Client(socket_for("workspace"))
    client.start()
    try:
        client.send(trick + b"\n" + b'{"jsonrpc":"2.0","id":99,"method":"ping"}\n')
        while line := client.file.readline():  # the answers to the trick, then the ping's
            msg = json.loads(line)
            if any(m.get("id") == 99 for m in (msg if isinstance(msg, list) else [msg])):
                break
    except (OSError, ValueError):
        pass  # the gate ended the session
    time.sleep(0.5)
    assert not (out / "deployed.txt").exists()


def test_an_approval_of_a_name_two_servers_tools_share_is_spent_on_neither(served, zap: Zap):
    """claude names server `a`'s `b__c` and server `a__b`'s `c` alike,
    `mcp__a__b__c` (and `a.b`'s tools as `a_b`'s): the person's approval of
    that name is not one of either call; a name no other server shares is."""
    _socket_for, sid, _out = served
    a, ab, dotted, under, deploy = (McpServer(n, sys.executable, ())
                                    for n in ("a", "a__b", "a.b", "a_b", "deploy"))
    gate = McpGate(sid, Policy("workspace", str(zap.cwd), str(zap.cwd), (), False),
                   servers=(a, ab, dotted, under, deploy))
    approve_through_the_prompt(zap, sid, "mcp__a__b__c", {"x": 1})
    assert "rename one of the servers" in str(gate.refusal(ab, "c", {"x": 1}))
    assert gate.refusal(a, "b__c", {"x": 1}) is not None
    approve_through_the_prompt(zap, sid, "mcp__a_b__run", {"x": 1})
    assert gate.refusal(dotted, "run", {"x": 1}) is not None
    approve_through_the_prompt(zap, sid, "mcp__deploy__run", {"x": 1})
    assert gate.refusal(deploy, "run", {"x": 1}) is None  # no other server's name: spent


@pytest.mark.parametrize("message,refused", [
    ({"jsonrpc": "2.0", "id": 1, "Method": "tools/call", "params": {"name": "deploy"}}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "Params": {"name": "deploy"}}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
      "params": {"name": "status", "Name": "deploy", "arguments": {}}}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
      "params": {"name": "status", "ARGUMENTS": {"env": "prod"}}}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call",   # the Kelvin sign folds to k
      "params": {"name": "deploy", "arguments": {"k": 1, "\u212a": 2}}}, True),
    # a tool's own arguments may be named as members are, in any case
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
      "params": {"name": "status", "arguments": {"Name": "x", "Id": 2, "Method": "GET"}}}, False),
])
def test_a_message_a_server_may_read_otherwise_is_refused(message, refused):
    """Go's encoding/json matches keys case-insensitively (the last match
    wins): a key that is a member but for its case, or two keys that differ
    in case alone, would be read otherwise by such a server than here
    (tests/redteam/test_adv7_mcp_smuggle.py)."""
    assert bool(cli_mcpgate._twofold(message)) is refused


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_connections_held_open_on_a_relay_socket_cost_the_runner_a_bounded_number_of_threads(
        served, tmp_path: Path):
    """A command in the sandbox opens connection after connection to a relay
    socket and holds each open: every one was answered by a thread of the
    runner (outside the sandbox) until its client ended — hundreds of
    threads, then the runner's own could not start. A turned-away session is
    answered by a few at a time, the rest closed at once; the model's
    endpoint carries a bounded number at once."""
    socket_for, _sid, _out = served
    path = socket_for("workspace")
    Client(path).start()  # the CLI's own session
    broker = Broker(tmp_path / "sockets")
    tcp = broker.tcp("127.0.0.1", 9)  # discard: nothing listens, each carry ends at once
    listener = socket.create_server(("127.0.0.1", 0))
    held_endpoint = broker.tcp("127.0.0.1", listener.getsockname()[1])
    before = _threads()
    held = []
    try:
        for target in (path, tcp, held_endpoint):
            for _ in range(150):
                conn = socket.socket(socket.AF_UNIX)
                conn.connect(target)
                held.append(conn)
        time.sleep(1.0)  # every accept answered
        grew = _threads() - before
    finally:
        for conn in held:
            conn.close()
        listener.close()
        broker.close()
    assert grew <= 2 * TCP_AT_ONCE + TURNED_AT_ONCE + 8, grew
