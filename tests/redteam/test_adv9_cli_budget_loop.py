"""A model that loops tool calls runs an agent CLI past its budget, and
zapcli records none of it (adversary round 9, on 56fcc13): a prompt
injection need only make the model keep calling tools.

`--max-tokens` and `--max-cost` stop an agent CLI from what it says on its
stream, call by call (test_cli_money: claude says each call's input as it
starts, and is stopped within the call that passed the budget — the
control here). codex says usage only at `turn.completed`, gemini only in
its `result.stats`: mid-turn the meter sees nothing, so a loop of tool
calls goes on to the deadline — codex made 162 calls of 33,000 tokens
against `--max-tokens 80000` in 30 s (84 in 20 s), gemini 200 (67 in 20 s);
and as the deadline ended them before their turn did, zapcli recorded 0
tokens for either (the trail, `zapcli usage` and the tree's ledger say
nothing was spent). Measured beside it, not asserted (it varies with
load): pi's events reach the stream in bursts up to ~2 s late, so pi was
stopped after 8 to 16 calls (4 in one run); qwen once after 6, once not at
all (10 calls, to the deadline).

Open, xfail strict. Proposed fix, the class (the meter hears only the CLI's
own word, and some CLIs say it only at the end or late): count at the
broker, outside the sandbox, what crosses to the model — it carries every
call (for a plain-HTTP endpoint each response's usage is readable there;
for HTTPS the broker would have to be the TLS client, holding the key: see
test_adv9_endpoint_spend) and stop carrying once the budget is spent; short
of that, read the per-call events both CLIs export (gemini's OpenTelemetry
`gemini_cli.api_response` with its token counts, codex's `codex.sse_event`
for `response.completed`) through a socket the broker answers, or refuse a
budget for a CLI that cannot be metered while it runs (as an unpriced model
is refused), and record a CLI's last known usage when zapcli ends it.

The outside effect: the model calls the provider answered (the scripted
server's requests) past the budget: 3 calls of 33,000 tokens pass 80,000.
"""

from __future__ import annotations

import pytest

from tests.backends import clitest as ct
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing.server import ScriptedServer

DIRS = [".", "..", "/", "/usr", "/etc", "/var", "/opt", "/srv"]  # each call a new one: no
CALL = {"usage": {"prompt_tokens": 33000, "completion_tokens": 10}, "generate_s": 0.3}  # loop guard


def _tool(cli: str, n: int, folder: str) -> dict:
    if cli in ("gemini", "qwen"):
        return {"name": "list_directory", "arguments": {"dir_path": folder}}
    if cli == "claude":
        return {"name": "Bash", "arguments": {"command": f"ls {folder}", "description": "list"}}
    if cli == "codex":
        return {"name": "exec_command", "arguments": {"cmd": f"ls {folder}"}, "id": f"c{n}"}
    return {"name": "bash", "arguments": {"command": f"ls {folder}", "description": "list"}}


AT_END = pytest.mark.xfail(strict=True, reason=(
    "the CLI says usage only when its turn ends: the meter sees nothing mid-turn (proposed: its "
    "per-call telemetry events to a socket the broker answers, or refuse a budget for it)"))


@needs_bwrap
@pytest.mark.timeout(240)
@pytest.mark.parametrize("cli", [
    "claude",  # says each call as it starts: stopped within the call that passed the budget
    pytest.param("codex", marks=AT_END), pytest.param("gemini", marks=AT_END)])
def test_a_looping_agent_cli_makes_no_call_past_its_budget(zap, cli):
    turns = [{"text": f"step {n}", "tool_calls": [_tool(cli, n, d)], **CALL}
             for n, d in enumerate(DIRS)]
    with ScriptedServer([{"match": "loop and pay", "loop": True, "turns": turns}],
                        protocol=ct.PROTOCOL[cli]) as srv:
        ct.configure(zap, cli)
        sid = ct.spawn(zap, cli, "loop and pay", ct.cli_env(cli, srv), "--approval", "full",
                       "--max-tokens", "80000", "--timeout", "12")
        status = zap.wait_status(sid, timeout=90)
        calls = len(srv.requests)
        reason = zap.json("poll", "--no-wait", sid)["subagents"][0].get("reason")
    assert calls <= 4, (calls, status, reason)
