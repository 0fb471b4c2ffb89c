"""The on-finish command (`--on-finish CMD`, config `on_finish`; docs/explanation/rules.md#parallel-coding):
run exactly once when a subagent reaches a terminal status.

Imports `zapcli.trail.store`, `zapcli.trail.reader`, `zapcli.paths`. Whoever
ends a subagent (`store.end`, `TrailWriter.end`: the runner, `kill`, an
observer that finds it lost or overdue, the queue) calls `fire` right after;
an observer that finds a terminal trail whose command was never claimed
calls it too (the ender died in between). `fire` appends an `on_finish`
claim record under the trail's lock only if there is none yet — so however
many race, one claims — and starts a detached helper (`python -m
zapcli.trail.finish ID TOKEN`) that runs the command with ZAPCLI_ID,
ZAPCLI_STATUS, ZAPCLI_EXIT_CODE, ZAPCLI_TRAIL and ZAPCLI_CWD (the folder it
was spawned from) set, in an empty folder of zapcli's own (`hook_folder`),
records its exit, and
writes a `diagnostic` when it fails. The command's own failure never
changes the subagent's status. The helper is started through a shell that
exits at once, so it is nobody's descendant: ending the subagent's process
tree does not end it.

A claimer can die between its claim and starting the helper (a runner
SIGKILLed at its end). Its claim names it (pid, create time) and a token;
an observer that finds it dead and no helper `running` a while after the
claim takes the claim over (`fire(path, stale=token)`: a new claim with a
new token, under the lock). A helper says `running` only under the lock and
only while its token is the latest claim's, so a slow first helper that
wakes after a takeover exits without running anything: exactly once holds.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from zapcli.trail import reader, store
from zapcli.trail.model import is_terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TAKEOVER_S = 5.0  # a claim whose claimer is gone and no helper runs: taken over after this long
TIMEOUT_S = 600.0  # an on-finish command that hangs is stopped after this long
OUTPUT_TAIL = 2000


def _names_a_command(path: Path) -> bool:
    """Whether the trail's `spawn` record (its first line) names an on-finish
    command: read alone, so ending a subagent without one costs no parse of
    its whole trail."""
    from zapcli.trail import jsonl

    head = store.first_line(path)
    if b'"on_finish"' not in head:
        return False
    try:
        return bool(jsonl.loads(head).get("on_finish"))
    except (ValueError, AttributeError):
        return False


def _claimable(recs: list[dict[str, Any]], stale: str | None) -> bool:
    """Whether the trail's on-finish command may be claimed now: never claimed
    (`stale` None), or its latest claim is the one `stale` names and no
    helper has said it runs (a takeover)."""
    states = [r for r in recs if r.get("type") == "on_finish"]
    if stale is None:
        return not states
    claims = [r for r in states if r.get("state") == "claimed"]
    return (bool(claims) and claims[-1].get("token") == stale
            and not any(r.get("state") in ("running", "done") for r in states))


def _claim(path: Path, stale: str | None = None) -> str | None:
    """Append a claim record if the trail is terminal, names a command and
    is claimable (`_claimable`). The new claim's token when this call
    claimed it, else None."""
    if not _names_a_command(path):
        return None
    with store.locked(path):
        recs = reader.read(path).records
        if not recs or recs[0].get("type") != "spawn" or not recs[0].get("on_finish"):
            return None
        if not _claimable(recs, stale):
            return None
        if not any(r.get("type") == "status" and is_terminal(r.get("status")) for r in recs):
            return None
        import secrets

        token = secrets.token_hex(8)
        pid, created = me()
        fields = {"state": "claimed", "pid": pid, "create_time": created, "token": token,
                  **({"took_over": stale} if stale else {})}
        return token if store.append(path, "on_finish", fields) is not None else None


def me() -> tuple[int, float | None]:
    """This process's pid and create time (its identity, as a liveness check reads it)."""
    from zapcli import boottime

    me = os.getpid()
    st = boottime.stat(me)
    if st is not None:
        return me, st[1]
    import psutil  # no /proc here

    try:
        return me, psutil.Process(me).create_time()
    except psutil.Error:
        return me, None


def fire(path: Path, *, stale: str | None = None) -> None:
    """Claim the on-finish command of the trail at `path` and start it, once
    over all callers; with `stale`, take over that claim (its claimer died
    before its helper started). Never raises: a hook must not break who
    ended it."""
    try:
        token = _claim(path, stale)
        if token is None:
            return
        start_helper("zapcli.trail.finish", path.name.removesuffix(".jsonl"), token)
    except Exception as exc:  # noqa: BLE001 - say so in the trail, never raise
        store.append(path, "diagnostic", {"dimension": "on_finish", "name": "not_started",
                                          "message": f"the on-finish command could not be "
                                                     f"started: {exc}"})


