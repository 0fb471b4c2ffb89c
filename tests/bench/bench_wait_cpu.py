"""CPU used by a waiting caller (docs/explanation/rules.md#measured "poll CPU while waiting").

Usage: .venv/bin/python tests/bench/bench_wait_cpu.py [--timeout 10]

Spawns `sleep 30` as an sh subagent (compiled copy of zapcli, temp
ZAPCLI_HOME), then runs `zapcli wait ID --timeout 10` as a subprocess and
reads that process's exact CPU time (user + system) from `os.wait4` when it
exits. Figure: percent of one core over the wait's wall time (goal <= 1 %).
Also: the steady-state share (CPU after the first second, sampled with psutil,
so interpreter start-up is excluded) and, as reference, the CPU of one
`python -I -c pass` measured the same way. The subagent is killed after.
Then how soon after a subagent's end `wait` returns (#24.15: goal <= 50 ms),
with the interval alone as the reference.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

import _install
import psutil


def run_with_cpu(argv: list[str], env: dict[str, str], cwd, *, sample_at: float | None = None
                 ) -> tuple[float, float, int, float | None]:
    """(wall s, cpu s, exit code, cpu s at `sample_at` seconds) of one child."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sampled = None
    if sample_at is not None:
        time.sleep(max(0.0, sample_at - (time.perf_counter() - t0)))
        try:
            ct = psutil.Process(proc.pid).cpu_times()
            sampled = ct.user + ct.system
        except psutil.NoSuchProcess:
            sampled = None
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, proc.returncode, sampled


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=10, help="subagents for the wake latency figure")
    opts = ap.parse_args()

    inst = _install.build()
    try:
        inst.use_in_process()
        import _fixtures

        home = inst.new_home("wait")
        env = inst.env(home, session="bench-wait")
        sid = inst.run(inst.zapcli("spawn", "--cli", "sh", "--", "sleep 30"), env).stdout.decode().strip()
        try:
            # reference: the CPU of a bare interpreter start, measured the same way
            ref = sorted(run_with_cpu(inst.ref_pass, env, inst.scratch)[1] for _ in range(5))[2]
            wall, cpu, code, at1 = run_with_cpu(inst.zapcli("wait", sid, "--timeout", f"{opts.timeout:g}"),
                                                env, inst.scratch, sample_at=1.0)
            status = inst.run(inst.zapcli("poll", "--no-wait", "--json", sid), env).stdout
        finally:
            inst.run(inst.zapcli("kill", sid, "--grace", "1"), env, check=False)
            _fixtures.kill_subagent(home, sid)
            try:
                _fixtures.wait_done(home, sid, timeout=15)
            except RuntimeError:
                pass
        if code != 4:
            raise RuntimeError(f"wait exited {code}, expected 4 (timed out); status {status[:300]!r}")
        if b'"running"' not in status:
            raise RuntimeError(f"the subagent was not running at the end of the wait: {status[:300]!r}")
        pct = cpu / wall * 100
        print(f"wait_cpu_percent {pct:.2f}  (goal <= 1 %; {cpu * 1000:.0f} ms CPU over {wall:.2f} s wall, "
              f"exit {code})")
        if at1 is not None:
            steady = (cpu - at1) / (wall - 1.0) * 100
            print(f"wait_steady_cpu_percent {steady:.2f}  (CPU after the first second; "
                  f"{at1 * 1000:.0f} ms used by then)")
        print(f"wait_cpu_ms {cpu * 1000:.0f}  ratio_vs_python_pass_cpu {_install.fmt_ratio(cpu, ref)}  "
              f"(reference python -I -c pass: {ref * 1000:.0f} ms CPU)")
        wake_latency(inst, opts.rounds)
    finally:
        inst.cleanup()
    return 0


def wake_latency(inst: _install.Install, rounds: int) -> None:
    """How long after a subagent's end `wait` returns (#24.15), in this process
    (`ops.poll.wait` of the compiled copy): from the `ts` of the terminal
    status its runner wrote to the return. With inotify, then with the
    interval alone (the watch disabled) as the reference."""
    import statistics

    from zapcli.cli.settings import for_observers
    from zapcli.lifecycle import wake
    from zapcli.ops.poll import wait
    from zapcli.trail import reader, store
    from zapcli.trail.records import parse_iso

    home = inst.new_home("wake")
    os.environ["ZAPCLI_HOME"] = str(home)
    env = inst.env(home, session="bench-wake")
    watch = wake.Waker._watch
    figures = {}
    for label, watching in (("inotify", True), ("interval_only", False)):
        wake.Waker._watch = watch if watching else (lambda self: None)  # type: ignore[method-assign]
        late = []
        for _ in range(rounds):
            sid = inst.run(inst.zapcli("spawn", "--cli", "sh", "--", "sleep 0.7"), env).stdout.decode().strip()
            wait([sid], for_observers(), timeout_s=30)
            back = time.time()
            final = reader.first_terminal(store.path_for(sid))
            assert final is not None and final.ts, sid
            late.append(back - parse_iso(final.ts))
        figures[label] = statistics.median(late) * 1000
        print(f"wait_wake_{label}_median_ms {figures[label]:.1f}  max_ms {max(late) * 1000:.1f}"
              + ("  (goal <= 50 ms)" if watching else "  (reference: the 500 ms interval alone)"))
    wake.Waker._watch = watch  # type: ignore[method-assign]


if __name__ == "__main__":
    raise SystemExit(main())
