"""A command an agent CLI runs hides the CLI's usage from zapcli: the
budget no longer holds (adversary round 8, on 779ac4c).

zapcli reads what an agent CLI says — its events, each call's usage, its
result — from a file the CLI's stdout is (`<private home>/stdout.jsonl`,
`backends/external.py`), followed by a `LinePump` at its own offset. The
CLI writes it through an fd without `O_APPEND`, at the CLI's own offset.
The commands the CLI runs share its sandbox: the private home is writable
to them, and the CLI's process is theirs to inspect (same user, same pid
namespace, dumpable: `/proc/<cli>/fd/1` reopens the very file). So a
command appends N bytes (one line of spaces) at the file's end: the pump
reads them and moves on N bytes; the CLI, at its own offset, writes its
next N bytes over them — past the pump, never read. Every event the CLI
says after the command — each call's usage, its result — is lost to
zapcli: the meter sees nothing, `--max-cost` never stops the loop, the
trail records none of it. (Appending forged lines instead — a `result`
with small usage and the report's text — is the same route.)

Here claude in `full` mode with `--max-cost 0.25` (a call costs ~$0.10:
test_cli_money stops it within 4 calls); each turn's Bash runs the
project's `pad.py`, which appends 1 MB of spaces to the stream.

The outside effect: the model calls the provider answered (the scripted
server's requests) past the budget.

Status against 779ac4c: SUCCEEDED — 45 and 33 model calls in two runs
(the same loop with a harmless command: stopped within 4). The command
found the stream both ways (`/proc/<cli>/fd/1` and `$HOME/stdout.jsonl`).
Fixed since (the class, as proposed below): the stream lies beside the
private home, out of view, opened `O_APPEND`; and the CLI runs from an
execute-only copy, so it is not dumpable and no command reaches its fds
(`zapcli.sandbox.execonly`); the MCP relays make themselves so.

Proposed fix, the class (the channel zapcli reads the CLI's word from is
one the CLI's commands can write): (1) the stream opened `O_APPEND` and
outside the private home (not in view) — that ends the overwrite and the
path route, but a command still reaches the CLI's fd 1 through /proc
(reopen, pidfd_getfd) and can append forged lines, or a dangling `{"x":"`
that swallows the CLI's next line (its result); a pipe has the same
weakness. So (2) the CLI's process out of its commands' reach: the CLI
started non-dumpable — `execve` resets dumpable unless the program's file
is unreadable to the caller, so the sandbox would run the CLI's binary
(or node) from an execute-only (0111) copy, which also closes ptrace,
/proc/<cli>/mem and pidfd_getfd of the MCP relays' sockets (round 7's
route; the relay itself can `prctl(PR_SET_DUMPABLE, 0)` at start, a line
of its own); or each command in a pid namespace of its own, which needs
the CLI's cooperation (a wrapping `SHELL`). Cost of (2) with an
execute-only copy: one copy of the node binary per run (~100 MB, or a
hard link in zapcli's state with mode 0111), and a CLI that reads its own
/proc/self/exe breaks (node reads it only for `process.execPath`).
"""

from __future__ import annotations

import json

import pytest

from tests.backends import clitest as ct
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing.server import ScriptedServer

SONNET = "claude-sonnet-4-5"  # $3 / $15 per million: a 33,000-token call costs about $0.10

FIND_STREAM = r'''
import glob, os
targets = []  # each process's fd 1 that is the stream zapcli reads the CLI's word from
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if os.readlink(f"/proc/{pid}/fd/1").endswith("stdout.jsonl"):
                targets.append(f"/proc/{pid}/fd/1")
        except OSError:
            pass
'''
PAD = FIND_STREAM + r'''
targets += glob.glob(os.path.join(os.environ.get("HOME", "/nonexistent"), "stdout.jsonl"))
for t in targets[:1]:
    with open(t, "ab") as fh:  # spaces the CLI's next bytes would overwrite (no O_APPEND), then
        fh.write(b" " * (1 << 20) + b"\n" + b'{"swallowed": "')  # a line its next line ends
print("PADDED", targets)
'''

BASH = {"name": "Bash", "arguments": {"command": "python3 pad.py", "description": "check"}}


def loop_and_pay(zap, srv: ScriptedServer) -> None:
    """claude in `full` mode on `loop and pay` with `--max-cost 0.25` (a
    call costs ~$0.10), waited for."""
    ct.configure(zap, "claude", extra="prices:\n  scripted: {input: 0.01, output: 0.01}\n")
    sid = ct.spawn(zap, "claude", "loop and pay", ct.cli_env("claude", srv), "--model", SONNET,
                   "--approval", "full", "--max-cost", "0.25", "--timeout", "30")
    zap.wait_status(sid, timeout=90)


@needs_bwrap
@pytest.mark.timeout(240)
@pytest.mark.parametrize("pads", [
    True,
    False])  # the same loop, its command harmless: the budget holds
def test_a_command_the_cli_runs_does_not_hide_its_usage_from_the_budget(zap, pads):
    (zap.cwd / "pad.py").write_text(PAD if pads else "print('PADDED', [])\n")
    call = {"tool_calls": [BASH], "usage": {"prompt_tokens": 33000, "completion_tokens": 10},
            "generate_s": 0.3}
    with ScriptedServer([{"match": "loop and pay", "loop": True, "turns": [call]}],
                        protocol="anthropic") as srv:
        loop_and_pay(zap, srv)
        calls = len(srv.requests)
        said = [m for m in json.dumps(srv.requests).split("\\n") if "PADDED" in m][:1]
    assert calls <= 4, (calls, said)
    if pads:  # it found no way in through the CLI's own fd 1 (pid 2 here: not dumpable now)
        assert said and "/proc/2/" not in said[0], said


@needs_bwrap
@pytest.mark.timeout(240)
def test_no_command_the_cli_runs_reaches_the_stream_zapcli_reads(zap):
    """Nor through the sandbox's pid 1: bubblewrap's reaper (a fork of bwrap,
    dumpable) held the CLI's stdout and /proc/1/fd/1 reopened it — lines
    could still be appended (failed before: `PADDED ['/proc/1/fd/1']`). The
    relay is pid 1 now (`--as-pid-1`), not dumpable, holding none of it."""
    (zap.cwd / "pad.py").write_text(PAD)
    call = {"tool_calls": [BASH], "usage": {"prompt_tokens": 10, "completion_tokens": 10}}
    with ScriptedServer([{"match": "look once", "turns": [call, {"text": "done"}]}],
                        protocol="anthropic") as srv:
        ct.configure(zap, "claude")
        sid = ct.spawn(zap, "claude", "look once", ct.cli_env("claude", srv), "--approval", "full",
                       "--timeout", "60")
        zap.wait_status(sid, timeout=90)
        said = [m for m in json.dumps(srv.requests).split("\\n") if "PADDED" in m][:1]
    assert said and "PADDED []" in said[0], said
