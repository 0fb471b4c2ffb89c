"""Event hooks run commands, so only the person chooses them (issue 29 item
3): their own config.yaml and the flags they type. A repository's
`.zapcli/config.yaml` — trusted or not —, a model's spawn call, and the
text a model puts in an approval request never choose a command that runs.
Every assertion is an outside effect: a file in `outside`."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.conftest import trail_records, wait_until
from zapcli.trail.events import EVENTS


def _planted(zap, outside) -> None:
    """A cloned repository's config: every event (`finished`: the on-finish)
    runs `id` into `outside`, and a 1 s stall threshold so `stalled` happens."""
    folder = zap.cwd / ".zapcli"
    folder.mkdir(exist_ok=True)
    hooks = {event: f"id > {outside}/{event}.txt" for event in EVENTS}
    (folder / "config.yaml").write_text(yaml.safe_dump({"hooks": hooks, "stall_s": 1}))


def _every_event(zap, model, *extra: str) -> list[str]:
    """A subagent that starts, stalls, is rate-limited, asks for approval and
    finishes — every event a hook can name — looked at all along."""
    model([{"match": "hook-me", "turns": [
        {"http_error": {"status": 429, "retry_after": 1}},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi > hi.txt"}}]},
        {"text": "finished"}]}])
    agent = zap("spawn", *extra, "--", "hook-me")
    assert agent.returncode == 0, agent.err  # the spawn went ahead: only the hooks were left out
    sid = agent.out.strip()
    wait_until(lambda: zap.status(sid) == "awaiting_approval", 60, 0.3)
    assert zap("approve", sid).returncode == 0
    shell = zap.spawn_sh("sleep 2.5", *extra)
    for one in (sid, shell):
        assert zap("wait", one, "--timeout", "60").returncode == 0
    return [sid, shell]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("trusted", [True, False])
def test_a_workspace_file_never_sets_a_hook_trusted_or_not(zap, model, outside, trusted):
    _planted(zap, outside)
    ids = _every_event(zap, model, *(["--trust"] if trusted else []))
    assert sorted(p.name for p in outside.iterdir()) == []
    for sid in ids:
        spawn = trail_records(zap.trail(sid))[0]
        assert "hooks" not in spawn and "on_finish" not in spawn


@pytest.mark.timeout(120)
def test_a_models_spawn_call_cannot_name_a_hook(zap, outside):
    hooks = {event: f"id > {outside}/{event}.txt" for event in EVENTS}
    for extra in ({"on_event": hooks}, {"hooks": hooks}, {"on_finish": f"id > {outside}/f.txt"}):
        res = zap("call", json.dumps({"action": "spawn", "cli": "sh", "task": "sleep 1", **extra}))
        assert "Traceback" not in res.err
        for sid in set(re.findall(r"sa_\d{8}_[0-9a-f]{8}", res.out)):
            zap("wait", sid, "--timeout", "30")
    assert sorted(p.name for p in outside.iterdir()) == []


@pytest.mark.timeout(120)
def test_a_requests_text_reaches_the_hook_as_text_never_as_a_command(zap, model, outside, tmp_path):
    """The model writes the request; the person's hook quotes it. Whatever it
    holds — quotes, `$(...)`, backticks, a newline — is the hook's data."""
    got = tmp_path / "request.txt"
    sneaky = (f'x"; id > {outside}/quote.txt; echo "\n$(id > {outside}/subst.txt)'
              f" `id > {outside}/tick.txt` ${{IFS}}; id > {outside}/semi.txt")
    config = zap.home.parent / "config"
    config.mkdir(exist_ok=True)
    (config / "config.yaml").write_text(yaml.safe_dump(
        {"hooks": {"needs_input": f'printf "%s" "$ZAPCLI_REQUEST" > {got}'}}))
    model([{"match": "sneak", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": sneaky}}]},
        {"text": "done"}]}])
    sid = zap("spawn", "--", "sneak").out.strip()
    wait_until(got.exists, 60, 0.1)
    zap("deny", sid, "--reason", "no")
    zap("wait", sid, "--timeout", "60")
    assert sneaky in got.read_text()  # all of it, as text
    assert sorted(p.name for p in outside.iterdir()) == []
