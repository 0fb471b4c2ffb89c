"""CASES.md C01-C12 and C15, end to end: the real CLI, real processes, real
signals, real files. (C13/C14 are definition cases, tested elsewhere.)

Sleep lengths are unique per run (`sleep_marker`), so `pgrep` only ever sees
this test's processes; the `zap` fixture kills whatever a test leaves behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

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
    wait_until,
)
from zapcli.supervisor.launch import process_create_time

TERMINAL = {"completed", "failed", "timeout", "cancelled", "lost", "interrupted"}


_record, _supervisor_pid = record_of, supervisor_pid


def _none_alive(*markers: str) -> bool:
    return not any(pgrep(m) for m in markers)


def _kill_markers(*markers: str) -> None:
    for m in markers:
        for pid in pgrep(m):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# --------------------------------------------------------------------------- processes


@pytest.mark.timeout(60)
def test_c01_kill_ends_the_whole_tree(zap):
    m1, m2, m3 = (f"sleep {sleep_marker(n)}" for n in (3101, 3102, 3103))
    sid = zap.spawn_sh(f'{m1} & sh -c "{m2} & wait" & setsid {m3} & wait')
    try:
        sup_sid = os.getsid(_supervisor_pid(zap, sid))
        # all three run, and the setsid'd one really left the subagent's session
        wait_until(lambda: pgrep(m1) and pgrep(m2)
                   and any(os.getsid(p) != sup_sid for p in pgrep(m3)), 10)
        res = zap("kill", sid)
        assert res.returncode == 0, res.err
        assert "cancelled" in res.out
        wait_until(lambda: _none_alive(m1, m2, m3), 4)
        assert zap.status(sid) == "cancelled"
    finally:
        _kill_markers(m1, m2, m3)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", ["kill", "runner SIGKILLed"])
def test_c01_a_double_forked_setsid_descendant_is_ended_too(zap, how):
    """tryout: `(setsid sleep N &)` leaves the tree at once (its subshell exits,
    it is re-parented to init in a session of its own): no tree or group kill
    reaches it. It carries the runner's marker in its environment."""
    m1, m2 = (f"sleep {sleep_marker(n)}" for n in (3111, 3112))
    sid = zap.spawn_sh(f"({'setsid'} {m1} &); ({m2} &); sleep 30")
    try:
        wait_until(lambda: pgrep(m1) and pgrep(m2), 10)
        if how == "kill":
            assert zap("kill", sid).returncode == 0
        else:
            runner = _supervisor_pid(zap, sid)
            os.killpg(runner, signal.SIGKILL)  # the runner and its group: m1 is in neither
            wait_until(lambda: zap.status(sid) == "lost", 20, 0.3)
        wait_until(lambda: _none_alive(m1, m2), 10)
    finally:
        _kill_markers(m1, m2)


def test_what_the_agents_bash_tool_leaves_detached_is_ended_with_it(zap, model):
    """The built-in agent's bash tool: its (scrubbed) environment keeps the marker."""
    m = f"sleep {sleep_marker(3131)}"
    model([{"match": "detach", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"(setsid {m} &); echo started"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
        {"text": "done"}]}])
    res = zap("spawn", "--approval", "full", "--", "detach please")
    sid = res.out.strip()
    try:
        wait_until(lambda: pgrep(m), 30)
        assert zap("kill", sid).returncode == 0
        wait_until(lambda: _none_alive(m), 10)
    finally:
        _kill_markers(m)


def test_a_subagent_spawned_inside_another_is_not_its_leftover(zap):
    """The marker is dropped at launch: a subagent started from another's work
    outlives its parent's kill (it is detached, and it is not the parent's)."""
    m = f"sleep {sleep_marker(3121)}"
    inner = f"{sys.executable} -m zapcli spawn --cli sh -- '{m}'"
    outer = zap.spawn_sh(f"{inner} > inner.id; touch spawned; sleep 30")
    try:
        # the inner spawn has returned: its runner is no longer under the outer's tree
        wait_until(lambda: (zap.cwd / "spawned").exists() and pgrep(m), 30)
        assert zap("kill", outer).returncode == 0
        time.sleep(1.5)
        assert pgrep(m), "the inner subagent was ended with its parent"
        child = (zap.cwd / "inner.id").read_text().strip()
        assert zap.status(child) == "running"
        zap("kill", child)
    finally:
        _kill_markers(m)


