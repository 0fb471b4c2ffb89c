"""Where the suite's CPU goes, process by process (issue 32; not run by make test).

Usage (as root: it turns the kernel's process accounting on):

    .venv/bin/python tests/bench/suite_processes.py -- make test

Runs the command with BSD process accounting (`acct(2)`, version 3 records)
writing to a temporary file, then prints what every process that ended
meanwhile spent, by kind (Python, the agent CLIs, Ray's processes, git,
bubblewrap), by command name, and the Python processes by CPU each.
Accounting sees the whole machine: run it where nothing else runs.
`tests/bench/suite_cpu.py` gives the same CPU test by test.
"""

from __future__ import annotations

import ctypes
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h), 64 bytes
KINDS = (("python", ("python", "zapcli", "pytest")),
         ("agent CLIs", ("node", "claude", "codex", "gemini", "opencode", "qwen", "pi", "JITWorker",
                         "JSCWarmUp", "HeapHelper", "Bun Pool", "PipeReaderThd", "PipeDumpThd",
                         "HTTP Client", "mi-scavenger", "tokio-rt-worker")),
         ("ray", ("ray", "raylet", "gcs_", "grpc_", "event_engine", "default-executo", "client.poll",
                  "timer_manager", "node_manager", "resolver-execut", "worker.")),
         ("git", ("git",)), ("bubblewrap", ("bwrap",)))
EDGES = (0, 0.05, 0.1, 0.3, 1, 10, float("inf"))


def _seconds(comp: int) -> float:
    """A comp_t (13-bit mantissa, 3-bit base-8 exponent) of AHZ (100 Hz) ticks."""
    return ((comp & 0x1FFF) << (3 * (comp >> 13))) / 100.0


def records(path: Path) -> list[tuple[str, float]]:
    data = path.read_bytes()
    out = []
    for off in range(0, len(data) - RECORD.size + 1, RECORD.size):
        rec = RECORD.unpack_from(data, off)
        if rec[1] == 3:
            out.append((rec[-1].split(b"\0")[0].decode(errors="replace"), _seconds(rec[10]) + _seconds(rec[11])))
    return out


def kind(comm: str) -> str:
    return next((name for name, starts in KINDS if comm.startswith(starts)), "other")


def report(recs: list[tuple[str, float]]) -> None:
    total = sum(c for _n, c in recs) or 1.0
    print(f"processes {len(recs)}  cpu {total:.1f} s")
    for label, key in (("by kind", kind), ("by command name", lambda n: n)):
        cpu: Counter[str] = Counter()
        count: Counter[str] = Counter()
        for name, c in recs:
            cpu[key(name)] += c
            count[key(name)] += 1
        print(f"-- {label}")
        for k, c in cpu.most_common(15):
            print(f"{c:9.1f} s {100 * c / total:5.1f}%  {count[k]:7d} processes  {k}")
    print("-- Python processes by CPU each")
    py = [c for n, c in recs if kind(n) == "python"]
    for lo, hi in zip(EDGES, EDGES[1:], strict=False):
        inside = [c for c in py if lo <= c < hi]
        print(f"{lo:5}-{hi:<5} s  {len(inside):7d} processes  {sum(inside):8.1f} s")


def main(argv: list[str]) -> int:
    if "--" not in argv or not argv[argv.index("--") + 1:]:
        print(__doc__)
        return 2
    command = argv[argv.index("--") + 1:]
    libc = ctypes.CDLL(None, use_errno=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pacct"
        path.touch()
        if libc.acct(str(path).encode()) != 0:
            print(f"acct(2) refused: errno {ctypes.get_errno()} (root is needed)", file=sys.stderr)
            return 1
        try:
            rc = subprocess.call(command)
        finally:
            libc.acct(None)
        report(records(path))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
