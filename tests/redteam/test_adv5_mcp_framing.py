"""JSON-RPC framing tricks on an agent CLI's MCP relay socket (adversary
round 5, on `zapcli.backends.cli_mcpgate`): HELD.

A command the person approved (`python3 tools/check.py`) speaks MCP to the
relay socket itself and tries to get `deploy` (not allowlisted, never asked
about) past the gate by the gate and the server reading one line
differently: duplicate `name` keys (the gate's parser and the server's
taking different ones), `tools\\/call` and `tools/c\\u0061ll` escapes,
`Tools/call` and `tools/call ` spellings, a batch of a notification and the
call, `params.name` as a list, two messages on one line, one split by a
bare `\\r` (Python's text streams end a line there), a UTF-8 BOM, a
NaN argument, an allowed call's id reused, the call under `_meta` (each
in a session of its own).

Held at e92e5ae: the gate re-encodes every message from what it checked
(the server never sees the client's bytes), ends the session on a line
that is not one JSON value, and a spelling it passes unchecked is no method
the server knows (`Tools/call`: "Method not found"); a line the gate cannot
parse (NaN, `\r`, two values, a BOM) ends the session unanswered. The
outside effect asserted: no `deployed.txt`.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from tests.backends import clitest as ct
from tests.conftest import Zap
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing import ScriptedServer

SERVER = '''
import sys
from pathlib import Path
try:
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:
    from mcp.server.fastmcp import FastMCP as Server

OUT = Path(sys.argv[1])
server = Server("deploy")


@server.tool()
def status() -> str:
    """Harmless; allowlisted."""
    return "green"


@server.tool()
def deploy(target: str) -> str:
    """Never allowlisted: asks."""
    with open(OUT / "deployed.txt", "a") as f:
        f.write(target + "\\n")
    return "deployed " + target


if __name__ == "__main__":
    server.run()
'''

CHECK = r'''
import glob, json, os, socket, time
found = []
for var in ("HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "TMPDIR"):
    base = os.environ.get(var)
    if base:
        for b in (base, os.path.dirname(base)):
            found += glob.glob(os.path.join(b, "**", "zapcli-sockets", "mcp-*.sock"), recursive=True)

def session(path):
    s = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(os.path.dirname(path))
    try:
        s.connect(os.path.basename(path))
    finally:
        os.chdir(here)
    s.settimeout(2)
    f = s.makefile("rwb")
    f.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "check", "version": "1"}}}).encode() + b"\n")
    f.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); f.flush()
    f.readline()
    return s, f

def call(name="deploy", target="x"):
    return ('{"name":"%s","arguments":{"target":"%s"}}' % (name, target))

TRICKS = [
    b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"status","name":"deploy","arguments":{"target":"dup-last"}}}',
    b'{"jsonrpc":"2.0","id":11,"method":"tools/call","method":"ping","params":' + call(target="dup-method").encode() + b'}',
    b'{"jsonrpc":"2.0","id":12,"method":"tools\\/call","params":' + call(target="slash").encode() + b'}',
    b'{"jsonrpc":"2.0","id":13,"method":"tools/c\\u0061ll","params":' + call(target="u-escape").encode() + b'}',
    b'{"jsonrpc":"2.0","id":14,"method":"Tools/call","params":' + call(target="case").encode() + b'}',
    b'{"jsonrpc":"2.0","id":15,"method":"tools/call ","params":' + call(target="space").encode() + b'}',
    b'[{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":16,"method":"tools/call","params":' + call(target="batch").encode() + b'}]',
    b'{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":["deploy"],"arguments":{"target":"list"}}}',
    b'{"jsonrpc":"2.0","id":18,"method":"tools/call","params":' + call(target="arg-list").encode()[:-1] + b',"arguments":[]}}',
    b'{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"_meta":' + call(target="meta").encode() + b',"name":"status"}}',
    b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":' + call("status").encode() + b'}',
    b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":' + call(target="id-reused").encode() + b'}',
    b'{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"deploy","arguments":{"target":"nan","n":NaN}}}',
    b'{"jsonrpc":"2.0","id":21,"method":"ping"}\r{"jsonrpc":"2.0","id":22,"method":"tools/call","params":' + call(target="cr").encode() + b'}',
    b'{"jsonrpc":"2.0","id":23,"method":"ping"}{"jsonrpc":"2.0","id":24,"method":"tools/call","params":' + call(target="two").encode() + b'}',
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":25,"method":"tools/call","params":' + call(target="bom").encode() + b'}',
]
for path in sorted(set(found)):
    for trick in TRICKS:
        try:
            s, f = session(path)
            f.write(trick + b"\n"); f.flush()
            time.sleep(0.3)
            try:
                print("ANSWER", f.read1(4096)[:200])
            except OSError as exc:
                print("NO-ANSWER", exc)
            s.close()
        except OSError as exc:
            print("NO", path, exc)
print("CHECK-RAN", len(found))
'''

DEFINITION = """name: deployer
description: claude with the deploy server
cli: claude
tools: [bash, read]
mcp: {servers: [deploy]}
"""


@needs_bwrap
@pytest.mark.timeout(300)
def test_framing_tricks_do_not_get_a_call_past_the_gate(zap: Zap, tmp_path: Path,
                                                        outside: Path) -> None:
    ct.configure(zap, "claude")
    server = tmp_path / "deploy_server.py"
    server.write_text(SERVER)
    (zap.cwd / "tools").mkdir()
    (zap.cwd / "tools" / "check.py").write_text(CHECK)
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True)
    (folder / "deployer.yaml").write_text(DEFINITION)
    (zap.cwd / ".zapcli" / "mcp.json").write_text(json.dumps({"mcpServers": {"deploy": {
        "command": sys.executable, "args": [str(server), str(outside)], "allow": ["status"]}}}))
    zap("trust", check=True)
    stop = threading.Event()

    def person(sid: str) -> None:
        """Approves the check command; denies anything else."""
        while not stop.wait(0.3):
            try:
                doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
            except Exception:  # noqa: BLE001 - not there yet
                continue
            req = doc.get("pending_approval") or {}
            if req:
                zap("approve" if "check.py" in str(req.get("summary")) else "deny", sid)

    turns = [{"text": "The check.", "tool_calls": [{"name": "Bash", "arguments": {
                 "command": "/usr/bin/python3 tools/check.py", "description": "project check"}}]},
             {"text": "Done."}]
    with ScriptedServer([{"match": "ADV5-FRAME", "turns": turns}], protocol=ct.PROTOCOL["claude"]) as srv:
        env = {**ct.cli_env("claude", srv), "HOME": str(tmp_path / "user-home")}
        (tmp_path / "user-home").mkdir()
        proc = zap("spawn", "--agent", "deployer", "--approval", "workspace", "--",
                   "ADV5-FRAME run the check", env=env)
        assert proc.returncode == 0, proc.err
        sid = proc.out.strip()
        helper = threading.Thread(target=person, args=(sid,), daemon=True)
        helper.start()
        zap("wait", sid, "--timeout", "200", timeout=240)
        stop.set()
        helper.join()
        bodies = json.dumps(srv.requests)
    assert "CHECK-RAN" in bodies, ct.dump(zap, sid)  # it reached the sockets
    assert "green" in bodies, bodies[-3000:]  # the allowlisted call with a reused id ran: the socket answers
    deployed = (outside / "deployed.txt").read_text() if (outside / "deployed.txt").exists() else ""
    assert deployed == "", deployed
