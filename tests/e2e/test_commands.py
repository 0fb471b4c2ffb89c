"""Every command end to end (docs/explanation/rules.md#commands, docs/explanation/rules.md#lifecycle): spawn, poll, wait, list, kill,
output, replay, gc, session, status derivation, the queue and user mistakes.

Real processes, real signals, real files; no mocks. Time bounds are generous
(they catch a hang, never measure speed).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone

import psutil
import pytest

from tests.conftest import (
    final_status,
    pgrep,
    record_of,
    sleep_marker,
    start_decoy,
    supervisor_pid,
    trail_records,
    unshare_works,
    wait_until,
)
from zapcli.supervisor.launch import process_create_time

ID_RE = re.compile(r"^sa_\d{8}_[0-9a-f]{8}$")


_record, _supervisor_pid = record_of, supervisor_pid


def _kill_markers(*markers: str) -> None:
    for m in markers:
        for pid in pgrep(m):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _zap_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "zapcli", *args]


def _one_error_line(res, code: int) -> str:
    assert res.returncode == code, (res.returncode, res.out, res.err)
    assert "Traceback" not in res.err
    lines = [line for line in res.err.splitlines() if line.strip()]
    assert len(lines) == 1, res.err
    assert lines[0].startswith("zapcli: error: ")
    return lines[0]


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _rewrite(zap, sid: str, rtype: str, **changes) -> None:
    """Edit the first `rtype` record of a trail in place (by hand, as a user could)."""
    path = zap.trail(sid)
    lines = path.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if not line:
            continue
        rec = json.loads(line)
        if rec.get("type") == rtype:
            rec.update(changes)
            lines[i] = json.dumps(rec).encode()
            break
    else:
        raise AssertionError(f"no {rtype} record")
    path.write_bytes(b"\n".join(lines))


def _crash(zap, sid: str) -> None:
    """SIGKILL a subagent's whole process group: it dies without a result."""
    sup = _supervisor_pid(zap, sid)
    wait_until(lambda: _record(zap, sid, "start"), 10)
    os.killpg(sup, signal.SIGKILL)
    wait_until(lambda: _gone(sup), 5)
    assert final_status(zap.trail(sid)) is None


# --------------------------------------------------------------------------- spawn


@pytest.mark.timeout(60)
def test_spawn_returns_an_id_at_once_even_with_stdout_captured(zap):
    m = f"sleep {sleep_marker(3301)}"
    t0 = time.monotonic()
    # stdout is a pipe, as in id=$(zapcli spawn ...): run() returns only once it closes
    res = subprocess.run(_zap_cmd("spawn", "--cli", "sh", "--", m), capture_output=True,
                         stdin=subprocess.DEVNULL, env=zap.env, cwd=zap.cwd, timeout=30)
    took = time.monotonic() - t0
    try:
        assert res.returncode == 0, res.stderr
        sid = res.stdout.decode().strip()
        assert ID_RE.match(sid), sid
        assert took < 15, took  # the child sleeps for an hour: spawn did not wait on it
        wait_until(lambda: pgrep(m), 10)  # and it runs on after spawn has returned
        assert zap.status(sid) == "running"
    finally:
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_spawn_detaches_the_child(zap):
    """Own session, stdin /dev/null, and none of the caller's descriptors: a
    pipe handed to spawn reaches EOF as soon as spawn has exited."""
    m = f"sleep {sleep_marker(3302)}"
    r, w = os.pipe()
    os.set_inheritable(w, True)
    try:
        proc = subprocess.Popen(_zap_cmd("spawn", "--cli", "sh", "--", f"exec {m}"),
                                stdout=w, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                pass_fds=(w,), env=zap.env, cwd=zap.cwd)
        os.close(w)
        ready, _, _ = select.select([r], [], [], 20)
        assert ready, "spawn (or its child) held the caller's pipe open"
        data = b""
        while True:
            ready, _, _ = select.select([r], [], [], 20)
            assert ready, "the child holds the caller's pipe: no EOF"
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        assert proc.wait(10) == 0
        sid = data.decode().strip()
        assert ID_RE.match(sid)
        wait_until(lambda: pgrep(m), 10)
        sup = _supervisor_pid(zap, sid)
        assert os.getsid(sup) != os.getsid(0)
        assert os.getsid(sup) == sup  # it leads its own session
        for pid in (sup, pgrep(m)[0]):
            assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    finally:
        os.close(r)
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_spawn_task_never_in_argv(zap):
    token = f"argv-secret-{time.time_ns()}"
    m = f"sleep {sleep_marker(3303)}"
    sid = zap.spawn_sh(f"echo {token} >/dev/null; {m}")
    try:
        wait_until(lambda: pgrep(m), 10)
        seen = []
        for proc in psutil.process_iter(["cmdline"]):
            try:
                if token in " ".join(proc.info["cmdline"] or []):
                    seen.append(proc.info["cmdline"])
            except psutil.Error:
                continue
        assert not seen, seen
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert token not in ps
        assert zap.status(sid) == "running"
    finally:
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_spawn_task_from_stdin(zap):
    task = "printf '%s\\n' \"from stdin: ünïcode\""
    res = zap("spawn", "--cli", "sh", "-", input=task.encode())
    assert res.returncode == 0, res.err
    sid = res.out.strip()
    assert ID_RE.match(sid)
    assert zap.wait_status(sid) == "completed"
    assert zap("output", sid).out == "from stdin: ünïcode\n"
    assert _record(zap, sid, "spawn")["task"] == task  # type: ignore[index]
    # trails hold prompts and output: directories 0700, files 0600
    for d in (zap.home, zap.home / "subagents"):
        assert d.stat().st_mode & 0o777 == 0o700, d
    for suffix in (".jsonl", ".out", ".err"):
        assert zap.trail(sid).with_suffix(suffix).stat().st_mode & 0o777 == 0o600, suffix


# --------------------------------------------------------------------------- poll


@pytest.mark.timeout(60)
def test_poll_wait_secs_range(zap):
    sid = zap.spawn_sh("echo hi")
    assert zap.wait_status(sid) == "completed"
    for bad in ("31", "-1"):
        res = zap("poll", sid, "--wait-secs", bad)
        line = _one_error_line(res, 2)
        assert "--wait-secs" in line and "0 and 30" in line and "--no-wait" in line
    for good in ("0", "1", "30"):  # 0 is the default, so it is accepted (#12.12)
        res = zap("poll", sid, "--wait-secs", good)
        assert res.returncode == 0, res.err
        assert f"{sid}: completed" in res.out


