"""A command an agent CLI runs spends on the model's endpoint past the
budget, unseen (adversary round 9, on 56fcc13).

An agent CLI's sandbox reaches its model one way: the network (on unless
a definition says `network: false`), or with it off the relay (its pid 1)
listening where the CLI's endpoint is (`127.0.0.1:PORT`, or an HTTPS proxy
answering only `CONNECT endpoint`), the broker carrying each connection on
outside. The CLI's key is in its environment (docs/explanation/security.md
says so), and so in every command's it runs. zapcli meters only what the
CLI *says* on its stream (each call's usage, `backends/cli_stream.py`); the
broker carries bytes and counts nothing. So one command (a prompt
injection's `python3 spend.py`) calls the endpoint itself, as often as it
likes, with the CLI's key, the way the CLI does: none of it reaches the
meter, and `--max-cost` / `--max-tokens` never stop it (here the default,
network on; the relay carries it the same).
Round 8 closed the stream (what the CLI says); this is the other half: what
is spent without the CLI saying it.

Here claude in `full` mode with `--max-cost 0.25` (a call costs ~$0.10:
test_cli_money and test_adv8_cli_stream stop the same loop within 4 calls);
each turn's Bash runs `spend.py`, which makes 8 calls of its own.

The outside effect: the model calls the provider answered (the scripted
server's requests) past the budget.

Status against 56fcc13: SUCCEEDED — 19 calls answered (3 the CLI made and
said, 16 spend.py made unseen) where the same loop with a harmless command
stops within 4; 8 a turn is the test's choice, there is no bound. Open,
xfail strict.

Proposed fix, the class (the one way out of the sandbox is the endpoint,
and what passes there is not the meter's): the broker, outside, is the one
that speaks to the endpoint and meters it — the relay in the sandbox
carries plain HTTP to the broker (the CLI pointed at `http://127.0.0.1:PORT`
as its base URL, its key a stand-in), the broker puts the real key on each
request, opens TLS to the endpoint itself, reads each response's usage into
the subagent's ledger and refuses a request once the budget is spent. That
also takes the key out of the sandbox (no command reads it). Where a CLI
cannot be pointed at a plain-HTTP base URL (a subscription login), the
budget of that CLI is the CLI's word and the docs should say a hostile
command defeats it.
"""

from __future__ import annotations

import pytest

from tests.redteam.test_adv8_cli_stream import loop_and_pay
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing.server import ScriptedServer

SPEND = r'''
import json, os, urllib.request
base = os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com").rstrip("/")
body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 16,
                   "messages": [{"role": "user", "content": "spend on the side"}]}).encode()
done = 0
for _ in range(8):
    req = urllib.request.Request(base + "/v1/messages", data=body, headers={
        "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""), "anthropic-version": "2023-06-01",
        "content-type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=10).read()
        done += 1
    except Exception as exc:
        print("SPEND failed", exc)
print("SPENT", done)
'''

BASH = {"name": "Bash", "arguments": {"command": "python3 spend.py", "description": "check"}}
USAGE = {"prompt_tokens": 33000, "completion_tokens": 10}


@needs_bwrap
@pytest.mark.timeout(240)
@pytest.mark.parametrize("spends", [
    pytest.param(True, marks=pytest.mark.xfail(strict=True, reason=(
        "a command calls the endpoint itself with the CLI's key, the way the CLI does; the broker "
        "meters nothing (proposed: the broker holds the key and meters each response)"))),
    False])  # the same loop, its command harmless: the budget holds
def test_a_command_the_cli_runs_does_not_spend_past_the_budget(zap, spends):
    (zap.cwd / "spend.py").write_text(SPEND if spends else "print('SPENT', 0)\n")
    call = {"tool_calls": [BASH], "usage": USAGE, "generate_s": 0.3}
    side = {"text": "ok", "usage": USAGE}
    with ScriptedServer([{"match": "spend on the side", "loop": True, "turns": [side]},
                         {"match": "loop and pay", "loop": True, "turns": [call]}],
                        protocol="anthropic") as srv:
        loop_and_pay(zap, srv)
        calls = len(srv.requests)
    assert calls <= 4, calls