def start_helper(module: str, *args: str) -> None:
    """Start `python -m MODULE ARGS...` detached: through a shell that exits at
    once, in a session of its own, so ending the subagent's tree never ends
    it; its keys come in a memory file (`redact.handoff`), not its
    environment block. Raises what starting it raised."""
    import subprocess  # only where a command runs: most subagents have no hook

    from zapcli.paths import child_env
    from zapcli.redact import close_handoff, handoff
    from zapcli.selfexec import python_m

    argv = " ".join(_quote(a) for a in python_m(module, *args))
    env, fds = handoff(child_env(dict(os.environ)))  # the helper lives a while: no key in its block
    try:
        subprocess.run(["/bin/sh", "-c", f"{argv} </dev/null >/dev/null 2>&1 &"], env=env,
                       pass_fds=fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                       cwd="/", timeout=30)
    finally:
        close_handoff(fds)


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def base_env(sid: str, path: Path, status: str, exit_code: int | None,
             spawn: dict[str, Any], event: str) -> dict[str, str]:
    """The environment every hook command gets: this process's, with
    ZAPCLI_ID, ZAPCLI_EVENT, ZAPCLI_STATUS, ZAPCLI_EXIT_CODE (empty unless
    ended), ZAPCLI_TRAIL and, for a subagent in a tree, ZAPCLI_WORKTREE
    (`run_command` adds ZAPCLI_CWD)."""
    env = dict(os.environ)
    env.update(ZAPCLI_ID=sid, ZAPCLI_EVENT=event, ZAPCLI_STATUS=status, ZAPCLI_TRAIL=str(path),
               ZAPCLI_EXIT_CODE="" if exit_code is None else str(exit_code))
    tree = spawn.get("worktree")
    if isinstance(tree, dict) and tree.get("path"):
        env["ZAPCLI_WORKTREE"] = str(tree["path"])
    return env


def hook_folder() -> str:
    """Where a hook's command runs: an empty folder of zapcli's own. Not the
    folder the subagent was spawned from (ZAPCLI_CWD names it): an agent may
    have written there, and a program looks for its code in the folder it
    starts in — `python -m x` an `x.py`, `npx x` a `node_modules/.bin/x` —
    so the agent's would run, outside the sandbox and with the keys, in
    place of the one the person named."""
    from zapcli.paths import make_dirs, state_dir

    return str(make_dirs(state_dir() / "hooks" / "cwd"))


def run_command(command: str, cwd: str, env: dict[str, str]) -> tuple[int | None, str | None, str]:
    """Run a hook's shell command in zapcli's own folder (`hook_folder`),
    with ZAPCLI_CWD `cwd`, stopped after TIMEOUT_S: (exit code, why it
    failed or None, the end of its output)."""
    import subprocess

    env = {**env, "ZAPCLI_CWD": cwd}
    try:
        proc = subprocess.run(["/bin/sh", "-c", command], cwd=hook_folder(),
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=TIMEOUT_S, start_new_session=True)
    except subprocess.TimeoutExpired:
        return None, f"did not finish within {TIMEOUT_S:.0f}s and was stopped", ""
    except OSError as exc:
        return None, f"could not run: {exc}", ""
    code = proc.returncode
    return code, f"exited with code {code}" if code else None, \
        proc.stdout[-OUTPUT_TAIL:].decode("utf-8", "replace").strip()


def _running(path: Path, token: str | None) -> list[dict[str, Any]] | None:
    """Say who runs the command (pid + create time), so a remover can tell a
    helper still at work from one that died before recording its end — under
    the lock, and only while `token` is the latest claim's (None: a helper
    of a claim made before tokens). The trail's records, or None when this
    helper's claim was taken over (another helper runs it)."""
    with store.locked(path):
        recs = reader.read(path).records
        if not recs or recs[0].get("type") != "spawn":
            return recs  # damaged meanwhile: the caller gives up
        if token is not None and not _claimable(recs, token):
            return None
        pid, created = me()
        store.append(path, "on_finish", {"state": "running", "pid": pid, "create_time": created})
    return recs


def run(sid: str, token: str | None = None) -> int:
    """The helper: run the claimed command of `sid` and record how it ended."""
    path = store.path_for(sid)
    try:
        recs = _running(path, token)
    except OSError:
        return 1  # removed in between (by hand): nothing to run, nowhere to say so
    if recs is None:
        return 0  # taken over: the helper of the newer claim runs it
    if not recs or recs[0].get("type") != "spawn":
        return 1
    spawn = recs[0]
    final = next(r for r in recs if r.get("type") == "status" and is_terminal(r.get("status")))
    ended = final.get("exit_code")
    env = base_env(sid, path, str(final.get("status")), ended if isinstance(ended, int) else None,
                   spawn, "finished")
    run_recorded(path, str(spawn["on_finish"]), str(spawn.get("cwd") or "/"), env,
                 ("on_finish", {}), "the on-finish command")
    return 0


def run_recorded(path: Path, command: str, cwd: str, env: dict[str, str],
                 record: tuple[str, dict], what: str) -> None:
    """Run a claimed command (an on-finish command or an event hook) and record
    its end: the `record` kind with its fields plus state done, exit code and
    duration; a diagnostic naming `what` when it failed."""
    kind, fields = record
    started = time.monotonic()
    code, why, tail = run_command(command, cwd, env)
    store.append(path, kind, {**fields, "state": "done", "exit_code": code,
                              "duration_ms": int((time.monotonic() - started) * 1000)})
    if why:
        store.append(path, "diagnostic", {"dimension": "hooks" if kind == "event" else kind,
                                          "name": "failed",
                                          "message": f"{what} {why}" + (f": {tail}" if tail else "")})


if __name__ == "__main__":
    from zapcli import keyguard

    keyguard.seal()  # the keys came in a memory file (`fire`); the command gets them back
    raise SystemExit(run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