def _c02_script(tmp_path: Path, m_ignore: str, m_graceful: str, flag: Path) -> Path:
    script = tmp_path / "c.sh"
    script.write_text(
        f"sh -c 'trap \"\" TERM; exec {m_ignore}' &\n"
        f"sh -c 'trap \"touch {flag}; exit 0\" TERM; {m_graceful} & wait' &\n"
        "wait\n")
    return script


@pytest.mark.timeout(60)
def test_c02_sigterm_first_then_sigkill_after_grace_on_kill(zap, tmp_path):
    m_ignore, m_graceful = f"sleep {sleep_marker(3201)}", f"sleep {sleep_marker(3202)}"
    flag = tmp_path / "graceful"
    sid = zap.spawn_sh(f"sh {_c02_script(tmp_path, m_ignore, m_graceful, flag)}")
    try:
        wait_until(lambda: pgrep(m_ignore) and pgrep(m_graceful), 10)
        res = zap("kill", "--grace", "2", sid)
        assert res.returncode == 0, res.err
        wait_until(lambda: _none_alive(m_ignore, m_graceful), 4)
        assert flag.exists(), "the TERM handler never got its chance"
        assert zap.status(sid) == "cancelled"
    finally:
        _kill_markers(m_ignore, m_graceful)


@pytest.mark.timeout(60)
def test_c02_kill_grace_is_the_one_given_to_kill(zap):
    """Tryout: with `kill_grace_s: 1` at spawn, `kill --grace 6` still let the
    runner SIGKILL the command after 1 s (and reported only SIGTERM)."""
    m = f"sleep {sleep_marker(3205)}"
    res = zap("spawn", "--cli", "sh", "--", f"trap '' TERM; {m}; true",
              env={"ZAPCLI_KILL_GRACE_S": "1"})
    sid = res.out.strip()
    try:
        wait_until(lambda: pgrep(m), 10)
        killer = threading.Thread(target=lambda: zap("kill", "--grace", "6", sid))
        killer.start()
        time.sleep(3)  # past the spawn-time grace, well inside the one asked for
        assert pgrep(m), "the command was killed before the --grace it was given"
        killer.join(30)
        assert not pgrep(m)
        assert zap.status(sid) == "cancelled"
    finally:
        _kill_markers(m)

@pytest.mark.timeout(60)
def test_c02_sigterm_first_then_sigkill_after_grace_on_timeout(zap, tmp_path):
    m_ignore, m_graceful = f"sleep {sleep_marker(3203)}", f"sleep {sleep_marker(3204)}"
    flag = tmp_path / "graceful"
    sid = zap.spawn_sh(f"sh {_c02_script(tmp_path, m_ignore, m_graceful, flag)}", timeout=2)
    try:
        wait_until(lambda: pgrep(m_ignore) and pgrep(m_graceful), 10)
        # nobody observes: the child itself enforces the deadline
        wait_until(lambda: _none_alive(m_ignore, m_graceful), 15)
        assert flag.exists(), "the TERM handler never got its chance"
        wait_until(lambda: final_status(zap.trail(sid)), 10)
        assert final_status(zap.trail(sid)) == "timeout"
    finally:
        _kill_markers(m_ignore, m_graceful)


