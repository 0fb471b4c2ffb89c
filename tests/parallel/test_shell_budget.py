"""A shell fan-out's tree budget (issue 28 item 4): `zapcli spawn --max-tokens
N --cli sh -- ./fan-out.sh`, as the README shows it, is accepted as
`--max-cost` is, and the subagents the script spawns are allotted from it —
the tree stays within the budget plus one request per running child."""

from __future__ import annotations

import sys

import pytest

REQUEST = 2500  # one child request below: 2000 in + 500 out
ZAP = f"{sys.executable} -m zapcli"


def _u(prompt: int, completion: int = 0) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


@pytest.mark.timeout(240)
def test_a_shell_fan_out_holds_its_max_tokens_tree_budget(zap, model):
    """On main: exit 2, "--max-tokens ... are for agents ... drop them for --cli sh"."""
    model([{"match": "burns", "loop": True, "turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}], "usage": _u(2000, 500),
         "delay_s": 0.1}]}])
    # a definition of the user's holding no tool: within what a shell command holds
    defs = zap.home.parent / "config" / "subagents"
    defs.mkdir(parents=True, exist_ok=True)
    (defs / "burner.yml").write_text("name: burner\ndescription: Spends tokens.\ntools: []\n"
                                     "prompt: Spend tokens.\n")
    script = zap.cwd / "fan-out.sh"
    script.write_text(f'#!/bin/sh\na=$({ZAP} spawn --agent burner "child 1 burns")\n'
                      f'b=$({ZAP} spawn --agent burner "child 2 burns")\n'
                      f'{ZAP} wait --timeout 150 "$a" "$b"\necho "fan-out: $a $b"\n')
    script.chmod(0o755)
    proc = zap("spawn", "--max-tokens", "20000", "--cli", "sh", "--", "./fan-out.sh")
    assert proc.returncode == 0, proc.err
    parent = proc.out.strip()
    assert zap("wait", "--timeout", "200", parent).returncode == 0
    said = zap("output", parent).out
    children = said.rsplit("fan-out:", 1)[1].split()
    assert len(children) == 2, (said, zap("output", "--stderr", parent).out)
    spent = 0
    for sid in children:
        doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
        assert doc["parent"] == parent and doc["status"] == "failed", doc
        assert doc["reason"].startswith("token budget: "), doc["reason"]
        spent += doc["input_tokens"] + doc["output_tokens"]
    assert spent <= 20000 + 2 * REQUEST, spent  # the tree's budget, plus one call per child
    assert spent >= 10000  # they did spend it


def test_max_tokens_on_a_shell_is_a_positive_number(zap):
    res = zap("spawn", "--max-tokens", "0", "--cli", "sh", "--", "true")
    assert res.returncode == 2 and "--max-tokens" in res.err and "Traceback" not in res.err
    for flag in (("--model", "m"), ("--agent", "general"), ("--unattended",)):
        refused = zap("spawn", *flag, "--cli", "sh", "--", "true")
        assert refused.returncode == 2 and "for agents" in refused.err, (flag, refused.err)
