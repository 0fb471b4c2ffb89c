"""The on-finish command (`--on-finish CMD`, config `on_finish`; SPEC §16):
run exactly once when a subagent reaches a terminal status.

Imports `zapcli.trail.store`, `zapcli.trail.reader`, `zapcli.paths`. Whoever
ends a subagent (`store.end`, `TrailWriter.end`: the runner, `kill`, an
observer that finds it lost or overdue, the queue) calls `fire` right after;
an observer that finds a terminal trail whose command was never claimed
calls it too (the ender died in between). `fire` appends an `on_finish`
claim record under the trail's lock only if there is none yet — so however
many race, one claims — and starts a detached helper (`python -m
zapcli.trail.finish ID`) that runs the command with ZAPCLI_ID,
ZAPCLI_STATUS, ZAPCLI_EXIT_CODE and ZAPCLI_TRAIL set, records its exit, and
writes a `diagnostic` when it fails. The command's own failure never
changes the subagent's status. The helper is started through a shell that
exits at once, so it is nobody's descendant: ending the subagent's process
tree does not end it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from zapcli.trail import reader, store
from zapcli.trail.model import is_terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TIMEOUT_S = 600.0  # an on-finish command that hangs is stopped after this long
OUTPUT_TAIL = 2000


def _names_a_command(path: Path) -> bool:
    """Whether the trail's `spawn` record (its first line) names an on-finish
    command: read alone, so ending a subagent without one costs no parse of
    its whole trail."""
    from zapcli.trail import jsonl

    fd = store.open_read(path)
    try:
        head = b""
        while b"\n" not in head:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            head += chunk
    finally:
        os.close(fd)
    if b'"on_finish"' not in head.partition(b"\n")[0]:
        return False
    try:
        return bool(jsonl.loads(head.partition(b"\n")[0]).get("on_finish"))
    except (ValueError, AttributeError):
        return False


def _claim(path: Path) -> bool:
    """Append the claim record if the trail is terminal, names a command and
    has no claim yet. True when this call claimed it."""
    if not _names_a_command(path):
        return False
    with store.locked(path):
        recs = reader.read(path).records
        if not recs or recs[0].get("type") != "spawn" or not recs[0].get("on_finish"):
            return False
        if any(r.get("type") == "on_finish" for r in recs):
            return False
        if not any(r.get("type") == "status" and is_terminal(r.get("status")) for r in recs):
            return False
        return store.append(path, "on_finish", {"state": "claimed", "pid": os.getpid()}) is not None


def fire(path: Path) -> None:
    """Claim the on-finish command of the trail at `path` and start it, once
    over all callers. Never raises: a hook must not break who ended it."""
    try:
        if not _claim(path):
            return
        from zapcli.paths import child_env
        from zapcli.redact import close_handoff, handoff

        sid = path.name.removesuffix(".jsonl")
        argv = f"{_quote(sys.executable)} -m zapcli.trail.finish {sid} </dev/null >/dev/null 2>&1 &"
        env, fds = handoff(child_env(dict(os.environ)))  # the helper lives a while: no key in its block
        try:
            subprocess.run(["/bin/sh", "-c", argv], env=env, pass_fds=fds,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                           cwd="/", timeout=30)
        finally:
            close_handoff(fds)
    except Exception as exc:  # noqa: BLE001 - say so in the trail, never raise
        store.append(path, "diagnostic", {"dimension": "on_finish", "name": "not_started",
                                          "message": f"the on-finish command could not be "
                                                     f"started: {exc}"})


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _env(sid: str, path: Path, final: dict[str, Any], spawn: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    code = final.get("exit_code")
    env.update(ZAPCLI_ID=sid, ZAPCLI_STATUS=str(final.get("status")), ZAPCLI_TRAIL=str(path),
               ZAPCLI_EXIT_CODE="" if code is None else str(code))
    tree = spawn.get("worktree")
    if isinstance(tree, dict) and tree.get("path"):
        env["ZAPCLI_WORKTREE"] = str(tree["path"])
    return env


def _running(path: Path) -> None:
    """Say who runs the command (pid + create time), so a remover can tell a
    helper still at work from one that died before recording its end."""
    import psutil

    me = os.getpid()
    try:
        created: float | None = psutil.Process(me).create_time()
    except psutil.Error:
        created = None
    store.append(path, "on_finish", {"state": "running", "pid": me, "create_time": created})


def run(sid: str) -> int:
    """The helper: run the claimed command of `sid` and record how it ended."""
    path = store.path_for(sid)
    try:
        recs = reader.read(path).records
    except OSError:
        return 1  # removed in between (by hand): nothing to run, nowhere to say so
    if not recs or recs[0].get("type") != "spawn":
        return 1
    _running(path)
    spawn = recs[0]
    final = next(r for r in recs if r.get("type") == "status" and is_terminal(r.get("status")))
    cwd = str(spawn.get("cwd") or "/")
    started = time.monotonic()
    try:
        proc = subprocess.run(["/bin/sh", "-c", str(spawn["on_finish"])], cwd=cwd if os.path.isdir(cwd) else "/",
                              env=_env(sid, path, final, spawn), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=TIMEOUT_S, start_new_session=True)
        code: int | None = proc.returncode
        why = f"exited with code {code}" if code else None
        tail = proc.stdout[-OUTPUT_TAIL:].decode("utf-8", "replace").strip()
    except subprocess.TimeoutExpired:
        code, why, tail = None, f"did not finish within {TIMEOUT_S:.0f}s and was stopped", ""
    except OSError as exc:
        code, why, tail = None, f"could not run: {exc}", ""
    store.append(path, "on_finish", {"state": "done", "exit_code": code,
                                     "duration_ms": int((time.monotonic() - started) * 1000)})
    if why:
        store.append(path, "diagnostic", {"dimension": "on_finish", "name": "failed",
                                          "message": f"the on-finish command {why}"
                                                     + (f": {tail}" if tail else "")})
    return 0


if __name__ == "__main__":
    from zapcli import keyguard

    keyguard.seal()  # the keys came in a memory file (`fire`); the command gets them back
    raise SystemExit(run(sys.argv[1]))
