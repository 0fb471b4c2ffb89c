"""A built-in-agent child's start-up: launch to its first model request (docs/explanation/rules.md#models, docs/explanation/rules.md#measured).

Usage: .venv/bin/python tests/bench/bench_agent_startup.py [--runs 15]

Serves a scripted OpenAI-compatible model in this process (ScriptedServer on
127.0.0.1, real HTTP; its rule answers every conversation with one short text
turn, so each child completes after one request). Spawns subagents one at a
time with the compiled copy of zapcli (`python -m zapcli spawn TASK`, default
backend, env OPENAI_BASE_URL / ZAPCLI_MODEL=scripted / OPENAI_API_KEY, temp
ZAPCLI_HOME), each with a unique task so the server tells their conversations
apart, and waits (untimed) until its supervisor has exited before the next.

Figure per subagent: (time.monotonic() when the server had read that
conversation's first request) − (the `process` record's `mono`, taken by
spawn just before it launched the child). time.monotonic is CLOCK_MONOTONIC,
system-wide on Linux, so the two processes' readings compare. Also split at
the `start` record's `mono` (taken first thing in the child's main): launch →
child main (interpreter + zapcli imports) and child main → first request
(trail writer, settings, client, tools, prompt, `openai` import, HTTP).

References, interleaved with the spawns round by round (so drift hits all
alike): `python -I -c pass` and `python -c "import openai"` with the bench
interpreter. Prints medians in ms and ratios to both references.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import threading
import time
from typing import Any

import _install

SESSION = "bench-agent-startup"
TASK_PREFIX = "startup probe "


def make_server(ScriptedServer: type) -> Any:
    class ReceiptServer(ScriptedServer):
        """Records time.monotonic() when each conversation's first request has been read."""

        def __init__(self, *a: Any, **kw: Any):
            super().__init__(*a, **kw)
            self.first_seen: dict[str, float] = {}
            self._seen_lock = threading.Lock()

        def record(self, body: dict[str, Any]) -> None:
            now = time.monotonic()
            user = next((m.get("content") for m in body.get("messages") or []
                         if isinstance(m, dict) and m.get("role") == "user"), None)
            if isinstance(user, str):
                with self._seen_lock:
                    self.first_seen.setdefault(user, now)
            super().record(body)

    return ReceiptServer([{"turns": [{"text": "done.", "usage": {"prompt_tokens": 200,
                                                                  "completion_tokens": 2}}]}])


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    opts = ap.parse_args()
    if opts.runs < 10:
        ap.error("need --runs >= 10")

    inst = _install.build()
    try:
        inst.use_in_process()
        import _fixtures

        from zapcli.testing import ScriptedServer

        with make_server(ScriptedServer) as srv:
            return _bench(inst, srv, opts.runs, _fixtures)
    finally:
        inst.cleanup()


def _bench(inst: _install.Install, srv: Any, runs: int, _fixtures: Any) -> int:
    home = inst.new_home("agent")
    env = inst.env(home, session=SESSION, extra={
        "OPENAI_BASE_URL": srv.base_url, "ZAPCLI_MODEL": "scripted", "OPENAI_API_KEY": "x"})
    env_ref = inst.env(inst.new_home("ref"), session=SESSION)
    ref_openai_cmd = [inst.python, "-c", "import openai"]
    splits: list[tuple[float, float]] = []  # (launch → child main, child main → first request)
    counter = iter(range(1_000_000))

    def ref_pass() -> float:
        return inst.timed(inst.ref_pass, env_ref)[0]

    def ref_openai() -> float:
        return inst.timed(ref_openai_cmd, env_ref)[0]

    def agent() -> float:
        task = f"{TASK_PREFIX}{next(counter)}"
        sid = inst.run(inst.zapcli("spawn", task), env).stdout.decode().strip()
        try:
            status = _fixtures.wait_done(home, sid, timeout=60)
        except RuntimeError:
            _fixtures.kill_subagent(home, sid)
            raise
        recs = _fixtures.trail_records(home, sid)
        if status != "completed":
            err = (home / "subagents" / f"{sid}.err")
            detail = err.read_text(errors="replace")[-1500:] if err.exists() else ""
            raise RuntimeError(f"subagent {sid} ended {status}: "
                               f"{[r for r in recs if r.get('type') == 'status']} {detail}")
        launched = next(r["mono"] for r in recs if r.get("type") == "process")
        main_at = next(r["mono"] for r in recs if r.get("type") == "start")
        first = srv.first_seen.get(task)
        if first is None:
            raise RuntimeError(f"the server saw no request for {task!r} ({sid})")
        splits.append((main_at - launched, first - main_at))
        shutil.rmtree(home / "subagents", ignore_errors=True)  # keep the home small between runs
        return first - launched

    warmup = 2
    samples = _install.interleaved(runs, {"python_pass": ref_pass, "import_openai": ref_openai,
                                          "agent": agent}, warmup=warmup)
    splits = splits[warmup:]

    pass_ms = _install.median_ms(samples["python_pass"])
    openai_ms = _install.median_ms(samples["import_openai"])
    agent_ms = _install.median_ms(samples["agent"])
    to_main = statistics.median(a for a, _ in splits) * 1000
    to_request = statistics.median(b for _, b in splits) * 1000
    spread = sorted(samples["agent"])
    print(f"python_pass_median_ms {pass_ms:.1f}  (reference: bench venv python -I -c pass, {runs} runs)")
    print(f"import_openai_median_ms {openai_ms:.1f}  ratio_vs_python_pass {_install.fmt_ratio(openai_ms, pass_ms)}"
          f"  (reference: python -c 'import openai')")
    print(f"agent_first_request_median_ms {agent_ms:.1f}  ratio_vs_python_pass "
          f"{_install.fmt_ratio(agent_ms, pass_ms)}  ratio_vs_import_openai "
          f"{_install.fmt_ratio(agent_ms, openai_ms)}  (launch -> first model request received; "
          f"{runs} subagents, min {spread[0] * 1000:.1f} max {spread[-1] * 1000:.1f})")
    print(f"agent_launch_to_main_median_ms {to_main:.1f}  ratio_vs_python_pass "
          f"{_install.fmt_ratio(to_main, pass_ms)}  (process record -> start record)")
    print(f"agent_main_to_request_median_ms {to_request:.1f}  ratio_vs_import_openai "
          f"{_install.fmt_ratio(to_request, openai_ms)}  (start record -> first model request received)")
    if len(srv.first_seen) != runs + warmup:
        raise RuntimeError(f"expected {runs + warmup} conversations, the server saw {len(srv.first_seen)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
