"""Trail writer throughput (docs/explanation/rules.md#the-trail, docs/explanation/rules.md#measured).

Usage: .venv/bin/python tests/bench/bench_trail.py [--batches 15] [--batch 100000] [--records 200000]

1. Calling-thread cost of `TrailWriter.append`: wall time of batches of 100k
   appends of a realistic mix (text deltas, tool_call / tool_result pairs,
   usage), while the writer's background thread flushes every 250 ms as in a
   real child (so GIL contention with encoding is included). Median µs per
   append over the batches, against a bare `deque.append` loop over the same
   items measured in the same run (goal <= 2 µs).
2. End to end: append N records (no text deltas, so nothing is merged and
   every append is one line) then `close()`; records on disk / elapsed, median
   of a few repetitions, against a bare loop of `orjson.dumps` + one `os.write`
   of the same records to a file.

Records are masked against two 40-character fake secrets, as a child with
API keys in its environment would be.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import deque
from pathlib import Path

import _install

SECRETS = [b"sk-bench-" + b"a" * 31, b"ghp_bench" + b"b" * 31]


def realistic_items(n: int, *, with_deltas: bool = True) -> list[tuple[str, dict]]:
    """A model-stream-like mix: mostly text deltas, a tool call/result pair
    every ~20 records, a usage record every ~100."""
    items: list[tuple[str, dict]] = []
    words = ["the ", "function ", "returns ", "a ", "list ", "of ", "paths ", "\n"]
    i = 0
    while len(items) < n:
        i += 1
        if i % 100 == 0:
            items.append(("usage", {"model": "gpt-4o-mini", "input_tokens": 1200 + i,
                                    "output_tokens": 300, "cached_tokens": 1024}))
        elif i % 20 == 0 or not with_deltas:
            cid = f"call_{i:08d}"
            items.append(("tool_call", {"call_id": cid, "name": "read_file",
                                        "arguments": {"path": f"src/module_{i % 50}.py", "limit": 200}}))
            if len(items) < n:
                items.append(("tool_result", {"call_id": cid, "ok": True,
                                              "content": ("def f(x):\n    return x * 2\n" * 30)[: 200 + i % 800],
                                              "duration_ms": 3}))
        else:
            items.append(("text", {"delta": words[i % len(words)]}))
    return items[:n]


def bench_append(batches: int, batch: int, workdir: Path) -> tuple[float, float]:
    """(median µs per TrailWriter.append, median µs per bare deque.append)."""
    from zapcli.trail.writer import TrailWriter

    items = realistic_items(batch)
    path = workdir / "append.jsonl"
    path.touch(mode=0o600)
    w = TrailWriter(path, start_seq=2, secrets=SECRETS)
    ours: list[float] = []
    bare: list[float] = []
    try:
        for _ in range(batches + 1):  # first round is warm-up
            dq: deque = deque()
            dq_append = dq.append
            t0 = time.perf_counter()
            for rtype, fields in items:
                dq_append((rtype, fields))
            bare.append((time.perf_counter() - t0) / batch * 1e6)
            del dq

            append = w.append
            t0 = time.perf_counter()
            for rtype, fields in items:
                append(rtype, fields)
            ours.append((time.perf_counter() - t0) / batch * 1e6)
            w.flush()  # untimed: keep the queue from growing across batches
            path.write_bytes(b"")  # and the file from growing (O_APPEND keeps working)
    finally:
        w.close()
    return statistics.median(ours[1:]), statistics.median(bare[1:])


def bench_end_to_end(n: int, reps: int, workdir: Path) -> tuple[float, float, int]:
    """(median records/s via TrailWriter, median records/s bare, lines on disk)."""
    import orjson

    from zapcli.trail.writer import TrailWriter

    items = realistic_items(n, with_deltas=False)
    ours: list[float] = []
    bare: list[float] = []
    lines = 0
    for rep in range(reps):
        path = workdir / f"e2e-{rep}.jsonl"
        path.touch(mode=0o600)
        t0 = time.perf_counter()
        w = TrailWriter(path, start_seq=2, secrets=SECRETS)
        for rtype, fields in items:
            w.append(rtype, fields)
        w.close()
        elapsed = time.perf_counter() - t0
        data = path.read_bytes()
        lines = data.count(b"\n")
        if lines != n:
            raise RuntimeError(f"expected {n} records on disk, found {lines}")
        ours.append(lines / elapsed)
        path.unlink()

        path = workdir / f"bare-{rep}.jsonl"
        t0 = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        seq = 2
        out = []
        for rtype, fields in items:
            seq += 1
            out.append(orjson.dumps({"v": 1, "seq": seq, "ts": time.time(), "type": rtype, **fields}) + b"\n")
        os.write(fd, b"".join(out))
        os.close(fd)
        bare.append(n / (time.perf_counter() - t0))
        path.unlink()
    return statistics.median(ours), statistics.median(bare), lines


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=5)
    opts = ap.parse_args()

    inst = _install.build()
    try:
        inst.use_in_process()
        with tempfile.TemporaryDirectory(prefix="trail-", dir=inst.root) as tmp:
            work = Path(tmp)
            us, us_bare = bench_append(opts.batches, opts.batch, work)
            print(f"append_us_per_record {us:.2f}  ratio_vs_deque_append {_install.fmt_ratio(us, us_bare)}"
                  f"  (goal <= 2 us; median of {opts.batches} batches of {opts.batch:,})")
            print(f"deque_append_us_per_record {us_bare:.3f}  (reference: bare deque.append loop)")
            rps, rps_bare, lines = bench_end_to_end(opts.records, opts.reps, work)
            print(f"end_to_end_records_per_s {rps:,.0f}  ratio_vs_bare_orjson_write "
                  f"{_install.fmt_ratio(rps, rps_bare)}  ({lines:,} records appended then close(), "
                  f"median of {opts.reps})")
            print(f"bare_orjson_write_records_per_s {rps_bare:,.0f}  (reference: orjson.dumps + one os.write)")
    finally:
        inst.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
