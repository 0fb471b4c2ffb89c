"""One damaged trail affects only its own answer (#12.6): an unparseable
`ts` (and other damaged fields) in a spawn record never breaks list, gc,
poll, kill, wait, replay or output for anyone."""

from __future__ import annotations

import json

import pytest


def _damage(zap, sid: str) -> None:
    path = zap.trail(sid)
    lines = path.read_bytes().split(b"\n")
    spawn = json.loads(lines[0])
    spawn.update(ts="yesterday-ish", timeout_s="soon", after="x", session=5, task=None, mono="?")
    lines[0] = json.dumps(spawn).encode()
    path.write_bytes(b"\n".join(lines))


@pytest.mark.timeout(90)
def test_a_damaged_spawn_record_breaks_no_command(zap):
    good = zap.spawn_sh("echo good")
    bad = zap.spawn_sh("echo bad")
    assert zap("wait", good, bad).returncode == 0
    _damage(zap, bad)
    for args in (("list",), ("list", "--all"), ("list", "--long"), ("gc", "--dry-run"), ("gc",),
                 ("poll", good, bad), ("wait", good, bad), ("kill", good, bad), ("replay", bad),
                 ("output", bad), ("clean", "--status", "cancelled"), ("usage",)):
        res = zap(*args)
        assert "Traceback" not in res.err, (args, res.err)
        assert res.returncode in (0, 1), (args, res.returncode, res.err)
    assert f"{good}: completed" in zap("poll", good, bad).out
    assert good in zap.json("list", "--all")["subagents"][0]["id"] + zap.json("list", "--all")["subagents"][-1]["id"]