@pytest.mark.timeout(60)
def test_c03_deadline_holds_with_nobody_watching(zap):
    m = f"sleep {sleep_marker(3401)}"
    sid = zap.spawn_sh(f"exec {m}", timeout=3)
    try:
        wait_until(lambda: pgrep(m), 10)
        # no zapcli command runs from here on: only the child can end it
        wait_until(lambda: not pgrep(m), 10)
        wait_until(lambda: final_status(zap.trail(sid)), 10)
        assert final_status(zap.trail(sid)) == "timeout"
    finally:
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_c03_deadline_holds_for_a_stopped_process(zap):
    m = f"sleep {sleep_marker(3402)}"
    sid = zap.spawn_sh(f"exec {m}", timeout=3)
    try:
        pid = wait_until(lambda: pgrep(m), 10)[0]  # type: ignore[index]
        os.kill(pid, signal.SIGSTOP)
        wait_until(lambda: psutil.Process(pid).status() == psutil.STATUS_STOPPED, 5)
        # nobody polls: the deadline passes while it is stopped
        wait_until(lambda: final_status(zap.trail(sid)), 15)
        res = zap.json("poll", sid)
        assert res["subagents"][0]["status"] == "timeout", res
        wait_until(lambda: not psutil.pid_exists(pid)
                   or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, 5)
    finally:
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_c03_poll_returns_at_the_deadline(zap):
    m = f"sleep {sleep_marker(3403)}"
    sid = zap.spawn_sh(f"exec {m}", timeout=3)
    try:
        t0 = time.monotonic()
        res = zap.json("poll", sid, "--wait-secs", "30")
        took = time.monotonic() - t0
        assert res["subagents"][0]["status"] == "timeout", res
        assert took < 20, f"poll waited {took:.1f}s for a 3 s deadline"  # 35 s if it missed it
        assert not pgrep(m)
    finally:
        _kill_markers(m)


@pytest.mark.timeout(60)
def test_c04_child_never_reads_the_callers_stdin(zap, tmp_path):
    inp = tmp_path / "in"
    script = f"""
zapcli() {{ "{sys.executable}" -m zapcli "$@"; }}
sp() {{ zapcli spawn --cli sh --timeout 60 -- "$1"; }}
{{ id=$(sp "cat > {inp}; echo read-done"); IFS= read -r line; echo "parent got: $line"; echo "id: $id"; }} < <(printf 'first\\nsecond\\n')
"""
    res = subprocess.run(["bash", "-c", script], capture_output=True, timeout=30,
                         env=zap.env, cwd=zap.cwd)
    out = res.stdout.decode()
    assert res.returncode == 0, res.stderr.decode()
    assert "parent got: first" in out
    sid = out.split("id: ")[1].strip()
    assert zap.wait_status(sid) == "completed"
    assert zap("output", sid).out == "read-done\n"
    assert inp.read_bytes() == b""


@pytest.mark.timeout(90)
def test_c05_chatty_child_never_blocks(zap, tmp_path):
    prog = ("import sys\n"
            "for i in range(200000):\n"
            "    sys.stdout.write('out %06d %s\\n' % (i, 'x'*40))\n"
            "    if i % 10 == 0: sys.stderr.write('err %06d\\n' % i)\n")
    (tmp_path / "chatty.py").write_text(prog)
    sid = zap.spawn_sh(f"python3 {tmp_path / 'chatty.py'}")
    small = zap.spawn_sh("python3 -c \"print('y' * 5000)\"")

    sup = psutil.Process(_supervisor_pid(zap, sid))
    peak = [0]

    def sample():
        while True:
            try:
                peak[0] = max(peak[0], sup.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.05)

    threading.Thread(target=sample, daemon=True).start()
    res = zap("wait", "--timeout", "60", sid, small)
    assert res.returncode == 0, (res.out, res.err)
    assert peak[0] < 100 * 2**20, f"supervisor RSS {peak[0]} while pumping 11 MB"

    written = 200000 * len("out 000000 " + "x" * 40 + "\n")
    out = zap("poll", sid).out
    lines = out.splitlines()
    trunc = f"OUTPUT TRUNCATED ({written} bytes written; the first and last 512 KB kept)"
    assert any(line.strip() == trunc for line in lines), out[:3000]
    # the truncation line comes first in the output block
    assert out.index(trunc) < out.index("out 000000")
    assert "bytes folded" in out
    doc = zap.json("poll", sid)["subagents"][0]["output"]
    kept = (tmp_path / "state" / "subagents" / f"{sid}.out").read_bytes()
    assert len(kept) <= 1024 * 1024 and kept.endswith(b"out 199999 " + b"x" * 40 + b"\n")
    assert doc["head"].encode() == kept[:2048]
    assert doc["tail"].encode() == kept[-2048:]
    assert doc["truncated"] and doc["written_bytes"] == written and doc["ends_kept"]
    err = zap("output", "--stderr", sid).out
    assert err.startswith("err 000000\n") and err.endswith("err 199990\n")

    # poll never loads the captured file: its peak memory is that of a small poll
    def maxrss(ident: str) -> int:
        with open(os.devnull, "wb") as devnull:
            p = subprocess.Popen([sys.executable, "-m", "zapcli", "poll", ident], stdout=devnull,
                                 stderr=devnull, stdin=subprocess.DEVNULL, env=zap.env, cwd=zap.cwd)
            _, _, usage = os.wait4(p.pid, 0)
            p.returncode = 0
        return usage.ru_maxrss * 1024

    base = min(maxrss(small) for _ in range(2))
    big = min(maxrss(sid) for _ in range(2))
    assert big - base < 1.5 * 2**20, f"poll of a 1 MB output used {big - base} bytes more"


