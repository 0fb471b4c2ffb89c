"""A queued subagent starts with its spawner's environment, whoever drains the
queue: the field case was ten Claude Code subagents spawned with
ANTHROPIC_API_KEY, the ninth and tenth (queued behind a cap of eight) started
by a `zapcli wait` run without the key, and failing "Not logged in". Real
processes; the drain here is by a `wait` and a finishing sibling, neither of
which has the variables."""

from __future__ import annotations

import os
import stat

import pytest

from tests.conftest import Zap, wait_until

CAP = {"ZAPCLI_MAX_CONCURRENT": "1"}
KEY = "zq-test-key-5f1e0c"
CHECK = ('[ "$ZQ_API_KEY" = "{key}" ] && echo has-key; echo "endpoint=$ZQ_ENDPOINT"')


def _spawn(zap: Zap, task: str, env: dict[str, str]) -> str:
    res = zap("spawn", "--cli", "sh", "--timeout", "60", "--", task, env={**CAP, **env})
    assert res.returncode == 0, res.err
    return res.out.strip()


def _kept(zap: Zap, sid: str):
    return zap.trail(sid).with_suffix(".env")


@pytest.mark.timeout(90)
def test_a_queued_subagent_starts_with_the_keys_its_spawner_had(zap: Zap, tmp_path):
    gate = tmp_path / "gate"
    first = _spawn(zap, f"while [ ! -e {gate} ]; do sleep 0.05; done", {})
    queued = _spawn(zap, CHECK.format(key=KEY),
                    {"ZQ_API_KEY": KEY, "ZQ_ENDPOINT": "http://127.0.0.1:9/v1"})
    assert zap.status(queued) == "queued"
    kept = _kept(zap, queued)
    assert kept.exists() and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert not _kept(zap, first).exists()  # started at once: nothing kept
    gate.touch()
    # neither the finishing sibling nor this `wait` has the variables
    res = zap("wait", first, queued, "--timeout", "60", env=CAP)
    assert res.returncode == 0, res.out + res.err
    assert zap("output", queued).out.split() == ["has-key", "endpoint=http://127.0.0.1:9/v1"]
    assert not kept.exists()  # the keys do not stay on disk once it started
    assert KEY not in zap.trail(queued).read_text()  # nor in its trail


@pytest.mark.timeout(60)
def test_a_cancelled_queued_subagent_leaves_no_kept_environment(zap: Zap, tmp_path):
    gate = tmp_path / "gate"
    first = _spawn(zap, f"while [ ! -e {gate} ]; do sleep 0.05; done", {})
    queued = _spawn(zap, "echo never", {"ZQ_API_KEY": KEY})
    assert _kept(zap, queued).exists()
    res = zap("kill", queued, env=CAP)
    assert res.returncode == 0 and "cancelled" in res.out, res.out + res.err
    assert not _kept(zap, queued).exists()
    gate.touch()
    assert zap.wait_status(first) == "completed"
    wait_until(lambda: not any(p.suffix == ".env" for p in zap.trail(first).parent.iterdir()), 10)
    assert os.listdir(zap.trail(first).parent)  # the trails themselves stay
