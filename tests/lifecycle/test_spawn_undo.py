"""A spawn that fails as it makes its session markers (a file where the
session's folder should be, a full disk) is undone whole: its tree's count
and allotment go back, so the next spawn is not refused for what the failed
one never started."""

from __future__ import annotations

from zapcli.budget import allot
from zapcli.lifecycle import session as sessions


def test_a_spawn_whose_markers_cannot_be_made_gives_its_place_back(zap):
    run = "run_undo01"
    env = {"ZAPCLI_SESSION": run}
    allot.set_budget(run, allot.Budget(max_subagents=1))  # the run's tree may start one subagent
    folder = zap.home / "sessions" / sessions.key(run)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("")  # not a folder: no marker can be made in it
    failed = zap("spawn", "--cli", "sh", "--", "true", env=env)
    assert failed.returncode != 0, failed.out
    assert not list((zap.home / "subagents").glob("sa_*.jsonl"))  # nothing of it was left
    folder.unlink()
    again = zap("spawn", "--cli", "sh", "--", "true", env=env)
    assert again.returncode == 0, again.err  # its one place was given back
    sid = again.out.strip()
    assert zap.wait_status(sid) == "completed"