@pytest.mark.timeout(60)
def test_poll_returns_early_when_done(zap):
    sid = zap.spawn_sh("sleep 1; echo finished")
    t0 = time.monotonic()
    doc = zap.json("poll", sid, "--wait-secs", "30")
    took = time.monotonic() - t0
    assert doc["subagents"][0]["status"] == "completed"
    assert doc["subagents"][0]["output"]["head"] == "finished\n"
    assert took < 20, took  # a poll that ignored completion would take 35 s


@pytest.mark.timeout(60)
def test_poll_no_wait_checks_once(zap):
    m = f"sleep {sleep_marker(3304)}"
    sid = zap.spawn_sh(m)
    try:
        doc = zap.json("poll", "--no-wait", sid)
        assert doc["subagents"][0]["status"] == "running"
        assert doc["waited_s"] < 2.5  # not the 5 s base wait
    finally:
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_poll_folds_output_at_2kb(zap):
    # 10000 bytes: numbered lines, so head and tail are recognisable
    sid = zap.spawn_sh("i=0; while [ $i -lt 1000 ]; do printf 'line %04d\\n' $i; i=$((i+1)); done")
    assert zap.wait_status(sid) == "completed"
    full = "".join(f"line {i:04d}\n" for i in range(1000)).encode()
    doc = zap.json("poll", sid)["subagents"][0]["output"]
    assert doc["head"].encode() == full[:2048]
    assert doc["tail"].encode() == full[-2048:]
    assert doc["folded_bytes"] == len(full) - 4096
    assert not doc["truncated"]
    out = zap("poll", sid).out
    assert f"{len(full) - 4096} bytes folded" in out
    assert "line 0000" in out and "line 0999" in out and "line 0500" not in out
    assert "OUTPUT TRUNCATED" not in out
    assert zap("output", sid).stdout == full  # output is unfolded


@pytest.mark.timeout(60)
def test_poll_output_truncated_past_1mb(zap):
    sid = zap.spawn_sh("head -c 1500000 /dev/zero | tr '\\0' a")
    assert zap.wait_status(sid) == "completed"
    out = zap("poll", sid).out
    assert "OUTPUT TRUNCATED (1500000 bytes written; the first and last 512 KB kept)" in out
    kept = zap("output", sid).stdout
    assert len(kept) <= 1024 * 1024 and kept.count(b"\n") == 2  # one line: the marker's own
    head, marker, tail = kept.split(b"\n")
    assert set(head) == set(tail) == {ord("a")} and marker.startswith(b"[zapcli: ")


@pytest.mark.timeout(60)
def test_poll_all_running_summary(zap):
    m1, m2 = f"sleep {sleep_marker(3305)}", f"sleep {sleep_marker(3306)}"
    t1 = f"{m1} # alpha task with a rather long description that goes on"
    t2 = f"{m2} # beta"
    a, b = zap.spawn_sh(t1), zap.spawn_sh(t2)
    try:
        res = zap("poll", "--no-wait", a, b)
        assert res.returncode == 0, res.err
        lines = res.out.splitlines()
        assert len(lines) == 3, res.out
        assert re.fullmatch(r"\[SubAgent\] 2/2 still running \(waited [0-9.]+s\)", lines[0]), lines[0]
        assert lines[1].startswith("  tasks: ")
        assert lines[2] == f"  ids: {a} {b}"  # which id is which task, for a model acting on it
        parts = lines[1][len("  tasks: "):].split(" / ")
        assert len(parts) == 2
        assert len(parts[0]) <= 40 and t1.startswith(parts[0].rstrip("…"))
        assert parts[1] == t2
    finally:
        _kill_markers(m1, m2)


@pytest.mark.timeout(60)
def test_poll_bad_ids_answer_for_themselves(zap):
    sid = zap.spawn_sh("echo fine")
    assert zap.wait_status(sid) == "completed"
    unknown, malformed = "sa_20260101_0badc0de", "not-an-id"
    res = zap("poll", unknown, sid, malformed)
    assert res.returncode == 1  # any unknown id fails the command; the others still answer
    assert "does not exist" not in res.out and "Traceback" not in res.err  # said once (#12.18)
    assert f"zapcli: error: {unknown} does not exist" in res.err  # on stderr, as every command
    assert f"zapcli: error: {malformed} does not exist" in res.err
    assert f"{sid}: completed" in res.out and "fine" in res.out
    doc = zap.json("poll", unknown, sid, malformed)["subagents"]
    assert [d["id"] for d in doc] == [unknown, sid, malformed]
    assert doc[1]["status"] == "completed" and doc[1]["error"] is None
    assert "does not exist" in doc[0]["error"]["message"] and doc[2]["error"]["code"] == "not_found"
    res = zap("poll", unknown, malformed)
    assert res.returncode == 1 and "Traceback" not in res.err


# --------------------------------------------------------------------------- wait, list, kill


@pytest.mark.timeout(60)
def test_wait_exit_codes(zap):
    ok = zap.spawn_sh("true")
    bad = zap.spawn_sh("exit 3")
    m = f"sleep {sleep_marker(3307)}"
    slow = zap.spawn_sh(m)
    try:
        assert zap("wait", ok).returncode == 0
        res = zap("wait", ok, bad)
        assert res.returncode == 3, res.out
        assert "failed" in res.out
        t0 = time.monotonic()
        res = zap("wait", "--timeout", "1", slow)
        assert res.returncode == 4, res.out
        assert time.monotonic() - t0 < 15
        res = zap("wait", "--any", "--timeout", "20", ok, slow)
        assert res.returncode == 0, res.out
        doc = zap.json("wait", "--any", "--timeout", "20", bad, slow)
        assert doc["exit_code"] == 3 and not doc["timed_out"]
        assert pgrep(m), "wait --any returned because the slow one ended?"
    finally:
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_list_sessions_and_status(zap):
    mine = zap.spawn_sh("echo mine")
    other_env = {"ZAPCLI_SESSION": zap.env["ZAPCLI_SESSION"] + "-other"}
    res = zap("spawn", "--cli", "sh", "--", "exit 1", env=other_env)
    assert res.returncode == 0, res.err
    theirs = res.out.strip()
    assert zap.wait_status(mine) == "completed" and zap.wait_status(theirs) == "failed"

    assert [v["id"] for v in zap.json("list")["subagents"]] == [mine]
    assert [v["id"] for v in zap.json("list", env=other_env)["subagents"]] == [theirs]
    assert zap.status(theirs) == "failed"  # an explicit id works from any session
    nobody = zap.json("list", env={"ZAPCLI_SESSION": "nobody-here"})
    assert nobody["count"] == 0 and nobody["subagents"] == []
    every = zap.json("list", "--all")
    assert {v["id"] for v in every["subagents"]} == {mine, theirs}
    assert [v["id"] for v in every["subagents"]] == [theirs, mine]  # newest first
    assert [v["id"] for v in zap.json("list", "--all", "--status", "failed")["subagents"]] == [theirs]
    assert zap.json("list", "--status", "failed")["subagents"] == []
    out = zap("list").out
    assert out.startswith("[SubAgent] 1 subagent in this session")
    assert re.search(rf"^{mine[-8:]}  completed [0-9.]+s +sh +echo mine$", out, re.M), out
    out = zap("list", "--long").out
    assert f"{mine}: completed" in out and "Task: echo mine" in out
    _one_error_line(zap("list", "--status", "bogus"), 2)


