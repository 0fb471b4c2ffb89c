"""Traces (docs/explanation/rules.md#fleets-traces-teams): what export costs a subagent's agent thread, and what
the `zapcli[otel]` extra costs start-up when no endpoint is set.

Usage: .venv/bin/python tests/bench/bench_telemetry.py [--runs 25] [--spans 5000]

1. Agent-thread µs per span, export on: the agent thread appends the records
   of a tool call (`tool_call` + `tool_result`, one span) through the batched
   trail writer while a live exporter follows the trail and sends the spans
   to an OTLP/HTTP sink on 127.0.0.1 (which counts what it received: every
   span must arrive). The same with export off is the reference. Goal ≤ 5 µs.
2. Start-up with the extra installed and no endpoint, against the same with
   `opentelemetry` made unimportable (a shadow package first on PYTHONPATH:
   "not installed"): `zapcli list`, and an `sh` subagent from `spawn` to its
   final status (the runner's start-up inside). Goal: ratio ≤ 1.02.
"""

from __future__ import annotations

import argparse
import http.server
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import _install


class _Sink(http.server.BaseHTTPRequestHandler):
    spans = 0

    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        _Sink.spans += sum(len(s.spans) for r in req.resource_spans for s in r.scope_spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def agent_thread_cost(n_spans: int, export: bool, url: str) -> tuple[float, int]:
    """(µs per span on the agent thread, spans made) for one trail."""
    from zapcli.telemetry import live, otlp
    from zapcli.trail import records
    from zapcli.trail.writer import TrailWriter

    folder = Path(tempfile.mkdtemp(prefix="bench-otel-"))
    path = folder / "sa_20260101_0000beef.jsonl"
    spawn = records.make("spawn", 0, {"session": "bench", "cli": "zapcli", "task": "bench",
                                      "trace": {"trace_id": "1" * 32, "span_id": "2" * 16}})
    path.write_bytes(records.encode(spawn, []))
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
    follower = None
    if export:
        otlp.quiet()
        follower = live.Live(path, "sa_20260101_0000beef", otlp.Exporter(schedule_delay_ms=200), poll_s=0.25)
    writer = TrailWriter(path, start_seq=0, secrets=[])
    spent = 0.0
    rounds, per = 20, max(n_spans // 20, 1)
    for r in range(rounds):  # bursts with pauses: the writer and the follower run in between
        t0 = time.perf_counter()
        for i in range(per):
            cid = f"c{r}_{i}"
            writer.append("tool_call", {"call_id": cid, "name": "read", "arguments": {"path": "x"}})
            writer.append("tool_result", {"call_id": cid, "ok": True, "content": "y", "duration_ms": 0})
        spent += time.perf_counter() - t0
        time.sleep(0.05)
    writer.append("status", {"status": "completed", "exit_code": 0, "reason": None})
    writer.close()
    if follower is not None:
        follower.stop(10.0)
    return spent / (rounds * per) * 1e6, rounds * per


def startup(inst: _install.Install, runs: int) -> dict[str, list[float]]:
    shadow = inst.root / "shadow"
    (shadow / "opentelemetry").mkdir(parents=True)
    (shadow / "opentelemetry" / "__init__.py").write_text("raise ImportError('not installed')\n")
    home = inst.new_home("otel")
    with_extra = inst.env(home)
    without = inst.env(home, extra={"PYTHONPATH": f"{inst.root}{os.pathsep}{shadow}"})
    for env in (with_extra, without):
        for key in [k for k in env if k.startswith("OTEL_")]:
            del env[key]
    probe = inst.run([inst.python, "-c", "import opentelemetry.sdk"], without, check=False)
    assert probe.returncode != 0, "the shadow package does not hide opentelemetry"

    def sh_subagent(env: dict[str, str]) -> float:
        t0 = time.perf_counter()
        sid = inst.run(inst.zapcli("spawn", "--cli", "sh", "--", "true"), env).stdout.decode().strip()
        trail = home / "subagents" / f"{sid}.jsonl"
        while b'"type":"status"' not in trail.read_bytes():
            time.sleep(0.002)
        took = time.perf_counter() - t0
        import orjson
        import psutil

        pid = next(orjson.loads(x)["pid"] for x in trail.read_bytes().splitlines() if b'"process"' in x)
        try:  # untimed: its runner's exit never competes with the next measurement
            psutil.Process(pid).wait(10)
        except psutil.Error:
            pass
        return took

    return _install.interleaved(runs, {
        "list, extra installed": lambda: inst.timed(inst.zapcli("list"), with_extra)[0],
        "list, extra hidden": lambda: inst.timed(inst.zapcli("list"), without)[0],
        "sh subagent, extra installed": lambda: sh_subagent(with_extra),
        "sh subagent, extra hidden": lambda: sh_subagent(without),
    })


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--spans", type=int, default=5000)
    opts = ap.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    inst = _install.build()
    try:
        inst.use_in_process(inst.new_home("inproc"))
        offs = [agent_thread_cost(opts.spans, False, url)[0] for _ in range(3)]
        ons = []
        for _ in range(3):
            before = _Sink.spans
            cost, made = agent_thread_cost(opts.spans, True, url)
            received = _Sink.spans - before
            if received < made:
                raise RuntimeError(f"the sink got {received} of {made} tool spans")
            ons.append(cost)
        on, off = statistics.median(ons), statistics.median(offs)
        print(f"agent-thread per span, export on: {on:.2f} µs (goal ≤ 5 µs); export off: {off:.2f} µs; "
              f"added by export: {on - off:+.2f} µs")
        times = startup(inst, opts.runs)
        for what in ("list", "sh subagent"):
            a = statistics.median(times[f"{what}, extra installed"])
            b = statistics.median(times[f"{what}, extra hidden"])
            print(f"{what} start-up, extra installed, no endpoint: {a * 1000:.1f} ms vs {b * 1000:.1f} ms "
                  f"without it: ratio {a / b:.3f} (goal ≤ 1.02)")
    finally:
        server.shutdown()
        inst.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
