"""zapcli as a tool (docs/explanation/rules.md#tool-surfaces): how soon a stdio server answers `initialize`
(#24.2: goal <= 1.5x `python -c "import mcp.server.lowlevel"`, the SDK's
import alone, measured in the same run), spawn through a running `zapcli mcp
serve` vs the `zapcli spawn` command, `zapcli call` vs the equivalent
command, and the server's memory idle and with 50 subagents tracked.

Usage: .venv/bin/python tests/bench/bench_mcp.py [--runs 20]

Everything runs from the compiled copy (`_install.build()`), state in temp
folders, rounds interleaved. The `initialize` figure is the wall time from
starting `zapcli mcp serve` (its `initialize` request already written to its
stdin) to the answer's line on its stdout. The MCP figures are client-side wall time of one
tool call over stdio (request -> result with the id), through the official SDK
client, server already running. After each spawn the bench waits (untimed)
for the subagent to finish, so its start-up never competes with the next
measurement. Memory is the server process's RSS (psutil). Also prints the
size of what a model reads for one poll result: the text, the compact
structuredContent, and the full JSON document.
"""

from __future__ import annotations

import argparse
import sys
import time

import _install

SESSION = "bench-mcp"


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    opts = ap.parse_args()
    inst = _install.build()
    try:
        import anyio

        _initialize(inst, max(opts.runs // 2, 5))
        return anyio.run(_bench, inst, opts.runs)
    finally:
        inst.cleanup()


INITIALIZE = ('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
              '"2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}\n')


def _initialize(inst: _install.Install, runs: int) -> None:
    import subprocess

    env = inst.env(inst.new_home("init"))

    def answered() -> float:
        t0 = time.perf_counter()
        proc = subprocess.Popen(inst.zapcli("mcp", "serve"), env=env, cwd=inst.scratch,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INITIALIZE.encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        took = time.perf_counter() - t0
        if b'"result"' not in line:
            raise RuntimeError(f"no initialize answer: {line[:300]!r}")
        proc.stdin.close()
        proc.wait(30)
        return took

    def sdk_import() -> float:
        return inst.timed([inst.python, "-c", "import mcp.server.lowlevel"], env)[0]

    got = _install.interleaved(runs, {"initialize": answered, "import": sdk_import})
    init, ref = _install.median_ms(got["initialize"]), _install.median_ms(got["import"])
    print(f"stdio_initialize_median_ms {init:.1f}  ratio_vs_sdk_import "
          f"{_install.fmt_ratio(init, ref)} (goal <= 1.5x; python -c 'import mcp.server.lowlevel' "
          f"{ref:.1f} ms)")


def _server_pid() -> int:
    import os

    import psutil

    for child in psutil.Process(os.getpid()).children(recursive=True):
        if "mcp" in child.cmdline() and "serve" in child.cmdline():
            return int(child.pid)
    raise RuntimeError("mcp serve process not found")


async def _bench(inst: _install.Install, runs: int) -> int:
    import _fixtures
    import orjson
    import psutil
    from mcp import Client, StdioServerParameters

    home = inst.new_home("mcp")
    env = inst.env(home, session=SESSION)
    params = StdioServerParameters(command=inst.python, args=["-m", "zapcli", "mcp", "serve"],
                                   env=env, cwd=str(inst.scratch))
    async with Client(params) as client:
        await client.list_tools()
        server = psutil.Process(_server_pid())
        await client.call_tool("list", {})
        idle_rss = server.memory_info().rss

        samples: dict[str, list[float]] = {k: [] for k in (
            "mcp_spawn", "cli_spawn", "call_poll", "cli_poll", "call_list", "cli_list")}
        sid = ""
        for i in range(runs + 2):
            t0 = time.perf_counter()
            res = await client.call_tool("spawn", {"task": "true", "cli": "sh"})
            t_mcp = time.perf_counter() - t0
            sid = res.structured_content["id"]
            _fixtures.wait_done(home, sid)
            t_cli, proc = inst.timed(inst.zapcli("spawn", "--cli", "sh", "--", "true"), env)
            _fixtures.wait_done(home, proc.stdout.decode().strip())
            poll_doc = orjson.dumps({"action": "poll", "ids": [sid], "no_wait": True}).decode()
            t_cpoll = inst.timed(inst.zapcli("call", poll_doc), env)[0]
            t_poll = inst.timed(inst.zapcli("poll", "--no-wait", sid), env)[0]
            t_clist = inst.timed(inst.zapcli("call", '{"action": "list"}'), env)[0]
            t_list = inst.timed(inst.zapcli("list"), env)[0]
            if i >= 2:
                for name, t in zip(samples, (t_mcp, t_cli, t_cpoll, t_poll, t_clist, t_list),
                                   strict=True):
                    samples[name].append(t)

        tracked = []
        for _ in range(50):
            tracked.append((await client.call_tool("spawn", {"task": "sleep 5", "cli": "sh"}))
                           .structured_content["id"])
        await client.call_tool("wait", {"ids": tracked, "timeout": 120})
        await client.call_tool("list", {})
        busy_rss = server.memory_info().rss

        polled = await client.call_tool("poll", {"ids": [sid], "no_wait": True})
        text = polled.content[0].text
        compact = orjson.dumps(polled.structured_content)
    full = inst.run(inst.zapcli("poll", "--no-wait", "--json", sid), env).stdout

    med = {k: _install.median_ms(v) for k, v in samples.items()}
    print(f"mcp_spawn_median_ms {med['mcp_spawn']:.1f}  ratio_vs_cli_spawn "
          f"{_install.fmt_ratio(med['mcp_spawn'], med['cli_spawn'])} (goal < 1x)")
    print(f"cli_spawn_median_ms {med['cli_spawn']:.1f}  (reference: zapcli spawn --cli sh -- true)")
    for call, cli in (("call_poll", "cli_poll"), ("call_list", "cli_list")):
        print(f"{call}_median_ms {med[call]:.1f}  ratio_vs_{cli} "
              f"{_install.fmt_ratio(med[call], med[cli])} (goal <= 1.1x; {cli} {med[cli]:.1f} ms)")
    print(f"mcp_serve_rss_idle_mb {idle_rss / 2**20:.1f}")
    print(f"mcp_serve_rss_50_tracked_mb {busy_rss / 2**20:.1f}")
    print(f"poll_result_bytes text {len(text.encode())} structured {len(compact)} "
          f"full_json_document {len(full)}")
    print(f"# {runs} rounds", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