@pytest.mark.timeout(60)
def test_kill_whole_tree_all_and_finished(zap):
    m1, m2, m3 = (f"sleep {sleep_marker(n)}" for n in (3308, 3309, 3310))
    a = zap.spawn_sh(f'sh -c "{m1} & wait" & {m2}')
    b = zap.spawn_sh(f"exec {m3}")
    other_m = f"sleep {sleep_marker(3311)}"
    other_env = {"ZAPCLI_SESSION": zap.env["ZAPCLI_SESSION"] + "-other"}
    res = zap("spawn", "--cli", "sh", "--", f"exec {other_m}", env=other_env)
    assert res.returncode == 0
    other = res.out.strip()
    done = zap.spawn_sh("true")
    try:
        wait_until(lambda: all(pgrep(m) for m in (m1, m2, m3, other_m)), 10)
        assert zap.wait_status(done) == "completed"
        res = zap("kill", "--all", "--grace", "1")
        assert res.returncode == 0, res.err
        assert res.out.startswith("[SubAgent] terminated 2 subagents:")
        assert f"{a}: cancelled (SIGTERM" in res.out and f"{b}: cancelled" in res.out
        assert other not in res.out
        wait_until(lambda: not any(pgrep(m) for m in (m1, m2, m3)), 5)
        assert pgrep(other_m), "kill --all reached another session"
        assert zap.status(a) == "cancelled" and zap.status(b) == "cancelled"
        # already-finished ids are reported as such, not as errors
        res = zap("kill", done, a)
        assert res.returncode == 0, res.err
        assert f"{done}: already completed" in res.out and f"{a}: already cancelled" in res.out
        doc = zap.json("kill", done)
        assert doc["subagents"][0]["outcome"] == "already completed"
        # an explicit id works from any session
        res = zap("kill", "--grace", "1", other)
        assert res.returncode == 0 and f"{other}: cancelled" in res.out
        wait_until(lambda: not pgrep(other_m), 5)
    finally:
        _kill_markers(m1, m2, m3, other_m)


@pytest.mark.timeout(60)
def test_kill_lets_a_stopped_process_handle_sigterm(zap, tmp_path):
    m = f"sleep {sleep_marker(3318)}"
    flag = tmp_path / "handled"
    sid = zap.spawn_sh(f"sh -c 'trap \"touch {flag}; exit 0\" TERM; {m} & wait'")
    try:
        pid = wait_until(lambda: pgrep(m), 10)[0]  # type: ignore[index]
        handler = psutil.Process(pid).ppid()  # the sh with the trap
        os.kill(handler, signal.SIGSTOP)
        wait_until(lambda: psutil.Process(handler).status() == psutil.STATUS_STOPPED, 5)
        res = zap("kill", "--grace", "3", sid)
        assert res.returncode == 0, res.err
        assert flag.exists(), "the stopped process never got to run its TERM handler"
        assert not pgrep(m)
    finally:
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_output_stderr_and_follow(zap):
    sid = zap.spawn_sh("echo to-out; echo to-err >&2")
    assert zap.wait_status(sid) == "completed"
    assert zap("output", sid).out == "to-out\n"
    assert zap("output", "--stderr", sid).out == "to-err\n"

    m = sleep_marker(2)
    sid = zap.spawn_sh(f"echo first; sleep {m}; echo second")
    proc = subprocess.Popen(_zap_cmd("output", "--follow", sid), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=zap.env, cwd=zap.cwd)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 15)
        assert ready
        assert proc.stdout.readline() == b"first\n"
        assert zap.status(sid) == "running"  # streamed while it still ran
        rest, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert rest == b"second\n"
        assert zap.status(sid) == "completed"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.timeout(60)
def test_replay_and_raw(zap):
    sid = zap.spawn_sh("echo replayed")
    assert zap.wait_status(sid) == "completed"
    res = zap("replay", sid)
    assert res.returncode == 0
    assert res.out.startswith(f"[SubAgent] replay of {sid}")
    assert "spawn  cli=sh" in res.out and "status completed" in res.out
    assert res.out.endswith("status completed (exit_code 0)\n  Output:\n    replayed\n"), res.out
    raw = zap("replay", "--raw", sid)
    assert raw.returncode == 0
    recs = [json.loads(line) for line in raw.out.splitlines()]
    assert [r["type"] for r in recs] == ["spawn", "process", "start", "status"]
    assert recs == trail_records(zap.trail(sid))
    assert all(r["v"] == 1 and isinstance(r["seq"], int) for r in recs)
    since = zap.json("replay", "--since", str(recs[1]["seq"]), sid)["records"]
    assert [r["type"] for r in since] == ["start", "status"]


@pytest.mark.timeout(60)
def test_gc_dry_run_and_for_real(zap):
    ids = []
    for i in range(3):
        ids.append(zap.spawn_sh(f"echo {i}"))
        assert zap.wait_status(ids[-1]) == "completed"
    keep_one = {"ZAPCLI_MAX_KEPT": "1"}
    doc = zap.json("gc", "--dry-run", env=keep_one)
    assert doc["dry_run"] and sorted(doc["deleted"]) == sorted(ids[:2]), doc
    for sid in ids:
        assert zap.trail(sid).exists()
    assert "would delete 2" in zap("gc", "--dry-run", env=keep_one).out
    doc = zap.json("gc", env=keep_one)
    assert sorted(doc["deleted"]) == sorted(ids[:2]) and doc["kept"] == 1
    for sid in ids[:2]:
        assert not zap.trail(sid).exists() and not zap.trail(sid).with_suffix(".out").exists()
    assert zap.trail(ids[2]).exists()
    assert [v["id"] for v in zap.json("list")["subagents"]] == [ids[2]]


