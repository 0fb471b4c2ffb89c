"""Crash loss of the batched trail writer (docs/explanation/rules.md#the-trail, docs/explanation/rules.md#measured): SIGKILL at random times.

Usage: .venv/bin/python tests/bench/bench_crash.py [--trials 50] [--seed N]

Each trial starts `_crash_writer.py` (the compiled copy of zapcli, a TrailWriter
fed a text delta every ~1 ms and a tool_call / tool_result pair every ~20 ms),
waits until it produces, sleeps a random 0.3-2.0 s, and SIGKILLs it. The writer
publishes how many records it produced and when it produced each through a
shared mmap'd file, readable after the kill. The parent then counts the
records persisted in complete lines of the trail (by the `<rN>` marker each
logical record carries; text deltas merged into one line count one each).

Per trial: produced, persisted, lost, and the lost window = kill time - produce
time of the last persisted record. Then the maximum window against the goal
(250 ms batch interval + one fsync, the fsync measured on the same filesystem
in this run) and the overall loss rate = records lost / records produced.
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import re
import signal
import statistics
import struct
import subprocess
import time
from pathlib import Path

import _install

HERE = Path(__file__).resolve().parent
CAPACITY = 50_000  # produce-time slots (about 2,200 are used in 2 s)
MARKER = re.compile(rb"<r(\d+)>")


def fsync_ms(folder: Path, n: int = 20) -> float:
    """Median ms of one small O_APPEND write + fsync in `folder`."""
    path = folder / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    times = []
    try:
        for _ in range(n):
            os.write(fd, b'{"v":1,"type":"status"}\n' * 4)
            t0 = time.perf_counter()
            os.fsync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(times) * 1000


def persisted_indices(data: bytes) -> tuple[set[int], int, bool]:
    """(marker indices in complete lines, complete lines, torn tail?)."""
    lines = data.split(b"\n")
    tail = lines.pop()
    found: set[int] = set()
    complete = 0
    import orjson

    for line in lines:
        if not line.strip():
            continue
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        complete += 1
        found.update(int(m) for m in MARKER.findall(line))
    return found, complete, bool(tail.strip())


def trial(inst: _install.Install, rng: random.Random, no: int) -> dict:
    from zapcli import ids

    home = inst.new_home(f"crash{no:02d}")
    shm_path = home / "shm"
    with open(shm_path, "wb") as f:
        f.truncate(8 + 8 * CAPACITY)
    fd = os.open(shm_path, os.O_RDWR)
    shm = mmap.mmap(fd, 8 + 8 * CAPACITY, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    os.close(fd)
    sid = ids.new_id()
    env = inst.env(home, session="bench-crash")
    proc = subprocess.Popen([inst.python, str(HERE / "_crash_writer.py"), str(shm_path), sid], env=env,
                            cwd=inst.scratch, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while struct.unpack_from("q", shm, 0)[0] == 0:
            if proc.poll() is not None:
                raise RuntimeError(f"writer exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("writer never started producing")
            time.sleep(0.002)
        delay = rng.uniform(0.3, 2.0)
        time.sleep(delay)
        kill_time = time.time()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()

    produced = struct.unpack_from("q", shm, 0)[0]
    times = struct.unpack_from(f"{produced}d", shm, 8)
    shm.close()
    data = (home / "subagents" / f"{sid}.jsonl").read_bytes()
    found, complete, torn = persisted_indices(data)
    persisted = len(found)
    prefix = persisted == 0 or (min(found) == 0 and max(found) == persisted - 1)
    if found:
        last = max(found)
        window_ms = (kill_time - times[last]) * 1000
    else:  # nothing persisted: everything since the first record was lost
        window_ms = (kill_time - times[0]) * 1000
    import shutil

    shutil.rmtree(home, ignore_errors=True)
    return {"delay_ms": delay * 1000, "produced": produced, "persisted": persisted,
            "lost": produced - persisted, "window_ms": window_ms, "lines": complete,
            "torn": torn, "prefix": prefix}


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--seed", type=int, default=None)
    opts = ap.parse_args()
    seed = opts.seed if opts.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)

    inst = _install.build()
    try:
        inst.use_in_process()
        fs_ms = fsync_ms(inst.new_home("fsync"))
        results = []
        for no in range(1, opts.trials + 1):
            r = trial(inst, rng, no)
            results.append(r)
            print(f"trial {no:02d} killed_after_ms {r['delay_ms']:.0f} produced {r['produced']} "
                  f"persisted {r['persisted']} lost {r['lost']} lost_window_ms {r['window_ms']:.1f}"
                  f"{'  TORN_TAIL' if r['torn'] else ''}{'' if r['prefix'] else '  NOT_A_PREFIX'}",
                  flush=True)
        produced = sum(r["produced"] for r in results)
        lost = sum(r["lost"] for r in results)
        worst = max(r["window_ms"] for r in results)
        goal = 250 + fs_ms
        print(f"fsync_median_ms {fs_ms:.2f}  (reference: one small append + fsync on this filesystem)")
        print(f"max_lost_window_ms {worst:.1f}  ratio_vs_goal {worst / goal:.2f}x  "
              f"(goal <= 250 ms + one fsync = {goal:.1f} ms; seed {seed})")
        print(f"median_lost_window_ms {statistics.median(r['window_ms'] for r in results):.1f}")
        print(f"max_lost_records {max(r['lost'] for r in results)}")
        print(f"loss_rate {lost / produced:.4f}  ({lost} lost / {produced} produced over {len(results)} trials)")
        bad = sum(1 for r in results if not r["prefix"])
        torn = sum(1 for r in results if r["torn"])
        print(f"trials_with_gaps {bad}  trials_with_torn_tail {torn}")
    finally:
        inst.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