@pytest.mark.timeout(60)
def test_c06_a_zombie_is_dead(zap):
    """The supervisor is made a real zombie: a subreaper adopts it when `spawn`
    exits and never reaps it; the first check must read `lost`."""
    m = f"sleep {sleep_marker(3601)}"
    reaper_src = (
        "import ctypes, subprocess, sys, time\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "assert libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)\n"
        "sys.stdout.write(p.stdout.decode()); sys.stdout.flush()\n"
        "time.sleep(120)  # adopts the orphans and never reaps them\n")
    reaper = subprocess.Popen(
        [sys.executable, "-c", reaper_src, sys.executable, "-m", "zapcli", "spawn", "--cli", "sh",
         "--timeout", "60", "--", f"exec {m}"],
        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=zap.env, cwd=zap.cwd)
    try:
        sid = reaper.stdout.readline().decode().strip()  # type: ignore[union-attr]
        assert sid.startswith("sa_")
        wait_until(lambda: pgrep(m), 10)
        sup = _supervisor_pid(zap, sid)
        assert psutil.Process(sup).ppid() == reaper.pid
        os.kill(sup, signal.SIGKILL)
        wait_until(lambda: psutil.Process(sup).status() == psutil.STATUS_ZOMBIE, 5)
        os.kill(sup, 0)  # a zombie passes kill -0: the trap this case is about
        assert zap.status(sid) == "lost"
        assert psutil.Process(sup).status() == psutil.STATUS_ZOMBIE  # still a zombie when checked
        assert final_status(zap.trail(sid)) == "lost"  # sticky
    finally:
        _kill_markers(m)
        reaper.kill()
        reaper.wait()


# --------------------------------------------------------------------------- bytes and text


@pytest.mark.timeout(60)
def test_c07_folding_never_splits_a_character(zap, tmp_path):
    a = zap.spawn_sh("python3 -c \"import sys; sys.stdout.write('x' + '€'*3000)\"")
    b = zap.spawn_sh("python3 -c \"import sys; sys.stdout.write('ab' + '😀'*300000)\"")
    res = zap("wait", "--timeout", "30", a, b)
    assert res.returncode == 0, res.err
    # the cuts really land mid-character
    assert (1 + 3 * 3000) > 4096 and 2048 % 3 != 1
    assert (2 + 4 * 300000) > 2**20 and (2**20 - 2) % 4 != 0
    res = zap("poll", a, b)
    assert res.returncode == 0
    text = res.stdout.decode("utf-8")  # strict: raises on a split character
    assert "\ufffd" not in text
    assert "OUTPUT TRUNCATED" in text and "bytes folded" in text
    docs = {d["id"]: d for d in zap.json("poll", a, b)["subagents"]}
    for d in docs.values():
        for part in ("head", "tail"):
            assert "\ufffd" not in d["output"][part]
    assert set(docs[a]["output"]["tail"]) == {"€"}
    assert set(docs[b]["output"]["tail"]) == {"😀"}


