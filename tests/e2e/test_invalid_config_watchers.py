"""An invalid config file and the watching commands (docs/explanation/rules.md#where-things-live, #14.7): poll,
wait, list, kill, output and gc warn once per command — not per subagent —
naming the file, line and key, and go on without that file. gc never deletes
by `max_kept` on a guess: it still trims and removes worktrees that hold no
work, and says it kept the rest because the config is invalid."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import runner_gone, sleep_marker

BAD = "timout_s: 5\nmax_kept: lots\n"


def _break_config(zap) -> None:
    cfg = zap.home.parent / "config" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(BAD)


def _warned_once(zap, stderr: str, args) -> None:
    assert stderr.count("warning") == 1, (args, stderr)
    assert "config.yaml:1: unknown key 'timout_s'" in stderr, (args, stderr)
    assert "config.yaml:2: key 'max_kept'" in stderr, (args, stderr)
    assert "Traceback" not in stderr


@pytest.mark.timeout(120)
def test_watching_commands_warn_once_naming_file_line_and_key(zap):
    done = [zap.spawn_sh(f"echo {n}") for n in range(3)]
    zap("wait", *done, check=True)
    limited = {"ZAPCLI_MAX_CONCURRENT": "1"}  # valid, so applied: one slot, one queued
    zap.env.update(limited)
    slow = zap.spawn_sh(f"exec sleep {sleep_marker(4101)}")
    queued = zap.spawn_sh("echo q")
    assert zap.status(queued) == "queued"
    _break_config(zap)
    for args in (("poll", "--no-wait", *done), ("wait", *done), ("list", "--all", "--long"),
                 ("kill", *done), ("gc", "--dry-run")):
        res = zap(*args)
        assert res.returncode == 0, (args, res.out, res.err)
        _warned_once(zap, res.err, args)
    # output --follow of a queued subagent reads the settings to find it a slot: once, not per tick
    follow = subprocess.Popen([sys.executable, "-m", "zapcli", "output", "--follow", queued],
                              env={**zap.env, **limited}, cwd=zap.cwd, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)  # several follow ticks
    zap("kill", slow, check=True)
    out, err = follow.communicate(timeout=30)
    assert out == b"q\n", (out, err)
    _warned_once(zap, err.decode(), "output --follow")


def _git(cwd, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd,
                   check=True, capture_output=True)


def _pad_trail(zap, sid: str, size: int) -> None:
    """Grow a finished trail past the trim threshold with whole records."""
    line = json.dumps({"v": 1, "seq": 99, "ts": "2026-01-01T00:00:00.000000Z",
                       "type": "diagnostic", "dimension": "test", "name": "pad",
                       "message": "x" * 4000}) + "\n"
    with open(zap.trail(sid), "a", encoding="utf-8") as fh:
        fh.write(line * (size // len(line) + 1))


@pytest.mark.timeout(120)
def test_gc_with_an_invalid_config_trims_and_keeps_the_rest(zap):
    _git(zap.cwd, "init", "-q", "-b", "main")
    (zap.cwd / "README").write_text("base\n")
    _git(zap.cwd, "add", "README")
    _git(zap.cwd, "commit", "-q", "-m", "base")
    ids = [zap.spawn_sh(f"echo {n}") for n in range(3)]
    tree = zap.spawn_sh("true", "--worktree")
    zap("wait", *ids, tree, check=True)
    for sid in (*ids, tree):  # a runner's own collection at its exit would trim the trail padded below
        runner_gone(zap, sid)
    _pad_trail(zap, ids[0], 6 * 2**20)
    _break_config(zap)
    keep_one = {"ZAPCLI_MAX_KEPT": "1"}  # a valid layer asks for deletions: not acted on
    res = zap("gc", env=keep_one)
    assert res.returncode == 0, res.err
    _warned_once(zap, res.err, "gc")
    # A new user's trial: "deleted 0, kept 33" stood above lines saying trees were
    # removed. The summary counts what it did: trails trimmed, the tree removed.
    assert "gc: deleted 0 subagents, kept 4; trimmed 1 trail; removed 1 worktree\n" in res.out
    assert "kept the rest: a config file is invalid" in res.out
    assert f"{ids[0]}: trimmed" in res.out and zap.trail(ids[0]).stat().st_size < 2 * 2**20
    removed = next(x for x in res.out.splitlines() if x.startswith("  worktree ") and tree in x)
    assert f"{tree}: removed: clean" in removed and not Path(removed.split()[1].rstrip(":")).exists()
    again = zap.json("gc", env=keep_one)
    assert again["kept_reason"] and again["deleted"] == []
    assert all(zap.trail(sid).exists() for sid in (*ids, tree))
    (zap.home.parent / "config" / "config.yaml").write_text("max_kept: 1\n")  # fixed: it acts
    fixed = zap.json("gc")
    assert len(fixed["deleted"]) == 3 and fixed["kept_reason"] is None
