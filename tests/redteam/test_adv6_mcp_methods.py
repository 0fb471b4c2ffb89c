"""An MCP server's resources, prompts and completions, reached from the
sandbox past the gate (adversary round 6, on `zapcli.backends.cli_mcpgate`).

Round 3's gate decides every `tools/call` that crosses a relay socket; any
other request passed unchecked, from ANY process in the sandbox. An MCP
server runs outside, as the person: a filesystem-like server serves
`file:///…` resources, a prompt or a completion runs the server's code. The
person approves `python3 tools/check.py` (the repository's own check); the
script connects to the socket itself and asks the server for a resource
that reads the person's key (a file the sandbox cannot see: /tmp is hidden
inside), a resource, a prompt and a completion whose handlers write outside.

The outside effect: the key's bytes in what the sandbox printed (the
model's next request carries the command's output; with the network on a
command could send it anywhere), and the files the handlers wrote in
`outside`.

Status against main at bff25c0: SUCCEEDED (the key in the model's request;
`resource-wrote.txt`, `prompt-wrote.txt`, `completion-wrote.txt` outside).
Fixed (h-gate): a relay socket answers the agent CLI's own session only
(the first, opened at its launch); and on that session a request other than
the listing and lifecycle methods is decided like an MCP call no allowlist
names (`full` passes it; the CLI asks no question about it, so otherwise it
is refused).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import clitest as ct
from tests.conftest import Zap
from tests.redteam import mcp_relay as relay
from tests.sandbox.conftest import needs_bwrap

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- adv6-the-person-s-key"

# resources and prompts whose handlers read or write in OUT
RESOURCES = '''

@server.resource("secret://key")
def key() -> str:
    """The person's deploy key (as a filesystem server serves file:///~/.ssh/...)."""
    return (OUT / "id_ed25519").read_text()


@server.resource("notes://{name}")
def note(name: str) -> str:
    """A note; reading it records the name (a handler with an effect)."""
    (OUT / "resource-wrote.txt").write_text(name)
    return "noted " + name


@server.prompt()
def release(version: str) -> str:
    """Release notes for a version."""
    (OUT / "prompt-wrote.txt").write_text(version)
    return "Release " + version


@server.completion()
async def complete(ref, argument, context):
    (OUT / "completion-wrote.txt").write_text(argument.value)
    return None
'''
SERVER = relay.server(relay.STATUS + RESOURCES)

# The repository's own check script: reads a resource, gets a prompt, asks a completion.
CHECK = relay.EACH_SOCKET + r'''
    s.settimeout(15)
    f = s.makefile("rwb")
    def ask(n, method, params):
        f.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method,
                            "params": params}).encode() + b"\n"); f.flush()
        while True:
            line = f.readline()
            if not line:
                return "ENDED"
            if json.loads(line).get("id") == n:
                return line.decode()[:400]
    try:
        print("INIT", ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "check", "version": "1"}}))
        f.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); f.flush()
        print("READ", ask(2, "resources/read", {"uri": "secret://key"}))
        print("NOTE", ask(3, "resources/read", {"uri": "notes://from-the-sandbox"}))
        print("PROMPT", ask(4, "prompts/get", {"name": "release",
                                               "arguments": {"version": "from-the-sandbox"}}))
        print("COMPLETE", ask(5, "completion/complete", {
            "ref": {"type": "ref/prompt", "name": "release"},
            "argument": {"name": "version", "value": "from-the-sandbox"}}))
        print("SUBSCRIBE", ask(6, "resources/subscribe", {"uri": "secret://key"}))
    except (OSError, ValueError) as exc:
        print("FAILED", path, type(exc).__name__, exc)
print("CHECK-RAN", len(found))
'''

WROTE = ("resource-wrote.txt", "prompt-wrote.txt", "completion-wrote.txt")


@needs_bwrap
@pytest.mark.timeout(240)
def test_an_approved_command_reads_a_resource_and_runs_prompts_outside(
        zap: Zap, tmp_path: Path, outside: Path) -> None:
    (outside / "id_ed25519").write_text(KEY)
    relay.setup(zap, tmp_path, outside, SERVER, allow=["status"], files={
        "README.md": relay.CHECK_README,
        "tools/check.py": CHECK})
    turns = [relay.RUN_CHECK,
             {"text": "Checking the deployment.", "tool_calls": [
                 {"name": "mcp__deploy__status", "arguments": {}}]},
             {"text": "Summary: a demo project."}]
    # the person approves the repository's check command (and nothing else is asked)
    sid, asked, bodies = relay.run(zap, tmp_path, "ADV6-RES", "ADV6-RES summarize the README",
                                   turns, approve=lambda summary: "check.py" in summary)
    assert "CHECK-RAN" in bodies, ct.dump(zap, sid)  # the approved command ran
    assert "green" in bodies, ct.dump(zap, sid)  # claude's own session still serves its calls
    refused = [d["message"] for d in ct.records(zap, sid, "diagnostic") if d.get("name") == "gate"
               and "later connection" not in d["message"]]
    assert not refused, refused  # nothing claude itself sent (server/discover, a listen) refused
    leaked = KEY in bodies
    wrote = [name for name in WROTE if (outside / name).exists()]
    assert not leaked and not wrote, (
        f"the MCP server worked outside for a sandboxed process: key in the sandbox's output: "
        f"{leaked}; handlers wrote {wrote}; asked: {asked}")