@pytest.mark.timeout(60)
def test_session(zap):
    assert zap("session").out == zap.env["ZAPCLI_SESSION"] + "\n"
    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    res = subprocess.run(_zap_cmd("session"), capture_output=True, text=True, env=env,
                         cwd=zap.cwd, stdin=subprocess.DEVNULL, timeout=30)
    assert res.returncode == 0
    sid = os.getsid(0)
    start = int(process_create_time(sid or _outermost_ancestor()))  # as zapcli counts it
    assert res.stdout == f"tty-{sid}-{start}\n"
    doc = json.loads(subprocess.run(_zap_cmd("session", "--json"), capture_output=True, env=env,
                                    cwd=zap.cwd, stdin=subprocess.DEVNULL, timeout=30).stdout)
    from zapcli.lifecycle.session import has_terminal

    assert doc["session"] == f"tty-{sid}-{start}"
    assert doc["source"] == ("terminal" if has_terminal() else "process session")
    if sid > 0:
        assert f"process session {sid}" in doc["derived_from"]
    else:  # a CI sandbox's pid namespace: the session's leader is outside it
        assert "getsid answered 0" in doc["derived_from"]


@pytest.mark.timeout(60)
def test_session_says_what_it_is_derived_from(zap):
    """#14.6: the `tty-` name is the POSIX session's; without a terminal,
    `zapcli session` says so (a note on stderr: stdout stays the bare name for
    $(zapcli session)), and --json's source is "process session"."""
    import fcntl
    import termios

    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}

    def run(*args: str, tty: bool) -> subprocess.CompletedProcess:
        master, slave = os.openpty()
        try:
            return subprocess.run(_zap_cmd("session", *args), capture_output=True, text=True,
                                  env=env, cwd=zap.cwd, timeout=30, start_new_session=True,
                                  stdin=slave if tty else subprocess.DEVNULL,
                                  preexec_fn=(lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0)) if tty else None)
        finally:
            os.close(master)
            os.close(slave)

    bare = run(tty=False)
    assert re.fullmatch(r"tty-[0-9]+-[0-9]+\n", bare.stdout), bare.stdout
    assert "there is no terminal" in bare.stderr and "ZAPCLI_SESSION" in bare.stderr
    doc = json.loads(run("--json", tty=False).stdout)
    assert doc["source"] == "process session" and "no terminal" in doc["derived_from"]
    in_tty = run(tty=True)
    assert in_tty.stderr == "" and re.fullmatch(r"tty-[0-9]+-[0-9]+\n", in_tty.stdout)
    doc = json.loads(run("--json", tty=True).stdout)
    assert doc["source"] == "terminal" and "this terminal's process session" in doc["derived_from"]
    assert zap.json("session")["source"] == "ZAPCLI_SESSION"


def _outermost_ancestor() -> int:
    proc = psutil.Process()
    while proc.ppid() > 0:
        proc = psutil.Process(proc.ppid())
    return proc.pid


@pytest.mark.timeout(60)
def test_session_when_the_leader_is_outside_the_pid_namespace(zap):
    """Containers and CI sandboxes: getsid(0) answers 0. Two commands in one
    namespace share a session named after its first process, not `tty-0-0`."""
    if not unshare_works():
        pytest.skip("needs unshare with user+pid namespaces (not permitted on this machine)")
    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    script = ("import os, subprocess, sys; print(os.getsid(0)); sys.stdout.flush(); "
              f"[subprocess.run({_zap_cmd('session')!r}) for _ in range(2)]; "
              f"subprocess.run({_zap_cmd('session', '--json')!r})")
    res = subprocess.run(["unshare", "-Upfr", "--mount-proc", sys.executable, "-c", script],
                         capture_output=True, text=True, env=env, cwd=zap.cwd,
                         stdin=subprocess.DEVNULL, timeout=30)
    assert res.returncode == 0, res.stderr
    sid, first, second, doc = res.stdout.split("\n", 3)
    assert sid == "0" and first == second
    assert re.fullmatch(r"tty-0-[1-9][0-9]+", first)
    derived = json.loads(doc)["derived_from"]
    assert "outermost visible process" in derived and "getsid answered 0" in derived


