"""Bench fixtures: realistic finished subagents on disk, waiting for a child.

Import after `Install.use_in_process(home, session)` so zapcli resolves to the
compiled copy and the store API writes under that home.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import orjson
import psutil

TASKS = [
    "pytest -q tests/test_{i}.py",
    "ruff check src/module_{i}",
    "make -C build/target_{i} all",
    "grep -rn 'TODO' src/pkg_{i} | wc -l",
    "python scripts/migrate.py --shard {i}",
]


def make_finished(session: str, n: int, *, cwd: str, seed: int = 1) -> list[str]:
    """Create `n` finished sh subagents the way spawn + child leave them:
    a trail with spawn / process / start / terminal status records (store API),
    `.out` / `.err` capture files, and session markers (`all` only: a finished
    child deactivates itself). Returns the ids, oldest first."""
    from zapcli import ids
    from zapcli.lifecycle import session as sessions
    from zapcli.paths import state_dir
    from zapcli.trail import records, store

    rng = random.Random(seed)
    created: list[str] = []
    base_pid = 200_000
    for i in range(n):
        while True:
            sid = ids.new_id()
            if not store.exists(sid):
                break
        now = time.time()
        mono = time.monotonic()
        task = rng.choice(TASKS).format(i=i)
        timeout = 300.0
        store.create_trail(sid, {
            "session": session, "cli": "sh", "task": task, "cwd": cwd, "workspace": cwd,
            "timeout_s": timeout, "approval": "workspace", "unattended": False,
            "max_tokens": None, "after": [], "mono": mono,
            "deadline": records.iso_utc(now + timeout), "kill_grace_s": 3.0,
            "agent": None, "model": None, "definition": None,
        }, [])
        path = store.path_for(sid)
        pid = base_pid + i
        ctime = round(now - 0.05, 2)
        store.append(path, "process", {
            "pid": pid, "create_time": ctime, "mono": mono + 0.03,
            "deadline": records.iso_utc(now + timeout), "deadline_mono": mono + 0.03 + timeout,
        }, sync=False)
        store.append(path, "start", {
            "pid": pid, "create_time": ctime, "mono": mono + 0.15, "deadline_mono": mono + 0.15 + timeout,
            "definition": None, "tools": [], "diagnostics": 0,
        }, sync=False)
        roll = rng.random()
        out_text = f"ok: {task}\n".encode() * rng.randint(0, 40)
        err_text = b"" if roll < 0.85 else b"error: something failed\n"
        if roll < 0.85:
            status, code, reason = "completed", 0, None
        elif roll < 0.97:
            status, code, reason = "failed", 1, "exit code 1"
        else:
            status, code, reason = "cancelled", None, "terminated by a signal"
        store.append(path, "status", {
            "status": status, "exit_code": code, "reason": reason,
            "mono": mono + 0.15 + rng.uniform(0.05, 40.0),
            "stdout_bytes": len(out_text), "stderr_bytes": len(err_text),
            "stdout_kept": len(out_text), "stderr_kept": len(err_text),
        }, sync=False)
        for suffix, data in ((".out", out_text), (".err", err_text)):
            fd = store.create_exclusive(store.path_for(sid, suffix))
            try:
                store.write_all(fd, data)
            finally:
                os.close(fd)
        sessions.add(session, sid)
        created.append(sid)
    # Finished subagents are not active: drop the `active` markers in one pass.
    active_dir = state_dir() / "sessions" / sessions.key(session) / "active"
    mine = set(created)
    for name in os.listdir(active_dir):
        if name.partition("_")[2] in mine:
            (active_dir / name).unlink()
    return created


def trail_records(home: Path, sid: str) -> list[dict]:
    try:
        data = (home / "subagents" / f"{sid}.jsonl").read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for line in data.split(b"\n"):
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_done(home: Path, sid: str, timeout: float = 30.0) -> str:
    """Block until `sid` has a terminal status record and its supervisor process
    (including its after-exit queue/retention work) has exited. Returns the status."""
    end = time.monotonic() + timeout
    status = None
    pid = None
    while time.monotonic() < end:
        recs = trail_records(home, sid)
        for rec in recs:
            if rec.get("type") == "process" and pid is None:
                pid = rec.get("pid")
            if rec.get("type") == "status" and status is None:
                status = rec.get("status")
        if status is not None and (pid is None or _gone(pid)):
            return status
        time.sleep(0.01)
    raise RuntimeError(f"{sid} did not finish within {timeout}s (status {status}, pid {pid})")


def kill_subagent(home: Path, sid: str) -> None:
    """SIGKILL the subagent's process group (its supervisor leads it)."""
    import signal

    for rec in trail_records(home, sid):
        if rec.get("type") == "process":
            pid = rec.get("pid")
            try:
                proc = psutil.Process(pid)
                if abs(proc.create_time() - rec.get("create_time", 0)) < 1.0:
                    os.killpg(pid, signal.SIGKILL)
            except (psutil.NoSuchProcess, ProcessLookupError, PermissionError):
                pass
