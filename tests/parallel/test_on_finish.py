"""`--on-finish CMD` (docs/explanation/rules.md#parallel-coding): exactly once per subagent, whoever ends it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import record_of, sleep_marker, supervisor_pid, trail_records, wait_until

HOOK = 'echo "$ZAPCLI_ID $ZAPCLI_STATUS [$ZAPCLI_EXIT_CODE] $ZAPCLI_TRAIL" >> {log}'


def _hook_lines(log: Path, sid: str) -> list[list[str]]:
    if not log.exists():
        return []
    return [line.split() for line in log.read_text().splitlines() if line.startswith(sid)]


def _ran(zap, log: Path, sid: str) -> list[str]:
    """The one line the hook wrote for `sid`, once its helper recorded its end."""
    wait_until(lambda: any(r["type"] == "on_finish" and r.get("state") == "done"
                           for r in trail_records(zap.trail(sid))), 20)
    lines = _hook_lines(log, sid)
    assert len(lines) == 1, lines
    claims = [r for r in trail_records(zap.trail(sid)) if r["type"] == "on_finish"]
    assert [c["state"] for c in claims] == ["claimed", "running", "done"]
    return lines[0]


def test_runs_once_after_completion_failure_timeout_and_kill(zap, tmp_path):
    log = tmp_path / "hook.log"
    hook = HOOK.format(log=log)
    ok = zap.spawn_sh("true", "--on-finish", hook)
    failed = zap.spawn_sh("exit 3", "--on-finish", hook)
    slow = zap.spawn_sh(f"sleep {sleep_marker(3501)}", "--on-finish", hook, timeout=1)
    killed = zap.spawn_sh(f"sleep {sleep_marker(3502)}", "--on-finish", hook)
    wait_until(lambda: zap.status(killed) == "running")
    zap("kill", killed, "--grace", "0.5", check=True)
    assert _ran(zap, log, ok) == [ok, "completed", "[0]", str(zap.trail(ok))]
    assert _ran(zap, log, failed)[1:3] == ["failed", "[3]"]
    assert _ran(zap, log, slow)[1:3] == ["timeout", "[]"]
    assert _ran(zap, log, killed)[1] == "cancelled"


def test_after_the_runner_was_sigkilled_twenty_observers_run_it_once(zap, tmp_path):
    log = tmp_path / "hook.log"
    sid = zap.spawn_sh(f"sleep {sleep_marker(3503)}", "--on-finish", HOOK.format(log=log))
    os.kill(supervisor_pid(zap, sid), signal.SIGKILL)
    time.sleep(0.2)
    observers = [subprocess.Popen([sys.executable, "-m", "zapcli", "poll", "--no-wait", sid],
                                  env=zap.env, cwd=zap.cwd, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for _ in range(20)]
    for p in observers:
        p.wait(timeout=60)
    assert _ran(zap, log, sid)[1] == "lost"
    time.sleep(0.5)  # a late duplicate would show up here
    assert len(_hook_lines(log, sid)) == 1


def test_its_own_failure_is_a_diagnostic_not_a_status(zap):
    sid = zap.spawn_sh("true", "--on-finish", "echo 'hook broke' >&2; exit 7")
    assert zap("wait", sid).returncode == 0
    diag = wait_until(lambda: [r for r in trail_records(zap.trail(sid))
                               if r["type"] == "diagnostic" and r.get("dimension") == "on_finish"], 20)
    assert "exited with code 7" in diag[0]["message"] and "hook broke" in diag[0]["message"]
    assert zap.status(sid) == "completed"


def test_config_sets_the_default_and_a_workspace_file_cannot(zap, tmp_path):
    log = tmp_path / "hook.log"
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(f"on_finish: '{HOOK.format(log=log)}'\n")
    (zap.cwd / ".zapcli").mkdir()
    (zap.cwd / ".zapcli" / "config.yaml").write_text("on_finish: 'touch pwned'\n")
    zap("trust", check=True)  # even a trusted workspace file runs no command of its own
    proc = zap("spawn", "--cli", "sh", "--", "true")
    assert "is not taken from a workspace file" in proc.err
    sid = proc.out.strip()
    assert _ran(zap, log, sid)[1] == "completed"
    assert not (zap.cwd / "pwned").exists()
    off = zap.spawn_sh("true", "--on-finish", "")  # '' turns the default off
    assert zap("wait", off).returncode == 0
    time.sleep(0.5)
    assert not _hook_lines(log, off)


def _finish(zap, sid: str, state: str) -> dict | None:
    return next((r for r in trail_records(zap.trail(sid))
                 if r["type"] == "on_finish" and r.get("state") == state), None)


def test_rm_clean_and_gc_wait_for_the_hook_then_remove(zap, tmp_path):
    """Tryout c7: `clean` right after the end deleted the trail before the
    hook was claimed, so it never ran. An ended subagent whose hook is not
    done is refused by rm, kept by clean and gc (saying why), removed after."""
    log = tmp_path / "hook.log"
    # each hook runs until the test opens its gate, after the checks below (a loaded
    # machine may take longer than any fixed sleep for them); the first one first
    gate = f"{tmp_path}/go-$ZAPCLI_ID"
    hook = (f"i=0; while [ ! -e {gate} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; "
            f"{HOOK.format(log=log)}")
    old = zap.spawn_sh("true", "--on-finish", hook)
    assert zap("wait", old).returncode == 0  # gc keeps the newest by its end: `old` ends first
    sid = zap.spawn_sh("true", "--on-finish", hook)
    assert zap("wait", sid).returncode == 0
    res = zap("rm", sid)
    assert res.returncode == 1 and "on-finish command" in res.out, res.out
    assert zap.trail(sid).exists()
    doc = zap.json("clean")
    assert doc["removed"] == [] and {k["id"] for k in doc["kept"]} == {old, sid}
    assert all("kept: on-finish still running" in k["message"] for k in doc["kept"])
    gc = zap.json("gc", "--dry-run", env={"ZAPCLI_MAX_KEPT": "1"})
    assert gc["deleted"] == [] and "kept: on-finish still running" in gc["held"][old]
    assert zap.json("gc", env={"ZAPCLI_MAX_KEPT": "1"})["deleted"] == []
    (tmp_path / f"go-{old}").touch()
    assert _ran(zap, log, old)[1] == "completed"
    (tmp_path / f"go-{sid}").touch()
    assert _ran(zap, log, sid)[1] == "completed"
    assert zap.json("gc", env={"ZAPCLI_MAX_KEPT": "1"})["deleted"] == [old]
    assert zap("rm", sid).returncode == 0
    assert not list(zap.home.glob("subagents/sa_*"))


def test_a_tight_clean_loop_loses_no_hook(zap, tmp_path):
    """Tryout c7's repro: a script cleaning as soon as it can."""
    log = tmp_path / "hook.log"
    ids = []
    for _ in range(6):
        ids.append(zap.spawn_sh("sleep 0.3", "--on-finish", HOOK.format(log=log)))
        wait_until(lambda: zap.json("clean")["removed"], 30, 0.0)
    wait_until(lambda: len(log.read_text().splitlines()) == len(ids) if log.exists() else False, 20)
    assert sorted(line.split()[0] for line in log.read_text().splitlines()) == sorted(ids)


