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

Since h-gate a socket serves the CLI's own session only (the first): the
check's sessions are turned away whatever they send, so here the tricks
meet that refusal; tests/backends/test_cli_mcpgate.py sends each on the
first session of a real broker's socket, where the message gate decides.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.backends import clitest as ct
from tests.conftest import Zap
from tests.redteam import mcp_relay as relay
from tests.sandbox.conftest import needs_bwrap

SERVER = relay.server(relay.STATUS + '''

@server.tool()
def deploy(target: str) -> str:
    """Never allowlisted: asks."""
    with open(OUT / "deployed.txt", "a") as f:
        f.write(target + "\\n")
    return "deployed " + target
''')

def call(name: str = "deploy", target: str = "x") -> str:
    return json.dumps({"name": name, "arguments": {"target": target}}, separators=(",", ":"))


# Each trick: a line sent after `initialize` on a session of its own
# (tests/backends/test_cli_mcpgate.py sends them on the CLI's own session too).
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

CHECK = relay.SOCKETS + r'''
def session(path):
    s = connect(path)
    s.settimeout(15)  # a fresh MCP server per session: its start-up on a loaded machine
    f = s.makefile("rwb")
    f.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "check", "version": "1"}}}).encode() + b"\n")
    f.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); f.flush()
    f.readline()
    return s, f

TRICKS = [t.encode("latin-1") for t in json.load(open(os.path.join(
    os.path.dirname(__file__), "tricks.json")))]
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


@needs_bwrap
@pytest.mark.timeout(300)
def test_framing_tricks_do_not_get_a_call_past_the_gate(zap: Zap, tmp_path: Path,
                                                        outside: Path) -> None:
    relay.setup(zap, tmp_path, outside, SERVER, allow=["status"], files={
        "tools/check.py": CHECK,
        "tools/tricks.json": json.dumps([t.decode("latin-1") for t in TRICKS])})
    turns = [{"text": "The check.", "tool_calls": [{"name": "Bash", "arguments": {
                 "command": "/usr/bin/python3 tools/check.py", "description": "project check"}}]},
             {"text": "Done."}]
    # the person approves the check command; denies anything else
    sid, _, bodies = relay.run(zap, tmp_path, "ADV5-FRAME", "ADV5-FRAME run the check", turns,
                               approve=lambda summary: "check.py" in summary, wait="200",
                               timeout=240)
    assert "CHECK-RAN" in bodies, ct.dump(zap, sid)  # it reached the sockets
    # the socket answers, but not for the CLI: each session the check opens is turned away
    assert "zapcli refused this session" in bodies, bodies[-3000:]
    assert "green" not in bodies, bodies[-3000:]  # not even the allowlisted call runs for it
    deployed = (outside / "deployed.txt").read_text() if (outside / "deployed.txt").exists() else ""
    assert deployed == "", deployed