@pytest.mark.timeout(60)
def test_json_on_every_command(zap):
    res = zap("spawn", "--cli", "sh", "--json", "--", "echo j")
    doc = json.loads(res.stdout)
    sid = doc["id"]
    assert ID_RE.match(sid) and doc["cli"] == "sh" and doc["task"] == "echo j"
    assert doc["status"] in ("running", "queued")
    assert zap.json("wait", sid)["exit_code"] == 0
    checks = {
        ("poll", sid): lambda d: d["subagents"][0]["status"] == "completed",
        ("list",): lambda d: d["count"] == 1,
        ("list", "--all"): lambda d: d["count"] == 1,
        ("kill", sid): lambda d: d["subagents"][0]["outcome"] == "already completed",
        ("output", sid): lambda d: d["text"] == "j\n",
        ("output", "--stderr", sid): lambda d: d["text"] == "",
        ("replay", sid): lambda d: d["records"][0]["type"] == "spawn",
        ("gc", "--dry-run"): lambda d: d["dry_run"] is True,
        ("gc",): lambda d: d["deleted"] == [],
        ("session",): lambda d: d["session"] == zap.env["ZAPCLI_SESSION"],
    }
    for args, check in checks.items():
        res = zap(*args, "--json")
        assert res.returncode == 0, (args, res.err)
        assert check(json.loads(res.stdout)), (args, res.out)
    created = zap.json("poll", sid)["subagents"][0]["created"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", created)


# --------------------------------------------------------------------------- status derivation


@pytest.mark.timeout(60)
def test_first_terminal_status_wins(zap):
    sid = zap.spawn_sh("echo done")
    assert zap.wait_status(sid) == "completed"
    path = zap.trail(sid)
    seq = max(r["seq"] for r in trail_records(path)) + 1
    with open(path, "ab") as f:
        f.write(json.dumps({"v": 1, "seq": seq, "ts": _iso(time.time()), "type": "status",
                            "status": "failed", "exit_code": 9, "reason": "late"}).encode() + b"\n")
    assert zap.status(sid) == "completed"
    assert zap("wait", sid).returncode == 0
    assert f"{sid}: completed" in zap("list", "--long").out


@pytest.mark.timeout(60)
def test_identity_is_pid_and_create_time(zap, tmp_path):
    """A process record pointing at a live process with another create time
    (a reused pid) reads `lost`, and that process is never signalled."""
    flag = tmp_path / "signalled"
    decoy = start_decoy(flag, zap.env)
    try:
        m = f"sleep {sleep_marker(3312)}"
        sid = zap.spawn_sh(f"exec {m}")
        _crash(zap, sid)
        real_ctime = process_create_time(decoy.pid)
        # deadline long past: an observer that trusted the pid would kill it
        _rewrite(zap, sid, "process", pid=decoy.pid, create_time=real_ctime - 5.0, deadline_mono=0.0)
        _rewrite(zap, sid, "start", pid=decoy.pid, create_time=real_ctime - 5.0)
        assert zap.status(sid) == "lost"
        res = zap("kill", sid)
        assert res.returncode == 0 and "already lost" in res.out
        time.sleep(0.3)
        assert decoy.poll() is None and not flag.exists()
    finally:
        decoy.kill()
        decoy.wait()


@pytest.mark.timeout(60)
def test_lost_versus_interrupted(zap):
    m1, m2 = f"sleep {sleep_marker(3313)}", f"sleep {sleep_marker(3314)}"
    lost, rebooted = zap.spawn_sh(f"exec {m1}"), zap.spawn_sh(f"exec {m2}")
    for sid in (lost, rebooted):
        _crash(zap, sid)
    # spawned before this machine booted: the machine restarted while it ran
    _rewrite(zap, rebooted, "spawn", ts=_iso(psutil.boot_time() - 3600))
    assert zap.status(lost) == "lost"
    assert zap.status(rebooted) == "interrupted"
    # sticky: the observer recorded it
    assert final_status(zap.trail(lost)) == "lost"
    assert final_status(zap.trail(rebooted)) == "interrupted"
    assert zap("wait", lost).returncode == 3


@pytest.mark.timeout(60)
def test_observer_backstop_timeout(zap):
    """The supervisor itself is stopped, so it cannot enforce its deadline;
    an observer past deadline + 10 s kills the tree and records `timeout`."""
    m = f"sleep {sleep_marker(3315)}"
    sid = zap.spawn_sh(f"exec {m}", timeout=2)
    sup = _supervisor_pid(zap, sid)
    try:
        os.kill(sup, signal.SIGSTOP)
        deadline = _record(zap, sid, "process")["deadline_mono"]  # type: ignore[index]
        while True:  # observe once a second; before deadline + 10 s it must stay running
            checked = time.monotonic()
            doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
            if doc["status"] != "running":
                break
            assert checked < deadline + 15, "no observer enforced the deadline"
            time.sleep(1)
        assert doc["status"] == "timeout", doc
        assert "observer" in doc["reason"]
        assert time.monotonic() > deadline + 10  # not before the 10 s slack
        wait_until(lambda: _gone(sup), 10)
        wait_until(lambda: not pgrep(m), 10)
        assert final_status(zap.trail(sid)) == "timeout"
    finally:
        try:
            os.kill(sup, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_stalled_display(zap):
    m = f"sleep {sleep_marker(3316)}"
    sid = zap.spawn_sh(f"exec {m}")
    stall = {"ZAPCLI_STALL_S": "1"}
    try:
        wait_until(lambda: _record(zap, sid, "start"), 10)
        # the all-running poll summary still shows the stall
        wait_until(lambda: re.search(rf"^  {sid}: running \(stalled [0-9.]+s\)$",
                                     zap("poll", "--no-wait", sid, env=stall).out, re.M), 10, 0.3)
        assert re.search(rf"{sid}: running \(stalled [0-9.]+s\)", zap("list", "--long", env=stall).out)
        assert re.search(rf"{sid[-8:]}  running stalled [0-9.]+s", zap("list", env=stall).out)
        doc = zap.json("poll", "--no-wait", sid, env=stall)["subagents"][0]
        assert doc["status"] == "running" and doc["stalled_s"] >= 1
        # stall_s 0 disables it
        assert "stalled" not in zap("list", env={"ZAPCLI_STALL_S": "0"}).out
    finally:
        _kill_markers(m)


# --------------------------------------------------------------------------- queue


@pytest.mark.timeout(90)
def test_queue_caps_concurrency_and_drains_by_itself(zap):
    cap = {"ZAPCLI_MAX_CONCURRENT": "2"}
    docs: list[dict] = []

    def spawn() -> None:
        res = zap("spawn", "--cli", "sh", "--json", "--", "sleep 1", env=cap)
        assert res.returncode == 0, res.err
        docs.append(json.loads(res.stdout))

    threads = [threading.Thread(target=spawn) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(docs) == 5
    ids = [d["id"] for d in docs]
    assert "queued" in [d["status"] for d in docs]
    # no other command runs: finishing children start the queued ones
    wait_until(lambda: all(final_status(zap.trail(s)) for s in ids), 40, 0.2)
    events = []
    for sid in ids:
        recs = trail_records(zap.trail(sid))
        start = next(r for r in recs if r["type"] == "process")
        end = next(r for r in recs if r["type"] == "status")
        assert end["status"] == "completed"
        events += [(start["ts"], 1), (end["ts"], -1)]
    running = peak = 0
    for _ts, delta in sorted(events, key=lambda e: (e[0], e[1])):
        running += delta
        peak = max(peak, running)
    assert peak == 2, events


@pytest.mark.timeout(60)
def test_queue_starts_in_creation_order_and_kill_covers_queued(zap):
    """Every command runs with the cap (settings come from the caller's env:
    an observer with a higher cap would start the queued ones itself)."""
    cap = {"ZAPCLI_MAX_CONCURRENT": "1"}
    m = f"sleep {sleep_marker(3317)}"

    def spawn(task: str) -> str:
        res = zap("spawn", "--cli", "sh", "--", task, env=cap)
        assert res.returncode == 0, res.err
        return res.out.strip()

    def status(sid: str) -> str:
        return zap.json("poll", "--no-wait", sid, env=cap)["subagents"][0]["status"]

    first = spawn("sleep 1")
    queued = [spawn(f"echo {i}") for i in range(3)]
    blocker = spawn(f"exec {m}")  # runs after the others; then holds the only slot
    victim = spawn("echo never")
    try:
        wait_until(lambda: pgrep(m), 20)
        starts = [_record(zap, s, "process")["ts"] for s in [first, *queued, blocker]]  # type: ignore[index]
        assert starts == sorted(starts)
        assert status(victim) == "queued"
        res = zap("kill", "--all", env=cap)
        assert res.returncode == 0, res.err
        assert f"{victim}: cancelled (was queued)" in res.out and f"{blocker}: cancelled" in res.out
        wait_until(lambda: not pgrep(m), 10)
        assert status(victim) == "cancelled"
        time.sleep(1)  # a drain that ignored the cancel would start it now
        assert _record(zap, victim, "process") is None and _record(zap, victim, "start") is None
        assert zap("output", victim).out == ""
    finally:
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_a_kill_that_needs_sigkill_still_starts_the_next_queued(zap, tmp_path):
    """Tryout: with the runner's tree SIGKILLed nobody drained the queue, so the
    queued subagent waited for the next unrelated command."""
    cap = {"ZAPCLI_MAX_CONCURRENT": "1"}
    m = f"sleep {sleep_marker(3318)}"
    stubborn = zap("spawn", "--cli", "sh", "--", f"trap '' TERM; {m}; true", env=cap).out.strip()
    flag = tmp_path / "next-ran"
    nxt = zap("spawn", "--cli", "sh", "--", f"touch {flag}", env=cap).out.strip()
    try:
        wait_until(lambda: pgrep(m), 20)
        doc = zap.json("kill", "--grace", "0.3", stubborn, stubborn, env=cap)
        assert [e["id"] for e in doc["subagents"]] == [stubborn]  # named twice, killed once
        assert "SIGKILL" in doc["subagents"][0]["signals"]
        wait_until(flag.exists, 20)  # no other zapcli command runs meanwhile
        assert zap.wait_status(nxt) == "completed"
    finally:
        _kill_markers(m)

@pytest.mark.timeout(60)
def test_after_waits_for_its_dependency(zap):
    dep = zap.spawn_sh("sleep 1; echo dep")
    res = zap("spawn", "--cli", "sh", "--json", "--after", dep, "--", "echo after")
    assert res.returncode == 0, res.err
    doc = json.loads(res.stdout)
    assert doc["status"] == "queued"
    sid = doc["id"]
    assert zap.wait_status(sid) == "completed"
    dep_end = next(r for r in trail_records(zap.trail(dep)) if r["type"] == "status")
    start = next(r for r in trail_records(zap.trail(sid)) if r["type"] == "process")
    assert start["ts"] > dep_end["ts"]
    assert zap("output", sid).out == "after\n"


@pytest.mark.timeout(60)
def test_after_fails_when_the_dependency_fails(zap):
    dep = zap.spawn_sh("sleep 1; exit 1")
    sid = zap.spawn_sh("echo never", "--after", dep)
    assert zap.wait_status(sid) == "failed"
    doc = zap.json("poll", sid)["subagents"][0]
    assert doc["reason"] == f"dependency {dep} ended failed"
    types = [r["type"] for r in trail_records(zap.trail(sid))]
    assert "process" not in types and "start" not in types  # never started
    assert zap("output", sid).out == ""


@pytest.mark.timeout(60)
def test_after_unknown_id_refused(zap):
    for bad in ("sa_20260101_0badc0de", "../x"):
        res = zap("spawn", "--cli", "sh", "--after", bad, "--", "echo x")
        line = _one_error_line(res, 2)
        assert "--after" in line
        assert not (zap.home / "subagents").exists() or not os.listdir(zap.home / "subagents")


# --------------------------------------------------------------------------- user mistakes


def _nothing_created(zap) -> None:
    sub = zap.home / "subagents"
    assert not sub.exists() or os.listdir(sub) == [], os.listdir(sub)
    sessions = zap.home / "sessions"
    assert not sessions.exists() or not any(p.is_file() for p in sessions.rglob("*"))


@pytest.mark.timeout(60)
def test_user_mistakes(zap):
    cases = [
        (("spawn", "--cli", "sh", "--", ""), 2, "empty"),
        (("spawn", "--cli", "sh", "--", "  \n\t "), 2, "empty"),
        (("spawn", "--cli", "bogus", "--", "echo x"), 2, "unknown backend 'bogus'"),
        (("spawn", "--cli", "sh", "--timeout", "0", "--", "echo x"), 2, "--timeout"),
        (("replay", "nope"), 1, "does not exist"),
        (("output", "sa_20260101_0badc0de"), 1, "does not exist"),
        (("wait", "../etc"), 1, "does not exist"),
        (("poll", "x", "--wait-secs", "31"), 2, "--wait-secs"),
        (("poll", "x", "--wait-secs", "-3"), 2, "--wait-secs"),
        (("spawn", "--agent", "", "--", "echo x"), 2, "--agent is empty"),
        (("spawn", "--model", " ", "--", "echo x"), 2, "--model is empty"),
        (("agents", "model", "explorer"), 2, "give the MODEL 'explorer' should use"),
        (("send", "sa_20260101_0badc0de", "x" * 40000), 2, "the limit is 32,768"),
    ]
    for args, code, words in cases:
        res = zap(*args)
        line = _one_error_line(res, code)
        assert words in line, (args, line)
        _nothing_created(zap)
    res = zap("spawn", "--cli", "sh", "-", input=b"   \n")
    assert "empty" in _one_error_line(res, 2)
    res = zap("spawn", "--cli", "sh", "-", input=b"x" * 2_000_006)
    assert "more than 1,048,576 bytes" in _one_error_line(res, 2)
    res = zap("spawn", "--cli", "sh", "-", input=b"echo \xff\xfe")
    assert "UTF-8" in _one_error_line(res, 2)
    res = zap("poll", "nope")  # poll answers per id; an unknown one on stderr, as every command
    assert res.returncode == 1 and "nope does not exist" in _one_error_line(res, 1)
    _nothing_created(zap)


@pytest.mark.timeout(60)
def test_unwritable_state_dir(zap, tmp_path):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a directory")
    homes = [in_the_way, in_the_way / "state"]
    ro = tmp_path / "read-only"
    ro.mkdir()
    ro.chmod(0o500)
    if os.access(ro, os.W_OK):  # root ignores permission bits: use a filesystem that refuses
        ro = __import__("pathlib").Path(f"/sys/zapcli-e2e-{os.getpid()}")
    homes.append(ro / "state")
    try:
        for home in homes:
            res = zap("spawn", "--cli", "sh", "--", "echo x", env={"ZAPCLI_HOME": str(home)})
            line = _one_error_line(res, 1)
            assert "could not create subagent directory" in line, line
            assert not (home.exists() and home.is_dir())
        assert in_the_way.read_text() == "not a directory"
        assert not ro.exists() or os.listdir(ro) == []
    finally:
        if ro.is_relative_to(tmp_path):
            ro.chmod(0o700)


@pytest.mark.timeout(60)
def test_relative_zapcli_home_with_another_cwd(zap, tmp_path):
    """Tryout: ZAPCLI_HOME=rel/h with --cwd elsewhere made the child look for
    its trail under the other directory, and the subagent read `lost`."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    env = {"ZAPCLI_HOME": "rel/h", "ZAPCLI_CONFIG_HOME": "rel/cfg"}
    sid = zap("spawn", "--cli", "sh", "--cwd", str(other), "--", "pwd", env=env).out.strip()
    assert zap("wait", sid, "--timeout", "30", env=env).returncode == 0
    assert zap("output", sid, env=env).out.strip() == str(other)
    assert (zap.cwd / "rel" / "h" / "subagents" / f"{sid}.jsonl").exists()
    assert not (other / "rel").exists()


def test_parser_errors_are_one_line_and_a_json_document(zap):
    """Tryout: `--wait-secs abc --json` printed a box on stderr and nothing on stdout."""
    for args, words in [(("poll", "x", "--wait-secs", "abc"), "--wait-secs"),
                        (("poll",), "Missing argument 'IDS'"),
                        (("spawn", "--timeout", "abc", "--", "x"), "--timeout"),
                        (("nosuchcommand",), "No such command")]:
        res = zap(*args, "--json")
        line = _one_error_line(res, 2)
        assert words in line and "--help" in line and "╭" not in res.err
        doc = json.loads(res.out)
        assert doc["error"]["code"] == "usage" and doc["error"]["exit_code"] == 2
    res = zap("spawn", "--cli", "sh", "--", "echo", "hi", "there")
    assert "quote the whole task" in _one_error_line(res, 2)
    _nothing_created(zap)


def test_poll_shows_why_a_subagent_failed(zap):
    """Tryout: a failed command's stderr was invisible in poll."""
    sid = zap.spawn_sh("echo out; ls /nonexistent-zapcli-dir; exit 2")
    assert zap.wait_status(sid) == "failed"
    res = zap("poll", sid)
    assert "Stderr:" in res.out and "nonexistent-zapcli-dir" in res.out
    doc = zap.json("poll", sid)["subagents"][0]
    assert "nonexistent-zapcli-dir" in doc["stderr_tail"]
    ok = zap.spawn_sh("echo fine >&2")
    assert zap.wait_status(ok) == "completed"
    assert zap.json("poll", ok)["subagents"][0]["stderr_tail"] is None  # only for failures


def test_a_removed_output_file_is_named_not_called_truncated(zap):
    sid = zap.spawn_sh("echo hi")
    assert zap.wait_status(sid) == "completed"
    zap.trail(sid).with_suffix(".out").unlink()
    res = zap("poll", sid)
    assert "output file missing" in res.out and "TRUNCATED" not in res.out
    out = zap.json("poll", sid)["subagents"][0]["output"]
    assert out["missing"] is True and out["truncated"] is False


def test_a_shell_reported_signal_is_named(zap):
    sid = zap.spawn_sh("sh -c 'kill -9 $$'")  # the inner shell dies; the outer reports 137
    assert zap.wait_status(sid) == "failed"
    assert "exit 137 (128 + SIGKILL: killed by a signal)" in zap("poll", sid).out
    sid = zap.spawn_sh("kill -9 $$")  # the command itself dies of the signal
    assert zap.wait_status(sid) == "failed"
    assert "(took" in zap("poll", sid).out and ", killed by SIGKILL)" in zap("poll", sid).out
    assert "exit -9" not in zap("poll", sid).out


def test_odd_ids_and_homes_are_named_plainly(zap, tmp_path):
    sid = zap.spawn_sh("echo x")
    assert zap.wait_status(sid) == "completed"
    res = zap("poll", "--no-wait", f" {sid}")
    assert res.returncode == 1 and f"' {sid}' (spaces around the id) does not exist" in res.err
    zap.trail(sid).write_bytes(b"")
    res = zap("replay", sid)
    assert "its trail is empty" in _one_error_line(res, 1)
    a_file = tmp_path / "home-is-a-file"
    a_file.write_text("x")
    res = zap("list", env={"ZAPCLI_HOME": str(a_file)})
    assert "is a file, not a folder" in _one_error_line(res, 1)


@pytest.mark.timeout(90)
def test_a_spawn_killed_midway_leaves_no_ghost(zap):
    """Tryout: a harness's timeout SIGKILLed/SIGTERMed `spawn` and left subagents
    queued forever, outside their session's list and `kill --all`."""
    procs = []
    for i in range(30):  # at once: they contend for the session's queue lock, as in a harness
        procs.append(subprocess.Popen(_zap_cmd("spawn", "--cli", "sh", "--", f"echo ghost-{i}"),
                                      env=zap.env, cwd=zap.cwd, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL))
    start = time.monotonic()
    for i, proc in enumerate(procs):  # hit them at different moments of their work
        time.sleep(max(0.0, start + 0.1 + 0.03 * i - time.monotonic()))
        proc.send_signal(signal.SIGTERM if i % 2 else signal.SIGKILL)
    for proc in procs:
        proc.wait(timeout=30)
    every = zap.json("list", "--all")["subagents"]
    mine = zap.json("list")["subagents"]
    assert sorted(v["id"] for v in every) == sorted(v["id"] for v in mine)  # none outside
    for view in mine:  # each one that exists runs to its end (its session starts it)
        assert zap.wait_status(view["id"], timeout=30) == "completed", view
    # and a supervisor launched while spawn held SIGTERM still obeys it
    m = f"sleep {sleep_marker(3319)}"
    sid = zap.spawn_sh(f"exec {m}")
    try:
        wait_until(lambda: pgrep(m), 10)
        assert zap.json("kill", "--grace", "5", sid)["subagents"][0]["signals"] == "SIGTERM"
    finally:
        _kill_markers(m)


def test_poll_helps_a_model_act(zap, tmp_path):
    """Tryout (an LLM harness): no output while running, no hint when the
    session is another one, no way back from a shortened id."""
    m = f"sleep {sleep_marker(3320)}"
    sid = zap.spawn_sh(f"echo partial-1; {m}")
    done = zap.spawn_sh("echo done")
    try:
        out = zap.trail(sid).with_suffix(".out")
        wait_until(lambda: out.exists() and out.read_bytes() == b"partial-1\n", 20)
        assert zap.wait_status(done) == "completed"
        res = zap("poll", "--no-wait", sid, done)
        assert "Output so far:" in res.out and "partial-1" in res.out
        assert zap.json("poll", "--no-wait", sid)["subagents"][0]["output"]["head"] == "partial-1\n"
        other = zap("list", env={"ZAPCLI_SESSION": "somewhere-else"})
        assert "0 subagents" in other.out and "in other sessions" in other.out
        doc = zap.json("list", env={"ZAPCLI_SESSION": "somewhere-else"})
        assert doc["in_other_sessions"] >= 1
        short = zap("poll", "--no-wait", sid[-8:])  # the tail is an id (#12.13)
        assert short.returncode == 0 and sid in short.out
    finally:
        zap("kill", sid)


def test_ctrl_c_with_json_still_prints_a_document(zap):
    m = f"sleep {sleep_marker(3321)}"
    sid = zap.spawn_sh(f"exec {m}")
    try:
        proc = subprocess.Popen(_zap_cmd("wait", sid, "--json"), env=zap.env, cwd=zap.cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 130 and "interrupted" in err
        assert json.loads(out)["error"]["code"] == "interrupted"
        assert zap.status(sid) == "running"  # the subagent keeps running
    finally:
        zap("kill", sid)


@pytest.mark.timeout(60)
def test_a_queued_subagent_whose_folder_vanished_fails_and_frees_the_queue(zap, tmp_path):
    """Tryout: its launch raised in every drain, so it stayed queued forever,
    blocked the ones behind it, and made each later spawn exit 1."""
    cap = {"ZAPCLI_MAX_CONCURRENT": "1"}
    gone = tmp_path / "gone"
    gone.mkdir()
    first = zap("spawn", "--cli", "sh", "--", "sleep 1", env=cap).out.strip()
    doomed = zap("spawn", "--cli", "sh", "--cwd", str(gone), "--", "pwd", env=cap).out.strip()
    gone.rmdir()
    later = zap("spawn", "--cli", "sh", "--", "echo later", env=cap)
    assert later.returncode == 0, later.err
    assert zap.wait_status(first) == "completed"
    assert zap.wait_status(doomed) == "failed"
    reason = zap.json("poll", doomed)["subagents"][0]["reason"]
    assert reason == f"could not start: its working directory {gone} no longer exists"
    assert zap.wait_status(later.out.strip()) == "completed"


def test_closed_or_full_standard_streams(zap):
    """Tryout: `>&-` gave tracebacks, and `> /dev/full` blamed ZAPCLI_HOME while
    the subagent had started and its id was lost."""
    closed = subprocess.run(" ".join(_zap_cmd("spawn", "--cli", "sh", "--", "'echo closed'"))
                            + " >&- 2>/dev/null", shell=True, env=zap.env, cwd=zap.cwd, timeout=30)
    assert closed.returncode == 0
    assert subprocess.run(" ".join(_zap_cmd("list", "--json")) + " >&-", shell=True,
                          env=zap.env, cwd=zap.cwd, timeout=30).returncode == 0
    no_stdin = subprocess.run(" ".join(_zap_cmd("spawn", "--cli", "sh", "-")) + " <&-",
                              shell=True, env=zap.env, cwd=zap.cwd, capture_output=True, text=True,
                              timeout=30)
    assert no_stdin.returncode == 2 and "Traceback" not in no_stdin.stderr
    with open("/dev/full", "w") as full:
        res = subprocess.run(_zap_cmd("spawn", "--cli", "sh", "--", "echo full"), env=zap.env,
                             cwd=zap.cwd, stdout=full, stderr=subprocess.PIPE, text=True, timeout=30)
        assert res.returncode == 1 and "Traceback" not in res.stderr
        assert re.search(r"sa_\d{8}_[0-9a-f]{8} was started, but its id could not be printed "
                         r"\(could not write to standard output", res.stderr), res.stderr
        res = subprocess.run(_zap_cmd("list", "--json"), env=zap.env, cwd=zap.cwd, stdout=full,
                             stderr=subprocess.PIPE, text=True, timeout=30)
        assert res.returncode == 1 and "Traceback" not in res.stderr
        assert "could not write to standard output" in res.stderr and "ZAPCLI_HOME" not in res.stderr


@pytest.mark.timeout(60)
def test_kill_says_so_when_it_cannot_record_the_cancel(zap):
    """Tryout: on a read-only state folder `kill` printed `cancelled`, exit 0,
    while the trail said otherwise."""
    m = f"sleep {sleep_marker(3322)}"
    sid = zap.spawn_sh(f"exec {m}")
    folder = zap.home / "subagents"
    wait_until(lambda: pgrep(m), 10)
    mounted = subprocess.run(f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder}",
                             shell=True, capture_output=True).returncode == 0
    try:
        if not mounted:
            pytest.skip("needs mount (bind, read-only) permission")
        res = zap("kill", sid)
        assert res.returncode == 1 and "could not be recorded" in res.err
        assert f"{sid}: killed" in res.out
        wait_until(lambda: not pgrep(m), 10)
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)])
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_a_dead_runner_reads_lost_even_when_that_cannot_be_recorded(zap):
    """Tryout: with the state folder full, a dead runner read `running` forever."""
    m = f"sleep {sleep_marker(3323)}"
    sid = zap.spawn_sh(f"exec {m}")
    folder = zap.home / "subagents"
    wait_until(lambda: pgrep(m), 10)
    runner = supervisor_pid(zap, sid)
    mounted = subprocess.run(f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder}",
                             shell=True, capture_output=True).returncode == 0
    try:
        if not mounted:
            pytest.skip("needs mount (bind, read-only) permission")
        os.killpg(runner, signal.SIGKILL)
        wait_until(lambda: not pgrep(m), 10)
        view = zap.json("poll", "--no-wait", sid)["subagents"][0]
        assert view["status"] == "lost" and "not recorded" in view["reason"]
        assert zap("wait", sid, "--timeout", "10").returncode == 3
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)])
        _kill_markers(m)