def test_a_dead_hook_helper_does_not_hold_the_subagent_forever(zap, tmp_path):
    sid = zap.spawn_sh("true", "--on-finish", f"sleep {sleep_marker(3504)}")
    helper = wait_until(lambda: _finish(zap, sid, "running"), 20)
    assert zap("rm", sid).returncode == 1
    os.kill(helper["pid"], signal.SIGKILL)
    wait_until(lambda: zap("rm", sid).returncode == 0, 10)
    assert not zap.trail(sid).exists()


# A runner's end as it is written (`TrailWriter.end`: the status, then the
# claim), by a real process that dies right after claiming, before it could
# start the helper: the window the chaos run hit (2 in 100).
_CLAIM_AND_DIE = """
import os, sys
from pathlib import Path
from zapcli.trail import finish, store
path = Path(sys.argv[1])
store.append(path, "status", {"status": "failed", "exit_code": 1, "reason": "ended by the test"})
assert finish._claim(path)
os.kill(os.getpid(), 9)
"""


def test_a_claim_whose_claimer_died_before_starting_the_helper_is_taken_over_once(zap, tmp_path):
    """#24.11: nothing re-ran such a hook and nothing said so. The next
    observers take the claim over once its claimer is gone and no helper
    has said it runs; many at once run it once, and the first claim's
    helper, had it only been slow, runs nothing when it finally starts."""
    log = tmp_path / "hook.log"
    sid = zap.spawn_sh(f"sleep {sleep_marker(3505)}", "--on-finish", HOOK.format(log=log))
    runner = supervisor_pid(zap, sid)
    wait_until(lambda: record_of(zap, sid, "start"), 20)
    os.killpg(runner, signal.SIGKILL)  # the runner and its work: nothing of it writes any more
    proc = subprocess.run([sys.executable, "-c", _CLAIM_AND_DIE, str(zap.trail(sid))],
                          env=zap.env, capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    stale = _finish(zap, sid, "claimed")
    assert zap("poll", "--no-wait", sid).returncode == 0
    assert not _hook_lines(log, sid)  # a claim just made may still start its helper: left alone

    def observers_ran_it() -> bool:
        crowd = [subprocess.Popen([sys.executable, "-m", "zapcli", "poll", "--no-wait", sid],
                                  env=zap.env, cwd=zap.cwd, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for _ in range(6)]
        for p in crowd:
            p.wait(timeout=60)
        return any(r["type"] == "on_finish" and r.get("state") == "done"
                   for r in trail_records(zap.trail(sid)))
    wait_until(observers_ran_it, 40, 0.5)
    assert _hook_lines(log, sid) == [[sid, "failed", "[1]", str(zap.trail(sid))]]
    states = [(r["state"], r.get("took_over")) for r in trail_records(zap.trail(sid))
              if r["type"] == "on_finish"]
    assert states == [("claimed", None), ("claimed", stale["token"]), ("running", None),
                      ("done", None)], states
    late = subprocess.run([sys.executable, "-m", "zapcli.trail.finish", sid, stale["token"]],
                          env=zap.env, capture_output=True, timeout=60)
    assert late.returncode == 0, late.stderr
    assert len(_hook_lines(log, sid)) == 1
    assert len([r for r in trail_records(zap.trail(sid)) if r["type"] == "on_finish"]) == 4
