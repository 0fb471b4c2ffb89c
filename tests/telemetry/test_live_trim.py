"""The live follower (telemetry.live) keeps its place when the runner trims
the trail while it runs (trail.trim replaces the file): every tool call is
sent once, none twice, none lost.

Imports `zapcli.telemetry.live`, `zapcli.trail`. The exporter here is a
recording sink standing in for the OTLP exporter (the network side is tested
against a real receiver in test_fleet.py); the trail, its trim and the
follower's reads are the real ones.
"""

from __future__ import annotations

from tests.conftest import isolate
from zapcli.telemetry.live import Live
from zapcli.trail import store, trim


class Recording:
    def __init__(self) -> None:
        self.spans: list = []

    def send(self, agent, spans) -> None:
        self.spans.extend(spans)

    def close(self, wait_s: float) -> bool:
        return True


def _calls(path, first: int, count: int, payload: str) -> None:
    for i in range(first, first + count):
        store.append(path, "tool_call", {"call_id": f"c{i}", "name": "bash", "arguments": {"i": i}})
        store.append(path, "tool_result", {"call_id": f"c{i}", "ok": True, "content": payload,
                                           "duration_ms": 1})


def test_a_trim_mid_run_neither_repeats_nor_loses_a_span(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    sid = "sa_20261201_0000abcd"
    path = store.create_trail(sid, {"session": "s", "cli": "zapcli", "task": "t"}, [])
    store.append(path, "start", {"pid": 1})
    sink = Recording()
    live = Live(path, sid, sink, poll_s=3600)  # stepped by hand below
    try:
        _calls(path, 0, 40, "x" * 20_000)  # ~800 KB
        live.step()
        sent_before = [s for s in sink.spans if s.name.startswith("execute_tool")]
        assert len(sent_before) == 40
        ino = path.stat().st_ino
        assert trim.trim(path, over=200_000, keep=100_000) > 0
        assert path.stat().st_ino != ino  # replaced, and shorter than where the follower was
        _calls(path, 40, 5, "y")
        live.step()
    finally:
        live.stop(wait_s=0)
    tools = [s for s in sink.spans if s.name.startswith("execute_tool")]
    ids = [s.attributes.get("gen_ai.tool.call.id") for s in tools]
    assert sorted(ids) == sorted(f"c{i}" for i in range(45)), ids