@pytest.mark.timeout(60)
def test_c08_binary_output_nuls_and_escape_sequences(zap):
    sid = zap.spawn_sh("printf 'before\\377\\376\\000\\200after\\n'; head -c 4096 /dev/urandom; "
                       "printf '\\033]0;title\\007\\ntail-marker\\n'")
    assert zap.wait_status(sid) == "completed"
    poll = zap("poll", sid)
    output = zap("output", sid)
    replay = zap("replay", sid)
    for res in (poll, output, replay):
        assert res.returncode == 0, res.err
        assert b"\x1b" not in res.stdout and b"\x07" not in res.stdout
        res.stdout.decode("utf-8")  # valid UTF-8
        assert "Traceback" not in res.err
    for res in (poll, output):
        assert "before" in res.out and "after" in res.out and "tail-marker" in res.out
        assert "\\x1b]0;title\\x07" in res.out  # shown escaped, not executed
    assert "\\x00" in output.out  # the NUL is visible, escaped
    raw = zap.trail(sid).read_bytes()
    raw.decode("utf-8")
    assert raw.endswith(b"\n")
    for line in raw.splitlines():
        json.loads(line)


@pytest.mark.timeout(90)
def test_c09_long_tasks(zap, tmp_path):
    token = f"c09tok{os.getpid()}x{time.time_ns() % 10**9}"
    m = f"sleep {sleep_marker(3)}"
    pad = (f'say "hi" {token} ' * 10000)[:130000]
    task = f": '{pad}'; : \"it's\"; echo c09-done; {m}"
    assert 130000 < len(task.encode()) < 131072  # 130 KB, still a legal argv string
    a = zap.spawn_sh(task)
    mb_task = f": '{'€' * 60000}{token}'; echo c09-mb-done; {m}"
    assert len(mb_task.encode()) > 180000
    res = zap("spawn", "--cli", "sh", "-", input=mb_task.encode())
    assert res.returncode == 0, res.err
    b = res.out.strip()
    # nothing travels in argv: no process carries the task
    wait_until(lambda: len(pgrep(m)) == 2, 15)
    for proc in psutil.process_iter(["cmdline"]):
        try:
            assert token not in " ".join(proc.info["cmdline"] or []), proc.info["cmdline"][:3]
        except psutil.Error:
            continue
    assert zap("wait", "--timeout", "30", a, b).returncode == 0
    assert zap("output", a).out == "c09-done\n"
    assert zap("output", b).out == "c09-mb-done\n"
    assert _record(zap, a, "spawn")["task"] == task  # type: ignore[index]
    assert _record(zap, b, "spawn")["task"] == mb_task  # type: ignore[index]

    # over the limit: refused before anything is created, no ghost in list
    before = sorted(os.listdir(zap.home / "subagents"))
    big = ("y" * (1024 * 1024 + 1)).encode()
    res = zap("spawn", "--cli", "sh", "-", input=big)
    assert res.returncode in (1, 2) and "limit" in res.err and "Traceback" not in res.err
    assert sorted(os.listdir(zap.home / "subagents")) == before
    assert zap.json("list")["count"] == 2


