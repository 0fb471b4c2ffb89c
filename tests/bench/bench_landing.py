"""Results land back (issue 28): how long a `zapcli run` takes whose model ends
its turn right after spawning 4 children that each take 2 s.

Usage: .venv/bin/python tests/bench/bench_landing.py [--runs 5] [--call-s 0.3] [--child-s 2]

A real `zapcli run --json` (a byte-compiled install, `_install.build`) against
a scripted model server whose every answer takes `--call-s` (one model
call): call 1 spawns 4 `sh` children (`sleep 2; echo ...`), call 2 says "I've
started them" (its turn ends), and the run must wait for the four results and
hand them to a third call, which answers. The reference, measured in the
same run and interleaved with it: the same `zapcli run` whose model answers at
once (start-up, one model call, the end). Goal: the fan-out run's wall time
≤ the reference + 2 s + one model call + 300 ms — the children's 2 s, the one
call that takes their results, and 300 ms for spawning them, noticing their
ends and the run's end. Printed: the median of each, the goal, and where the
time went (children started/ended, the calls the server got).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from typing import Any

import _install


def make_server(ScriptedServer: type, call_s: float, child_s: float) -> Any:
    class Timed(ScriptedServer):
        """Records time.monotonic() of each request as it arrives."""

        def __init__(self, *a: Any, **kw: Any):
            super().__init__(*a, **kw)
            self.at: list[tuple[float, str]] = []
            self._at_lock = threading.Lock()

        def record(self, body: dict[str, Any]) -> None:
            first = next((m.get("content") for m in body.get("messages") or []
                          if isinstance(m, dict) and m.get("role") == "user"), "")
            with self._at_lock:
                self.at.append((time.monotonic(), str(first)))
            super().record(body)

    spawn = [{"name": "subagent", "arguments": {"action": "spawn", "cli": "sh",
                                                "task": f"sleep {child_s}; echo result {n}"}}
             for n in range(4)]
    usage = {"prompt_tokens": 300, "completion_tokens": 20}
    return Timed([
        {"match": "fan out", "turns": [
            {"tool_calls": spawn, "usage": usage, "delay_s": call_s},
            {"text": "I've started them.", "usage": usage, "delay_s": call_s},
            {"text": "All four are in.", "usage": usage, "delay_s": call_s}]},
        {"match": "answer at once", "turns": [
            {"text": "Done.", "usage": usage, "delay_s": call_s}]}])


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--call-s", type=float, default=0.3, help="how long one model call takes")
    ap.add_argument("--child-s", type=float, default=2.0, help="how long each child takes")
    opts = ap.parse_args()
    inst = _install.build()
    try:
        inst.use_in_process()
        from zapcli.testing import ScriptedServer

        with make_server(ScriptedServer, opts.call_s, opts.child_s) as srv:
            return _bench(inst, srv, opts)
    finally:
        inst.cleanup()


def _bench(inst: _install.Install, srv: Any, opts: argparse.Namespace) -> int:
    env = inst.env(session=None, extra={"OPENAI_BASE_URL": srv.base_url, "ZAPCLI_MODEL": "scripted",
                                        "OPENAI_API_KEY": "sk-bench-landing"})
    docs: list[dict[str, Any]] = []
    n = iter(range(10**6))  # each run its own conversation on the server
    homes: list[Any] = []
    tasks: list[str] = []
    ended: list[float] = []  # when each fan-out run's process ended (monotonic)

    def fan_out() -> float:
        home = inst.new_home("landing")
        homes.append(home)
        tasks.append(f"fan out #{next(n)}")
        took, proc = inst.timed(inst.zapcli("run", "--approval", "full", "--json", "--", tasks[-1]),
                                {**env, "ZAPCLI_HOME": str(home)})
        ended.append(time.monotonic())
        doc = json.loads(proc.stdout)
        if doc["status"] != "completed" or doc["undelivered"] or len(doc["late_results"]) != 4:
            raise RuntimeError(f"the run did not take its four results: {doc}")
        docs.append(doc)
        return took

    def reference() -> float:
        home = inst.new_home("reference")
        return inst.timed(inst.zapcli("run", "--json", "--", f"answer at once #{next(n)}"),
                          {**env, "ZAPCLI_HOME": str(home)})[0]

    samples = _install.interleaved(opts.runs, {"fan_out": fan_out, "reference": reference}, warmup=1)
    fan, ref = statistics.median(samples["fan_out"]), statistics.median(samples["reference"])
    goal = ref + opts.child_s + opts.call_s + 0.3
    calls = [d["tokens"]["calls"] for d in docs]
    print(f"run whose model ends its turn after spawning 4 children of {opts.child_s:g} s "
          f"(a model call takes {opts.call_s:g} s): median wall {fan:.2f} s over {opts.runs} runs "
          f"(min {min(samples['fan_out']):.2f}, max {max(samples['fan_out']):.2f})")
    print(f"  reference, a run whose model answers at once: median {ref:.2f} s")
    print(f"  goal <= reference + {opts.child_s:g} s + 1 model call + 300 ms = {goal:.2f} s: "
          f"{'met' if fan <= goal else 'NOT met'} (over the reference: {fan - ref:.2f} s, "
          f"goal {goal - ref:.2f} s); model calls per run: {sorted(calls)}")
    print("  where the time went in the last run (seconds from the first model request):")
    for line in _timeline(homes[-1], tasks[-1], ended[-1], srv.at):
        print("    " + line)
    return 0


def _timeline(home: Any, task: str, ended: float, at: list[tuple[float, str]]) -> list[str]:
    """The last fan-out run's model requests and its children's spawn, start and end."""
    from datetime import datetime

    calls = [t for t, first in at if first == task]
    out = [f"model request {i + 1}: {t - calls[0]:.2f}" for i, t in enumerate(calls)]
    out.append(f"the run's process ended: {ended - calls[0]:.2f}")
    wall0 = time.time() - (time.monotonic() - calls[0])  # the first request, in epoch seconds
    for trail in sorted((home / "subagents").glob("*.jsonl")):
        recs = [json.loads(x) for x in trail.read_text().splitlines() if x.strip()]
        when = {r["type"]: datetime.fromisoformat(r["ts"].replace("Z", "+00:00")).timestamp() - wall0
                for r in reversed(recs) if r.get("type") in ("spawn", "start", "status")}
        out.append(f"{trail.stem}: spawned {when.get('spawn', 0):.2f}, runner started "
                   f"{when.get('start', 0):.2f}, ended {when.get('status', 0):.2f}")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
