"""One damaged trail affects only its own answer (#12.6): an unparseable
`ts` (and other damaged fields) in a spawn record never breaks list, gc,
poll, kill, wait, replay or output for anyone."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.conftest import wait_until


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


def _damage_spawn(zap, sid: str, how: str) -> None:
    path = zap.trail(sid)
    if how == "first line":
        path.write_bytes(path.read_bytes().split(b"\n", 1)[1])
    elif how == "empty":
        path.write_bytes(b"")
        os.utime(path, (time.time() - 10, time.time() - 10))  # not a spawn writing it right now
    else:
        path.write_bytes(bytes(range(256)) * 12)


@pytest.mark.timeout(90)
def test_a_trail_without_its_spawn_record_is_listed_removed_and_killed(zap):
    """Tryout c5: such a trail was invisible (list), unremovable (rm: "does
    not exist") and its live runner unkillable."""
    from tests.conftest import pgrep, sleep_marker, wait_until

    gone = [zap.spawn_sh(f"echo {n}") for n in range(3)]
    good = zap.spawn_sh("echo good")
    m = sleep_marker(3601)
    live = zap.spawn_sh(f"sleep {m}")
    assert zap("wait", *gone, good).returncode == 0
    wait_until(lambda: pgrep(f"sleep {m}") and zap.status(live) == "running", 20)
    for sid, how in zip([*gone, live], ["first line", "empty", "garbage", "first line"], strict=True):
        _damage_spawn(zap, sid, how)
    doc = zap.json("list", "--all")
    assert [v["id"] for v in doc["subagents"]] == [good]
    shown = {d["id"]: d["message"] for d in doc["damaged"]}
    assert set(shown) == {*gone, live} and all("damaged" in m for m in shown.values()), shown
    assert "is empty" in shown[gone[1]] and "no readable record" in shown[gone[2]]
    assert f"{live[-8:]}  damaged" in zap("list").out
    res = zap("rm", *gone, live)
    assert res.returncode == 1 and "does not exist" not in res.out, res.out
    assert "still runs; zapcli kill" in res.out
    assert not [p for sid in gone for p in zap.home.glob(f"subagents/{sid}.*")]
    assert not [p for p in zap.home.glob("sessions/*/*/*") if p.name.endswith(tuple(gone))]
    killed = zap.json("kill", live)["subagents"][0]
    assert killed["outcome"] == "killed" and "damaged" in killed["error"], killed
    wait_until(lambda: not pgrep(f"sleep {m}"), 10)
    assert zap("rm", live).returncode == 0 and not zap.trail(live).exists()
    assert zap.json("list", "--all")["damaged"] == [] and zap("poll", good).returncode == 0
    fresh = zap.spawn_sh("true")
    assert zap("wait", fresh).returncode == 0
    zap.trail(fresh).write_bytes(b"")  # as a spawn between creating and writing it leaves it
    assert zap.json("list", "--all")["damaged"] == []
    assert "moments ago" in zap("rm", fresh).out and zap.trail(fresh).exists()


@pytest.mark.timeout(120)
def test_a_giant_trail_is_read_as_its_head_and_tail(zap):
    """tryout: a 3 GB NUL-filled tail on one trail (a crash can leave one) made
    every command read it whole: `list` ran for over a minute at 6.3 GB. Each
    command now reads its head and tail only, under a 1 GB address-space cap."""
    import resource
    import subprocess
    import sys

    big = zap.spawn_sh("echo big")
    good = zap.spawn_sh("echo good")
    assert zap("wait", "--timeout", "60", big, good).returncode == 0
    import psutil

    for sid in (big, good):  # their runners' own retention pass is over (it would trim it first)
        pid = next(json.loads(line)["pid"] for line in zap.trail(sid).read_text().splitlines()
                   if '"type":"process"' in line)
        wait_until(lambda pid=pid: not psutil.pid_exists(pid)
                   or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, 30)
    with open(zap.trail(big), "r+b") as f:
        f.truncate(3 << 30)  # sparse: no disk used

    def capped(*args: str) -> subprocess.CompletedProcess:
        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        return subprocess.run([sys.executable, "-m", "zapcli", *args], env=zap.env, cwd=zap.cwd,
                              capture_output=True, text=True, timeout=60, preexec_fn=limit)

    listed = capped("list", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {v["id"] for v in json.loads(listed.stdout)["subagents"]} >= {big, good}
    poll = capped("poll", "--no-wait", "--json", big, good)
    assert [v["status"] for v in json.loads(poll.stdout)["subagents"]] == ["completed", "completed"]
    replay = capped("replay", big)
    assert replay.returncode == 0 and "bytes in the middle not read" in replay.stdout
    gc = capped("gc", "--json")
    assert gc.returncode == 0, gc.stderr
    assert zap.trail(big).stat().st_size < 5 << 20  # trimmed from its head and tail
    assert zap.json("poll", "--no-wait", big)["subagents"][0]["status"] == "completed"
