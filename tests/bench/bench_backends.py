"""Agent CLIs as backends (docs/explanation/rules.md#agent-clis, issue 8): what zapcli's supervision costs.

Usage: .venv/bin/python tests/bench/bench_backends.py [--reps 3] [--events 100000] [--skip-wall]

1. Wall time of a scripted 5-turn task (4 tool calls, then the answer)
   through `zapcli spawn --cli claude` + `zapcli wait`, as a ratio to the same
   `claude -p` launched bare (the adapter's argv, environment and config
   home, the task on stdin, stdout drained) in the same run, interleaved;
   same for codex. Goal ≤ 1.10x. The scripted server (Anthropic / Responses)
   runs as its own process; each run has its own conversation. zapcli runs
   from a byte-compiled copy (`_install.build`). Measured with an instant
   model and with 1 s per model turn (zapcli's cost is fixed per subagent:
   three Python processes — spawn, the runner, wait — and wait's 500 ms tick).
2. CPU per event of the runner's stdout path (`LinePump`: split bytes on \\n,
   decode, orjson, the format's parser, the records to a sink) over 100,000
   events of each format, cycled from the real captures in
   tests/backends/fixtures, against `orjson.loads` of the same lines. Goal:
   ≤ 2 µs per event above orjson.
3. The largest line handled: a 5 MiB and a 60 MiB line (a tool result)
   through the pump: time and that it arrived.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import _install

_install.ensure_venv()
REPO = _install.REPO
FIXTURES = REPO / "tests" / "backends" / "fixtures"
BIN = REPO / ".cache" / "agent-clis" / "node_modules" / ".bin"
sys.path.insert(0, str(REPO))

TURNS = {
    "claude": [{"text": f"Step {i}.", "tool_calls": [{"name": "Bash", "arguments": {
        "command": f"echo step-{i}", "description": "echo"}}]} for i in range(4)]
    + [{"text": "Five turns done."}],
    "codex": [{"tool_calls": [{"name": "exec_command", "arguments": {"cmd": f"echo step-{i}"},
                               "id": f"c{i}"}]} for i in range(4)]
    + [{"text": "Five turns done."}],
}
PROTOCOL = {"claude": "anthropic", "codex": "responses"}


def start_server(cli: str, tmp: Path, latency: float) -> tuple[subprocess.Popen[str], str]:
    script = tmp / f"{cli}.json"
    turns = [{**t, "delay_s": latency} if latency else t for t in TURNS[cli]]
    script.write_text(json.dumps([{"match": "BENCH-FIVE", "turns": turns}]))
    proc = subprocess.Popen([_install.venv_python(), "-m", "zapcli.testing.scripted_server",
                             "--protocol", PROTOCOL[cli], "--script", str(script)],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split()[-1]


def cli_env(cli: str, url: str) -> dict[str, str]:
    if cli == "claude":
        return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-bench-0123456789"}
    return {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-bench-0123456789"}


def bare(cli: str, url: str, tmp: Path, n: int) -> float:
    """The same CLI launch as the runner's, without zapcli."""
    from zapcli.backends import registry
    from zapcli.backends.cli_home import write_files
    from zapcli.backends.clis.base import CliRequest

    home = Path(tempfile.mkdtemp(prefix="home-", dir=tmp))
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    req = CliRequest(task=f"BENCH-FIVE bare {n}", cwd=str(work), workspace=str(work),
                     config_home=home, env={**os.environ, **cli_env(cli, url)},
                     approval="full", model="gpt-5.5" if cli == "codex" else None)
    launch = registry.get(cli).launch(req, [str(BIN / cli)])
    t0 = time.perf_counter()
    write_files(home, launch.files)
    proc = subprocess.Popen(launch.argv, env=launch.env, cwd=work, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out, _ = proc.communicate(launch.stdin, timeout=300)
    elapsed = time.perf_counter() - t0
    assert b"Five turns done." in out, out[-2000:]
    return elapsed


def supervised(inst: _install.Install, cli: str, url: str, home: Path, n: int) -> float:
    env = inst.env(home, extra={**cli_env(cli, url), "PATH": f"{BIN}:{os.environ['PATH']}"})
    work = inst.scratch
    model = ["--model", "gpt-5.5"] if cli == "codex" else []
    t0 = time.perf_counter()
    sid = subprocess.run(inst.zapcli("spawn", "--cli", cli, "--approval", "full", *model, "--",
                                     f"BENCH-FIVE zapcli {n}"), env=env, cwd=work,
                         capture_output=True, text=True, check=True).stdout.strip()
    done = subprocess.run(inst.zapcli("wait", sid, "--timeout", "300"), env=env, cwd=work,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    report = subprocess.run(inst.zapcli("poll", sid, "--no-wait"), env=env, cwd=work,
                            capture_output=True, text=True).stdout
    assert done.returncode == 0 and "Five turns done." in report, report
    return elapsed


def _runs(inst: _install.Install, cli: str, url: str, tmp: Path, home: Path,
          reps: int) -> dict[str, list[float]]:
    counter = iter(range(10_000))
    return _install.interleaved(reps, {
        "bare": lambda: bare(cli, url, tmp, next(counter)),
        "zapcli": lambda: supervised(inst, cli, url, home, next(counter))}, warmup=1)


def wall(reps: int, latency: float) -> None:
    inst = _install.build()
    try:
        tmp = inst.root
        home = inst.new_home()
        for cli in ("claude", "codex"):
            if not (BIN / cli).exists():
                print(f"{cli}_wall skipped: run `make agent-clis`")
                continue
            server, url = start_server(cli, tmp, latency)
            try:
                runs = _runs(inst, cli, url, tmp, home, reps)
            finally:
                server.terminate()
                server.wait()
            b, z = statistics.median(runs["bare"]), statistics.median(runs["zapcli"])
            print(f"{cli}_5turn_model_latency_{latency:g}s_bare_median_s {b:.2f}  zapcli_spawn_wait_median_s {z:.2f}  "
                  f"ratio {z / b:.2f}x (goal <= 1.10x)  samples bare "
                  f"{[round(x, 2) for x in runs['bare']]} zapcli {[round(x, 2) for x in runs['zapcli']]}")
    finally:
        inst.cleanup()


class _Null:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, rtype: str, fields: dict) -> None:
        self.n += 1


def _pump(data: bytes, cli: str) -> tuple[float, int, int]:
    """CPU seconds of LinePump over `data` (fed through a pipe), lines, records."""
    from zapcli.backends import registry
    from zapcli.backends.cli_stream import LinePump

    r, w = os.pipe()

    def feed() -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(w, view[:1 << 20]):]
        os.close(w)

    sink = _Null()
    pump = LinePump(r, registry.get(cli).parser(None), sink)
    writer = threading.Thread(target=feed)
    writer.start()
    t0 = time.thread_time()
    try:
        pump.pump()
    finally:
        os.close(r)
    cpu = time.thread_time() - t0
    writer.join()
    return cpu, pump.lines, sink.n