@pytest.mark.timeout(150)
def test_c10_sixty_spawns_at_once(zap):
    ids: dict[int, str] = {}
    errors: list[str] = []
    stop = threading.Event()
    list_failures: list[str] = []

    def spawn(i: int) -> None:
        res = zap("spawn", "--cli", "sh", "--", f"echo out-{i}; sleep 1", timeout=120)
        if res.returncode != 0:
            errors.append(res.err)
        else:
            ids[i] = res.out.strip()

    def lister() -> None:
        while not stop.is_set():
            res = zap("list", "--json", timeout=60)
            try:
                json.loads(res.stdout)
                ok = res.returncode == 0
            except ValueError:
                ok = False
            if not ok or "Traceback" in res.err:
                list_failures.append(res.err or res.out)

    watcher = threading.Thread(target=lister)
    watcher.start()
    threads = [threading.Thread(target=spawn, args=(i,)) for i in range(1, 61)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert len(set(ids.values())) == 60
    res = zap("wait", "--timeout", "120", *ids.values(), timeout=150)
    stop.set()
    watcher.join()
    assert res.returncode == 0, res.out[-2000:]
    assert not list_failures, list_failures[:3]
    doc = zap.json("list", "--limit", "0")
    assert doc["count"] == 60 and len(doc["subagents"]) == 60
    for i, sid in ids.items():
        assert zap.trail(sid).with_suffix(".out").read_bytes() == f"out-{i}\n".encode()


# --------------------------------------------------------------------------- state and trails


@pytest.mark.timeout(60)
def test_c11_crash_mid_write(zap):
    sid = zap.spawn_sh("while :; do echo chatter; done")
    sup = _supervisor_pid(zap, sid)
    out = zap.trail(sid).with_suffix(".out")
    wait_until(lambda: _record(zap, sid, "start") and out.exists() and out.stat().st_size > 1000, 10)
    os.killpg(sup, signal.SIGKILL)
    wait_until(lambda: not psutil.pid_exists(sup)
               or psutil.Process(sup).status() == psutil.STATUS_ZOMBIE, 5)
    path = zap.trail(sid)
    complete = trail_records(path)
    assert final_status(path) is None  # the crash left no result behind
    torn = b'{"v":1,"seq":99,"ts":"2026-01-01T00:00:00.000000Z","type":"text","delta":"hal'
    with open(path, "ab") as f:
        f.write(torn + b"\x00" * 16)

    res = zap("replay", sid)
    assert res.returncode == 0, res.err
    assert "1 incomplete record" in res.err
    doc = zap.json("replay", sid)
    assert doc["records"] == complete
    assert doc["torn_tail_bytes"] > 0

    assert zap.status(sid) == "lost"
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    fragment = [i for i, line in enumerate(lines) if line.startswith(torn)]
    assert len(fragment) == 1, "the torn fragment was glued to a later record"
    for i, line in enumerate(lines[:-1]):
        if i != fragment[0]:
            json.loads(line)
    last = json.loads(lines[-2])
    assert last["type"] == "status" and last["status"] == "lost"
    res = zap("replay", sid)
    assert res.returncode == 0
    assert "corrupt line" in res.out and "status lost" in res.out


@pytest.mark.timeout(90)
def test_c12_trimming_at_a_record_boundary(zap):
    m = f"sleep {sleep_marker(3121)}"
    sid = zap.spawn_sh(f"exec {m}")
    path = zap.trail(sid)
    wait_until(lambda: _record(zap, sid, "start"), 10)
    seq = max(r["seq"] for r in trail_records(path))
    report_text = "final report: €😀 done"
    with open(path, "ab") as f:
        seq += 1
        f.write(json.dumps({"v": 1, "seq": seq, "ts": "2026-01-01T00:00:00.000000Z",
                            "type": "report", "text": report_text},
                           ensure_ascii=False).encode() + b"\n")
        i = 0
        while f.tell() < 6 * 2**20:
            seq += 1
            i += 1
            delta = f"#{i} " + "€😀ä" * (1000 + i % 997)
            f.write(json.dumps({"v": 1, "seq": seq, "ts": "2026-01-01T00:00:00.000000Z",
                                "type": "text", "delta": delta}, ensure_ascii=False).encode() + b"\n")
    res = zap("kill", "--grace", "1", sid)
    assert res.returncode == 0, res.err
    assert not pgrep(m)
    original = trail_records(path)
    biggest = max(len(line) + 1 for line in path.read_bytes().split(b"\n"))

    res = zap("gc")
    assert res.returncode == 0, res.err
    data = path.read_bytes()
    assert len(data) <= 2**20 + biggest
    assert data.endswith(b"\n")
    recs = [json.loads(line) for line in data.split(b"\n")[:-1]]  # every line is a whole record
    assert recs[0]["type"] == "spawn" and recs[0] == original[0]
    assert [r for r in recs if r["type"] == "process"] == [r for r in original if r["type"] == "process"]
    trimmed = [r for r in recs if r["type"] == "trimmed"]
    assert len(trimmed) == 1 and trimmed[0]["dropped_bytes"] > 4 * 2**20
    reports = [r for r in recs if r["type"] == "report"]
    assert [r["text"] for r in reports] == [report_text]
    assert [r["status"] for r in recs if r["type"] == "status"][:1] == ["cancelled"]
    # the rest is a contiguous run of the original, ending at the original end
    texts = [r for r in recs if r["type"] == "text"]
    assert texts, "nothing of the body was kept"
    seqs = [r["seq"] for r in texts]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    orig_texts = [r for r in original if r["type"] == "text"]
    assert texts == orig_texts[-len(texts):]
    assert zap.status(sid) == "cancelled"
    assert zap("replay", sid).returncode == 0


# --------------------------------------------------------------------------- ids are not paths


BAD_IDS = ["../../x", "", ".", "..", "SA_20260101_DEADBEEF", "sa_20260101_deadbeef\n"]


@pytest.mark.timeout(90)
def test_c15_ids_are_not_paths(zap, tmp_path):
    """A trail and output planted outside the state folder (reachable by
    traversal or as an absolute path) point at a live decoy with its true
    identity and a passed deadline: if zapcli ever read them it would signal
    the decoy or print the secret."""
    flag = tmp_path / "signalled"
    decoy = start_decoy(flag, zap.env)
    try:
        ctime = process_create_time(decoy.pid)  # its identity as zapcli records one
        valid = zap.spawn_sh("echo valid-output")
        assert zap.wait_status(valid) == "completed"
        spawn_rec = _record(zap, valid, "spawn")
        planted = dict(spawn_rec, task="planted")  # type: ignore[arg-type]
        proc_rec = {"v": 1, "seq": 1, "ts": spawn_rec["ts"], "type": "process",  # type: ignore[index]
                    "pid": decoy.pid, "create_time": ctime, "mono": 0.0, "deadline_mono": 0.0}
        body = (json.dumps(planted) + "\n" + json.dumps(proc_rec) + "\n").encode()
        outside = tmp_path / "x"  # <state>/subagents/../../x == tmp_path/x
        outside.with_suffix(".jsonl").write_bytes(body)
        outside.with_suffix(".out").write_bytes(b"SECRET-OUTSIDE\n")
        (zap.home / "x.jsonl").write_bytes(body)
        (zap.home / "x.out").write_bytes(b"SECRET-OUTSIDE\n")
        # a symlink planted in place of a trail (and of its output)
        link = "sa_20260101_deadbeef"
        (zap.home / "subagents" / f"{link}.jsonl").symlink_to(outside.with_suffix(".jsonl"))
        (zap.home / "subagents" / f"{link}.out").symlink_to(outside.with_suffix(".out"))
        bad = BAD_IDS + [str(outside), link]

        res = zap("poll", "--no-wait", valid, *bad)
        assert res.returncode == 1 and "does not exist" not in res.out, res.out  # once, on stderr
        assert f"{valid}: completed" in res.out and "valid-output" in res.out
        assert res.err.count("does not exist") == len(bad)
        doc = zap.json("poll", "--no-wait", valid, *bad)["subagents"]
        assert doc[0]["status"] == "completed"
        assert all("does not exist" in d["error"]["message"] for d in doc[1:])

        res = zap("kill", *bad, valid)
        assert res.returncode == 1 and "does not exist" not in res.out, res.out
        assert "already completed" in res.out
        assert res.err.count("does not exist") == len(bad)

        for cmd in ("replay", "output"):
            for ident in bad:
                res = zap(cmd, ident)
                assert res.returncode == 1, (cmd, ident, res.out, res.err)
                assert "does not exist" in res.err or "invalid id" in res.err, (cmd, ident, res.err)
                assert "SECRET-OUTSIDE" not in res.out and "planted" not in res.out
                assert "Traceback" not in res.err
        res = zap("wait", "--timeout", "1", link)
        assert res.returncode == 1 and "does not exist" in res.err

        time.sleep(0.3)
        assert decoy.poll() is None, "the decoy was killed"
        assert not flag.exists(), f"the decoy got signal {flag.read_text()}"
        # nothing was appended to the planted trails either
        assert outside.with_suffix(".jsonl").read_bytes() == body
        assert (zap.home / "x.jsonl").read_bytes() == body
    finally:
        decoy.kill()
        decoy.wait()


@pytest.mark.timeout(60)
def test_work_of_a_killed_supervisor_is_ended_when_it_is_found_lost(zap):
    m = f"sleep {sleep_marker(3501)}"
    sid = zap.spawn_sh(f"{m}; echo never")
    try:
        wait_until(lambda: pgrep(m), 10)
        supervisor = trail_records(zap.trail(sid))[1]["pid"]
        os.kill(supervisor, signal.SIGKILL)
        wait_until(lambda: zap.status(sid) == "lost", 10)
        wait_until(lambda: not pgrep(m), 10)  # the orphaned sleep did not run on
    finally:
        _kill_markers(m)