def test_an_empty_session_hints_at_the_others_whatever_their_state(zap):
    """#12.14: the hint shows whenever this session is empty and others are not."""
    m = f"sleep {sleep_marker(3324)}"
    sid = zap.spawn_sh(f"exec {m}")
    runner = supervisor_pid(zap, sid)
    wait_until(lambda: pgrep(m), 10)
    other = {"ZAPCLI_SESSION": "another-one"}
    assert zap.json("list", env=other)["in_other_sessions"] == 1
    os.killpg(runner, signal.SIGKILL)
    wait_until(lambda: not pgrep(m), 10)
    assert zap("wait", sid, "--timeout", "10").returncode == 3  # found lost
    assert zap.json("list", env=other)["in_other_sessions"] == 1
    assert "1 subagent in other sessions" in zap("list", env=other).out


def test_gc_does_not_count_a_damaged_trail(zap):
    """Tryout: a trail emptied by hand counted towards max_kept, so gc deleted
    the newest real subagent in its place."""
    broken, real = zap.spawn_sh("echo a"), zap.spawn_sh("echo b")
    assert zap.wait_status(broken) == "completed" and zap.wait_status(real) == "completed"
    zap.trail(broken).write_bytes(b"")
    doc = zap.json("gc", env={"ZAPCLI_MAX_KEPT": "1"})
    assert doc["deleted"] == [] and zap.trail(real).exists() and zap.trail(broken).exists()


def test_a_runner_killed_before_it_starts_writes_no_start_after_the_cancel(zap):
    """Tryout: `spawn` then `kill` at once left a `start` record after `cancelled`."""
    for i in range(6):
        sid = zap.spawn_sh(f"sleep {sleep_marker(3326 + i)}")
        zap("kill", sid)
        time.sleep(0.3)
        types = [r["type"] for r in trail_records(zap.trail(sid))]
        end = next(n for n, r in enumerate(trail_records(zap.trail(sid)))
                   if r["type"] == "status")
        assert "start" not in types[end:], types
        _kill_markers(f"sleep {sleep_marker(3326 + i)}")
