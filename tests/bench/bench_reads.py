"""How much a poll and the runner's claim read the trail (#17.6).

Usage: .venv/bin/python tests/bench/bench_reads.py [--runs 20] [--claim-secs 5]

All from a compiled, non-editable copy of the package, state in temp folders.

1. `poll --no-wait ID` of a completed and of a running `sh` subagent, stdout
   piped: median wall ms against `python -I -c pass`, the two interleaved in
   the same rounds (goal <= 3x, #12's).
2. Trail reads per poll: one `poll --no-wait ID` in this process, through
   the CLI's entry, with a profiler counting the calls into `trail/store`
   (every call, and those from outside it) and the whole-trail reads
   (`store.read_bounded` of a `.jsonl`). Goal: one whole-trail read.
3. Claim-loop CPU: the runner's `_claim` on a queued trail whose `process`
   record never lands, so it waits out its CLAIM_WAIT_S looking every 20 ms
   — with a 1 KB and with a 1 MB task (the spawn record's size). CPU time
   over wall time, percent of one core; reference: a bare loop of
   `time.sleep(0.02)` over the same time, measured the same way (goal <= 1 %).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import _install


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--claim-secs", type=float, default=5.0)
    opts = ap.parse_args()
    inst = _install.build()
    try:
        home = inst.new_home("reads")
        inst.use_in_process(home, "bench-reads")
        import zapcli

        if not zapcli.__file__ or not zapcli.__file__.startswith(str(inst.root)):
            raise RuntimeError(f"zapcli resolved to {zapcli.__file__}, not the compiled copy")
        env = inst.env(home, session="bench-reads")
        done, running = _subagents(inst, home, env)
        try:
            _poll_figures(inst, env, done, running, opts.runs)
            for label, sid in (("completed", done), ("running", running)):
                calls, outside, whole = _reads_per_poll(sid)
                print(f"trail_reads_per_poll_{label} {whole}  (goal 1 whole-trail read; "
                      f"{calls} calls into trail/store, {outside} of them from outside it)")
            _claim_figures(opts.claim_secs)
        finally:
            inst.run(inst.zapcli("kill", "--grace", "1", running), env, check=False)
    finally:
        inst.cleanup()
    return 0


def _subagents(inst: _install.Install, home, env: dict[str, str]) -> tuple[str, str]:
    import _fixtures

    done = inst.run(inst.zapcli("spawn", "--cli", "sh", "--", "echo done"), env).stdout.decode().strip()
    if _fixtures.wait_done(home, done) != "completed":
        raise RuntimeError(f"{done} did not complete")
    running = inst.run(inst.zapcli("spawn", "--cli", "sh", "--timeout", "600", "--", "sleep 600"),
                       env).stdout.decode().strip()
    status = inst.run(inst.zapcli("poll", "--no-wait", "--json", running), env).stdout
    if b'"running"' not in status and b'"queued"' not in status:
        raise RuntimeError(f"{running} is not running: {status[:300]!r}")
    return done, running


def _poll_figures(inst: _install.Install, env: dict[str, str], done: str, running: str,
                  runs: int) -> None:
    samples = _install.interleaved(runs, {
        "python_pass": lambda: inst.timed(inst.ref_pass, env)[0],
        "poll_no_wait_completed": lambda: inst.timed(inst.zapcli("poll", "--no-wait", done), env)[0],
        "poll_no_wait_running": lambda: inst.timed(inst.zapcli("poll", "--no-wait", running), env)[0],
    })
    ref = _install.median_ms(samples.pop("python_pass"))
    print(f"python_pass_median_ms {ref:.1f}  (reference: bench venv python -I -c pass, {runs} runs)")
    for name, vals in samples.items():
        med = _install.median_ms(vals)
        print(f"{name}_median_ms {med:.1f}  ratio_vs_python_pass {_install.fmt_ratio(med, ref)}"
              "  (goal <= 3x)")


def _reads_per_poll(sid: str) -> tuple[int, int, int]:
    """(calls into trail/store, those from outside it, whole-trail reads) of
    one `poll --no-wait` (after one untimed warm-up for first imports)."""
    from zapcli.cli.entry import main as cli
    from zapcli.trail import store

    here = store.__file__
    counts: collections.Counter[str] = collections.Counter()

    def profile(frame, event, _arg):  # type: ignore[no-untyped-def]
        if event != "call" or frame.f_code.co_filename != here:
            return
        counts["calls"] += 1
        if frame.f_back is None or frame.f_back.f_code.co_filename != here:
            counts["outside"] += 1
        if frame.f_code.co_name == "read_bounded" and str(frame.f_locals.get("path")).endswith(".jsonl"):
            counts["whole"] += 1

    for measured in (False, True):
        counts.clear()
        saved = os.dup(1)
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)
        if measured:
            sys.setprofile(profile)
        try:
            cli(["poll", "--no-wait", sid])
        except SystemExit:
            pass
        finally:
            sys.setprofile(None)
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
            os.close(quiet)
    return counts["calls"], counts["outside"], counts["whole"]


def _claim_figures(secs: float) -> None:
    from zapcli import ids
    from zapcli.runner import main as runner
    from zapcli.trail import store

    runner.CLAIM_WAIT_S = secs
    ref = _cpu_share(lambda: _sleep_loop(secs))
    print(f"sleep_loop_cpu_percent {ref:.3f}  (reference: time.sleep(0.02) for {secs:g} s)")
    for label, size in (("1kb", 1 << 10), ("1mb", 1 << 20)):
        sid = ids.new_id()
        store.create_trail(sid, {"session": "bench-reads", "cli": "sh", "task": "x" * size,
                                 "cwd": "/", "workspace": "/"}, [])
        refusal: list[str | None] = []
        share = _cpu_share(lambda: refusal.append(runner._claim(sid)))  # noqa: B023 - called at once
        if not refusal or refusal[0] is None or "not launched" not in refusal[0]:
            raise RuntimeError(f"the claim did not wait it out: {refusal}")
        print(f"claim_loop_cpu_percent_task_{label} {share:.2f}  ratio_vs_sleep_loop "
              f"{_install.fmt_ratio(share, ref)}  (goal <= 1 % of a core; waiting {secs:g} s "
              "for a process record that never lands)")


def _sleep_loop(secs: float) -> None:
    end = time.monotonic() + secs
    while time.monotonic() < end:
        time.sleep(0.02)


def _cpu_share(fn) -> float:  # type: ignore[no-untyped-def]
    """Percent of one core `fn` used over its wall time."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.process_time() - cpu) / (time.perf_counter() - wall) * 100


if __name__ == "__main__":
    raise SystemExit(main())
