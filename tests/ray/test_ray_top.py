"""`zapcli top` over Ray subagents, as over local ones: the EXEC column says
ray, a node's pending request reaches the screen (its files brought home),
`a` approves it in place and the agent on the node goes on, and `x` kills a
Ray subagent — each through the ops verbs that already handle Ray."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Zap, wait_until
from tests.ray.helpers import poll, remote
from zapcli.testing import ScriptedServer

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]'")
pytest.importorskip("textual", reason="the tui extra is not installed (make install does it)")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(300)]

KEY = "sk-test-top-ray-0123456789"


def test_top_approves_and_kills_ray_subagents(zap: Zap, shared_cluster, monkeypatch) -> None:
    from tests.tui.conftest import Top, run_top

    srv = ScriptedServer([{"match": "RAY-TOP", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran-on-the-node"}}]},
        {"text": "RAY-TOP finished"}]}])
    srv.start()
    try:
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY=KEY)
        zap = remote(zap, shared_cluster, ray={"env": ["OPENAI_BASE_URL", "OPENAI_API_KEY"]})
        for name in ("OPENAI_BASE_URL", "ZAPCLI_MODEL", "OPENAI_API_KEY", "RAY_ADDRESS"):
            monkeypatch.setenv(name, zap.env[name])
        res = zap("spawn", "--", "RAY-TOP: run it")
        assert res.returncode == 0, res.err
        asks = res.out.strip()
        res = zap("spawn", "--cli", "sh", "--", "sleep 600")
        assert res.returncode == 0, res.err
        sleeper = res.out.strip()
        wait_until(lambda: poll(zap, sleeper)["status"] == "running", 120, 0.5)

        async def scenario(top: Top) -> None:
            await top.until(lambda: top.status(asks) == "awaiting_approval", 120,
                            "the node's request on screen")
            assert top.row(asks).executor == "ray" and top.row(sleeper).executor == "ray"
            assert "ray" in top.table_text()
            await top.until(lambda: top.screen.table.selected == asks and top.ask_text(), 10)
            assert "echo ran-on-the-node" in top.ask_text()
            await top.press("a")
            await top.until(lambda: top.status(asks) == "completed", 120, "it completes")
            assert top.screen.table.select(sleeper)
            await top.press("x")
            await top.until(lambda: type(top.app.screen).__name__ == "Confirm", 5)
            await top.press("y")
            await top.until(lambda: top.status(sleeper) == "cancelled", 120, "cancelled")

        run_top(scenario)
    finally:
        srv.stop()
        zap("kill", "--all")
    records = zap.json("replay", asks)["records"]
    result = next(r for r in records if r["type"] == "tool_result")
    assert result["ok"] and "ran-on-the-node" in result["content"]
    assert "ran-on-the-node" in json.dumps(srv.requests[-1])
    assert poll(zap, sleeper)["status"] == "cancelled"