def parse(events: int) -> None:
    import orjson

    for cli in ("claude", "codex", "gemini", "opencode"):
        lines = [ln for f in sorted((FIXTURES / cli).glob("*.jsonl"))
                 for ln in f.read_bytes().splitlines() if ln.strip()]
        lines = (lines * (events // len(lines) + 1))[:events]
        data = b"\n".join(lines) + b"\n"
        best_ref = best = float("inf")
        for _ in range(5):
            t0 = time.thread_time()
            for ln in lines:
                orjson.loads(ln)
            best_ref = min(best_ref, time.thread_time() - t0)
            cpu, n, recs = _pump(data, cli)
            assert n == events, (n, events)
            best = min(best, cpu)
        per, ref = best / events * 1e6, best_ref / events * 1e6
        print(f"{cli}_parse_us_per_event {per:.2f}  orjson_loads_us {ref:.2f}  above_orjson_us "
              f"{per - ref:.2f} (goal <= 2.00)  records {recs}  mean_line_bytes "
              f"{len(data) // events}")


def largest() -> None:
    for mib in (5, 60):
        big = json.dumps({"type": "user", "session_id": "s", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t", "content": "z" * (mib << 20)}]}}).encode()
        data = big + b"\n" + json.dumps({"type": "result", "subtype": "success",
                                          "result": "after"}).encode() + b"\n"
        t0 = time.perf_counter()
        cpu, n, recs = _pump(data, "claude")
        print(f"line_{mib}MiB_handled {n == 2 and recs >= 1}  wall_s "
              f"{time.perf_counter() - t0:.2f}  cpu_s {cpu:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--skip-wall", action="store_true")
    ap.add_argument("--latency", type=float, nargs="*", default=[0.0, 1.0],
                    help="seconds the scripted model takes per turn (one wall figure each)")
    args = ap.parse_args()
    parse(args.events)
    largest()
    if not args.skip_wall:
        for latency in args.latency:
            wall(args.reps, latency)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
