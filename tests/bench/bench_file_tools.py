"""What opening every path beneath its root costs a file tool call (issue 27).

Usage: .venv/bin/python tests/bench/bench_file_tools.py [--calls 2000] [--runs 15]

The built-in agent's `read` of a 10 KB file (200 lines) and `write` of a
10 KB file in the workspace, as the model calls them (`ReadTool.run`,
`WriteTool.run` with the view a subagent gets: openat2 `RESOLVE_BENEATH`,
zapcli's own folders hidden), against the same calls the way they were made
before, by name with a plain `open()` (a copy of the old bodies below, on
`boundedread.open_regular`). Round by round, so drift hits both alike.
Goal: <= 1.2x each. Also, informational: the same with the `O_NOFOLLOW`
walk a kernel without openat2 gets.

The workspace is on a tmpfs (/dev/shm) where there is one: on a disk, a
`write` that truncates and rewrites a file waits for the previous one's
writeback, and that disk noise (milliseconds, both ways) would drown the
microseconds measured here.

Prints medians (microseconds per call) with their ratios. Taken on a shared
machine: figures vary with its load; the ratios are what to read.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _old_read(ctx, args):
    """The `read` tool's body before issue 27: checks and opens by name."""
    from zapcli.boundedread import open_regular
    from zapcli.tools._base import ToolError, is_binary, resolve_path, show_path
    from zapcli.tools.files import DEFAULT_LIMIT, SNIFF, _numbered

    path = resolve_path(ctx, args["path"])
    shown = show_path(ctx, path)
    if os.path.isdir(path):
        raise ToolError(f"{shown} is a directory")
    if not os.path.exists(path):
        raise ToolError(f"no such file: {shown}")
    with open(open_regular(path), "rb") as fb:
        if is_binary(fb.read(SNIFF)):
            raise ToolError("binary")
        fb.seek(0)
        return _numbered(io.TextIOWrapper(fb, encoding="utf-8", errors="replace"), shown, 1,
                         DEFAULT_LIMIT)


def _old_write(ctx, args):
    """The `write` tool's body before issue 27."""
    from zapcli.boundedread import open_regular
    from zapcli.tools._base import ToolError, ok, resolve_path, show_path

    path = resolve_path(ctx, args["path"])
    shown = show_path(ctx, path)
    if os.path.isdir(path):
        raise ToolError(f"{shown} is a directory")
    existed = os.path.exists(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd = open_regular(path, write=True)
    os.ftruncate(fd, 0)
    with open(fd, "w", encoding="utf-8", newline="") as f:
        f.write(args["content"])
    return ok(f"{'overwrote' if existed else 'created'} {shown}")


def _per_call_us(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=15)
    opts = ap.parse_args()
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    tmp = Path(tempfile.mkdtemp(prefix="bench-file-tools-", dir=shm))
    os.environ["ZAPCLI_HOME"] = str(tmp / "state")
    os.environ["ZAPCLI_CONFIG_HOME"] = str(tmp / "config")
    try:
        return _measure(tmp, opts.calls, opts.runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(tmp: Path, calls: int, runs: int) -> int:
    from zapcli import beneath
    from zapcli.agent.types import ToolContext
    from zapcli.host.agent import file_view
    from zapcli.tools.files import ReadTool, WriteTool

    ws = tmp / "home" / "user" / "projects" / "ws"
    (ws / "src" / "pkg").mkdir(parents=True)
    (tmp / "state").mkdir()
    text = "".join(f"line {i:03d} " + "x" * 40 + "\n" for i in range(200))  # 10.2 KB
    (ws / "src" / "pkg" / "mod.py").write_text(text)
    ctx = ToolContext(str(ws), str(ws), view=file_view(str(ws), ()))
    read_args = {"path": "src/pkg/mod.py"}
    write_args = {"path": "src/pkg/out.py", "content": text}
    read, write = ReadTool(), WriteTool()
    assert read.run(read_args, ctx).ok and write.run(write_args, ctx).ok
    assert _old_read(ctx, read_args).ok and _old_write(ctx, write_args).ok
    walk = ToolContext(str(ws), str(ws), view=file_view(str(ws), ()))
    figures: dict[str, list[float]] = {k: [] for k in ("read", "read_old", "write", "write_old",
                                                        "read_walk", "write_walk")}
    has_openat2 = beneath._load() is not None
    for _ in range(runs):
        figures["read"].append(_per_call_us(lambda: read.run(read_args, ctx), calls))
        figures["read_old"].append(_per_call_us(lambda: _old_read(ctx, read_args), calls))
        figures["write"].append(_per_call_us(lambda: write.run(write_args, ctx), calls))
        figures["write_old"].append(_per_call_us(lambda: _old_write(ctx, write_args), calls))
        saved = beneath._openat2[:]
        beneath._openat2[:] = [None]  # a kernel without openat2: the O_NOFOLLOW walk
        try:
            figures["read_walk"].append(_per_call_us(lambda: read.run(read_args, walk), calls))
            figures["write_walk"].append(_per_call_us(lambda: write.run(write_args, walk), calls))
        finally:
            beneath._openat2[:] = saved
    med = {k: statistics.median(v) for k, v in figures.items()}
    print(f"# openat2 {'available' if has_openat2 else 'NOT available (the walk is measured twice)'}; "
          f"{calls} calls x {runs} rounds in {tmp}")
    for name in ("read", "write"):
        ratio = med[name] / med[f"{name}_old"]
        print(f"file_{name}_10kb_us {med[name]:.1f} ratio {ratio:.2f}x reference "
              f"{med[name + '_old']:.1f} (the old plain open() path; goal <= 1.2x)")
        walk_ratio = med[f"{name}_walk"] / med[f"{name}_old"]
        print(f"file_{name}_10kb_walk_us {med[name + '_walk']:.1f} ratio {walk_ratio:.2f}x "
              "(informational: without openat2)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
