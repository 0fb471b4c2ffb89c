"""The built-in agent loop's own overhead per model turn (docs/explanation/rules.md#the-agent-loop, docs/explanation/rules.md#measured).

Usage: .venv/bin/python tests/bench/bench_agent_loop.py [--turns 200] [--reps 5]

Runs `run_loop` in this process (compiled copy of zapcli) against the bundled
scripted OpenAI-compatible server, started as its own process
(`python -m zapcli.testing.scripted_server`) so that serving never competes
with the loop for this interpreter's GIL; real HTTP on 127.0.0.1 through the
real `ChatClient` (openai SDK, SSE stream). The script's one rule loops a turn
that calls `glob` on a folder of three files and reports usage, so every model
turn is: request, one tool call, one tool result, a usage record; the loop
stops at `max_turns` (no report). The sink is a real `TrailWriter` on a temp
file, as in the child (its 250 ms background flush runs during the loop).

The client and each tool are wrapped to time their calls. Per repetition:
loop overhead = run_loop wall − Σ client.complete − Σ tool.run, divided by the
number of model turns (complete calls). `complete` covers the whole model
round trip, including the SDK's request encoding and zapcli's SSE assembly;
the overhead is what the loop adds around it: message bookkeeping, limit
checks, dispatch, approval hooks and the sink calls. A short warm-up run first
pays the `openai` import and connection set-up.

Prints: the median overhead per turn (µs) over the repetitions and its ratio
to the reference, the median `client.complete` wall (the scripted model's
round trip, all calls of all repetitions) measured in the same run. The
history grows by two messages a turn and so does the round trip (the SDK
walks every message of every request), so the ratio to the round trip of the
first 10 calls of each run is printed too, with the growth per message. Also
the per-turn gaps (end of one model call to the start of the next, minus the
tool run: median, p90, first and last quarter, to show whether the loop's own
cost grows with the history), the calling-thread cost of the sink per record,
and the sink record rate (records per second of loop wall and per turn),
checked against the lines on disk after `close()`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import _install

SECRETS = [b"sk-bench-" + b"a" * 31, b"ghp_bench" + b"b" * 31]
SYSTEM = "You are a benchmark agent. Use the tools."


def script() -> list[dict[str, Any]]:
    return [{"turns": [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}],
                        "usage": {"prompt_tokens": 120, "completion_tokens": 8}}],
             "loop": True}]


class TimedClient:
    """Delegates to a ModelClient; records when each complete() started and ended."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.model = inner.model
        self.spans: list[tuple[float, float]] = []  # (start, end) perf_counter of each call

    def complete(self, messages, tools, on_delta):
        t0 = time.perf_counter()
        try:
            return self.inner.complete(messages, tools, on_delta)
        finally:
            self.spans.append((t0, time.perf_counter()))


class TimedTool:
    """Delegates to a Tool; appends (start, end) perf_counter of each run() to `spans`."""

    def __init__(self, inner: Any, spans: list[tuple[float, float]]):
        self.inner = inner
        self.spec = inner.spec
        self.spans = spans

    def run(self, args, ctx):
        t0 = time.perf_counter()
        try:
            return self.inner.run(args, ctx)
        finally:
            self.spans.append((t0, time.perf_counter()))


class TimedSink:
    """Calls `append`; counts records and the calling-thread seconds spent."""

    def __init__(self, append: Any):
        self.append = append
        self.count = 0
        self.seconds = 0.0

    def __call__(self, rtype: str, fields: dict[str, Any]) -> None:
        t0 = time.perf_counter()
        self.append(rtype, fields)
        self.seconds += time.perf_counter() - t0
        self.count += 1


