"""A command codex runs reaches codex's native agent: round 8's route
(tests/redteam/test_adv8_cli_stream.py) through the process that holds the
stream — and codex's API key.

zapcli reads what an agent CLI says — its events, each turn's usage — from
the file that is the CLI's stdout. The CLI runs from an execute-only copy
(`zapcli.sandbox.execonly`), so the commands it starts cannot reopen its
`/proc/<pid>/fd/1`. But codex's npm launcher (`@openai/codex/bin/codex.js`,
node: the copy) spawns the native agent of its platform package
(`@openai/codex-linux-x64/vendor/<triple>/bin/codex`) with its stdio — a
readable binary, so a dumpable process holding the stream as fd 1, and the
one that talks to the model and runs the commands. A command it runs opens
that fd and appends to the stream: forged lines (a `turn.completed`, a
final message), or a dangling `{"swallowed": "` that spoils codex's next
line (here the command's own `item.completed`; a command left running
could spoil the turn's `turn.completed`, its usage, as round 8 did
claude's). It reads `/proc/<pid>/environ` too: OPENAI_API_KEY, which
codex keeps out of its commands' environment.

Here codex in `full` mode with `--max-tokens 50000`: one turn of two model
calls of 33,000 tokens each, the first running the project's `pad.py`.

The outside effect: what the command tells the model (the scripted
server's requests) it could reach — the stream's fds it found and wrote
to, the processes whose environment held the key.

Status against 378722e: SUCCEEDED — `PADDED ['/proc/13/fd/1']` and
`KEY-SEEN-IN ['13']` (the native codex, child of the node launcher; pid 2).
Fixed: the sandbox runs codex's native agent itself, from an execute-only
copy (`execonly.Launcher`, declared by the codex backend), beside links to
what it finds next to its program.
"""

from __future__ import annotations

import json

import pytest

from tests.backends import clitest as ct
from tests.redteam.test_adv8_cli_stream import PAD
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing.server import ScriptedServer

# and what else a process of codex's holds: its API key (kept out of its commands' environment)
PAD_AND_LOOK = PAD + r'''
seen = set()
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if b"OPENAI_API_KEY=" in fh.read():
                    seen.add(pid)
        except OSError:
            pass
print("KEY-SEEN-IN", sorted(seen))
'''
RUN_PAD = {"name": "exec_command", "arguments": {"cmd": "python3 pad.py"}, "id": "c1"}
CALL = {"prompt_tokens": 33000, "completion_tokens": 10}


@needs_bwrap
@pytest.mark.timeout(240)
def test_no_command_codex_runs_reaches_the_stream_zapcli_reads(zap):
    (zap.cwd / "pad.py").write_text(PAD_AND_LOOK)
    turns = [{"tool_calls": [RUN_PAD], "usage": CALL}, {"text": "padded", "usage": CALL}]
    with ScriptedServer([{"match": "pad once", "turns": turns}], protocol="responses") as srv:
        ct.configure(zap, "codex")
        sid = ct.spawn(zap, "codex", "pad once", ct.cli_env("codex", srv), "--approval", "full",
                       "--max-tokens", "50000", "--timeout", "60")
        zap.wait_status(sid, timeout=120)
        sent = json.dumps(srv.requests).split("\\n")
    said = [m for m in sent if "PADDED" in m][:1]
    assert said and "PADDED []" in said[0], (said, ct.dump(zap, sid))  # it found no way in
    key = [m for m in sent if "KEY-SEEN-IN" in m][:1]
    assert key and "KEY-SEEN-IN []" in key[0], key  # nor read codex's key from its environment