def start_server(inst: _install.Install, work: Path) -> tuple[subprocess.Popen, str]:
    path = work / "script.json"
    path.write_text(json.dumps(script()), encoding="utf-8")
    proc = subprocess.Popen([inst.python, "-m", "zapcli.testing.scripted_server", "--script", str(path)],
                            env=inst.env(), cwd=inst.scratch, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if not line.startswith("listening "):
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise RuntimeError(f"scripted server did not start: {line!r} {err[-1000:]}")
    return proc, line.split(" ", 1)[1]


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for f in (proc.stdout, proc.stderr):
        if f:
            f.close()


def one_run(base_url: str, work: Path, folder: Path, turns: int, tag: str) -> dict[str, Any]:
    from zapcli.agent.loop import run_loop
    from zapcli.agent.types import Limits, ToolContext
    from zapcli.providers.openai_chat import ChatClient
    from zapcli.tools.registry import Toolset
    from zapcli.trail.writer import TrailWriter

    client = TimedClient(ChatClient("scripted", base_url=base_url, api_key="x", max_retries=0))
    tool_spans: list[tuple[float, float]] = []
    toolset = Toolset(["read", "glob"])
    tools = [TimedTool(t, tool_spans) for t in toolset.tools]
    ctx = ToolContext(workspace=str(folder), cwd=str(folder))
    path = work / f"trail-{tag}.jsonl"
    path.touch(mode=0o600)
    writer = TrailWriter(path, start_seq=2, secrets=SECRETS)
    sink = TimedSink(writer.append)
    try:
        # the task names the run: each run is a new conversation on the server
        t0 = time.perf_counter()
        outcome = run_loop(system_prompt=SYSTEM, task=f"list the text files ({tag})", client=client,
                           tools=tools, sink=sink, ctx=ctx, limits=Limits(max_turns=turns))
        wall = time.perf_counter() - t0
    finally:
        writer.close()
        toolset.close()
    calls = client.spans
    if not (outcome.reason or "").startswith("max turns") or len(calls) != turns or len(tool_spans) != turns:
        raise RuntimeError(f"run {tag}: ended {outcome.status} ({outcome.reason}) after "
                           f"{len(calls)} model calls and {len(tool_spans)} tool runs; "
                           f"expected {turns} of each and 'max turns'")
    on_disk = path.read_bytes().count(b"\n")
    if on_disk != sink.count:
        raise RuntimeError(f"run {tag}: {sink.count} records sent to the sink, {on_disk} on disk")
    durations = [e - b for b, e in calls]
    tool_s = [e - b for b, e in tool_spans]
    # Per-turn gap: from the end of model call i to the start of call i+1, minus
    # the tool run in between (one call per turn, in order).
    gaps = [calls[i + 1][0] - calls[i][1] - tool_s[i] for i in range(turns - 1)]
    return {"wall": wall, "durations": durations, "gaps": gaps,
            "overhead_us": (wall - sum(durations) - sum(tool_s)) / turns * 1e6,
            "tool_us": sum(tool_s) / turns * 1e6, "records": sink.count, "sink_s": sink.seconds}


def ratio(value: float, ref: float) -> str:
    """Like _install.fmt_ratio, with significant digits for small ratios."""
    return f"{value / ref:.3g}x" if 0 < ref and value < ref / 10 else _install.fmt_ratio(value, ref)


def slope(ys: list[float]) -> float:
    """Least-squares slope of ys against their index."""
    n = len(ys)
    mx, my = (n - 1) / 2, statistics.fmean(ys)
    return sum((i - mx) * (y - my) for i, y in enumerate(ys)) / sum((i - mx) ** 2 for i in range(n))


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    opts = ap.parse_args()
    if opts.turns < 20 or opts.reps < 1:
        ap.error("need --turns >= 20 and --reps >= 1")

    inst = _install.build()
    try:
        inst.use_in_process()
        with tempfile.TemporaryDirectory(prefix="loop-", dir=inst.root) as tmp:
            work = Path(tmp)
            folder = work / "ws"
            folder.mkdir()
            for name in ("a.txt", "b.txt", "notes.md", "c.txt"):
                (folder / name).write_text(f"{name}\n", encoding="utf-8")
            server, base_url = start_server(inst, work)
            try:
                one_run(base_url, work, folder, 20, "warm-up")
                runs = [one_run(base_url, work, folder, opts.turns, f"rep{i}") for i in range(opts.reps)]
            finally:
                stop_server(server)
    finally:
        inst.cleanup()

    turns, reps = opts.turns, opts.reps
    overhead = statistics.median(r["overhead_us"] for r in runs)
    complete_us = statistics.median(d for r in runs for d in r["durations"]) * 1e6
    short_us = statistics.median(d for r in runs for d in r["durations"][:10]) * 1e6
    growth_us = statistics.median(slope(r["durations"]) for r in runs) * 1e6 / 2  # 2 messages per turn
    gaps = [g * 1e6 for r in runs for g in r["gaps"]]
    q = max(1, (turns - 1) // 4)
    gap_first = statistics.median(g * 1e6 for r in runs for g in r["gaps"][:q])
    gap_last = statistics.median(g * 1e6 for r in runs for g in r["gaps"][-q:])
    tool_us = statistics.median(r["tool_us"] for r in runs)
    records = sum(r["records"] for r in runs)
    walls = sum(r["wall"] for r in runs)
    sink_us = sum(r["sink_s"] for r in runs) / records * 1e6
    per_turn_records = records / (reps * turns)
    per_rep = ", ".join(f"{r['overhead_us']:.0f}" for r in runs)
    print(f"loop_overhead_us_per_turn {overhead:.0f}  ratio_vs_model_round_trip {ratio(overhead, complete_us)}"
          f"  ratio_vs_short_history_round_trip {ratio(overhead, short_us)}  ((wall - model - tools) / "
          f"turns; median of {reps} runs of {turns} turns: {per_rep} us)")
    print(f"loop_gap_us_median {statistics.median(gaps):.0f}  p90 {statistics.quantiles(gaps, n=10)[-1]:.0f}  "
          f"first_quarter {gap_first:.0f}  last_quarter {gap_last:.0f}  (per turn: end of a model call "
          f"to start of the next, minus the tool run)")
    print(f"model_round_trip_median_us {complete_us:.0f}  (reference: one ChatClient.complete against the "
          f"scripted server, all {reps * turns} calls; the history grows 2 messages per turn)")
    print(f"short_history_round_trip_median_us {short_us:.0f}  (reference: the first 10 calls of each run, "
          f"<= 21 messages)")
    print(f"round_trip_growth_us_per_history_message {growth_us:.0f}  (info: slope of complete() time over "
          f"the run, inside the client, not the loop)")
    print(f"glob_tool_us_per_call {tool_us:.0f}  ratio_vs_model_round_trip {ratio(tool_us, complete_us)}  "
          f"(info: excluded from the overhead)")
    print(f"sink_us_per_record {sink_us:.2f}  share_of_loop_overhead "
          f"{sink_us * per_turn_records / overhead:.0%}  (calling-thread cost of TrailWriter.append, "
          f"included in the overhead)")
    print(f"sink_records_per_s {records / walls:,.0f}  ({per_turn_records:.1f} records per turn; "
          f"{records:,} records, all on disk after close(); per second of loop wall, model included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
