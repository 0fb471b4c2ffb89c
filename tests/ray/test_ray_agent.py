"""The built-in agent on the worker node, talking to a scripted model on this
machine: it completes, and approve / deny / send from the caller reach it
(through the inbox the node side polls), each decision within 500 ms; a key
forwarded by `ray.env` is not in the node runner's environment block."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import Zap, trail_records, wait_until
from tests.ray import cluster
from tests.ray.helpers import node_file, poll, pool_of, remote
from zapcli.testing import ScriptedServer

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]'")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(240)]

KEY = "sk-test-secret-abcdef123456"


def _bash_then_text(marker: str) -> dict:
    return {"match": marker, "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo {marker}-ran; echo $OPENAI_API_KEY"}}]},
        {"text": f"{marker} finished"}]}


def _arrival(info, sid: str, rtype: str, since: float) -> float:
    """Seconds from `since` until a caller record of `rtype` is in the node's trail."""
    path = node_file(info, sid)
    assert wait_until(lambda: any(r["type"] == rtype and r.get("from_caller")
                                  for r in trail_records(path)), 60, 0.01), f"no {rtype} on the node"
    return time.monotonic() - since


def test_the_agent_on_the_node_takes_approve_deny_and_send(zap: Zap, shared_cluster) -> None:
    go = zap.cwd / "go"  # the node is this machine: the steered one's tool waits for the test
    srv = ScriptedServer([
        _bash_then_text("approve-me"), _bash_then_text("deny-me"),
        {"match": "steer-me", "turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": f"until [ -e {go} ]; do sleep 0.1; done"}}]},
            {"text": "steered"}]},
    ])
    srv.start()
    try:
        # The provider's address and key reach the node through ray.env (in the job's package).
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY=KEY)
        zap = remote(zap, shared_cluster, ray={"env": ["OPENAI_BASE_URL", "OPENAI_API_KEY"]})
        ids = {}
        for marker, extra in (("approve-me", ()), ("deny-me", ()), ("steer-me", ("--approval", "full"))):
            res = zap("spawn", *extra, "--", marker)
            assert res.returncode == 0, res.err
            ids[marker] = res.out.strip()
        for marker in ("approve-me", "deny-me"):
            view = wait_until(lambda m=marker: (v := poll(zap, ids[m]))["status"] == "awaiting_approval" and v, 90, 0.2)
            assert view["pending_approval"]["tool"] == "bash"  # type: ignore[index]
        t0 = time.monotonic()
        assert zap("approve", ids["approve-me"]).returncode == 0
        approve_s = _arrival(shared_cluster, ids["approve-me"], "approval_decision", t0)
        t0 = time.monotonic()
        assert zap("deny", ids["deny-me"], "--reason", "not on the cluster").returncode == 0
        deny_s = _arrival(shared_cluster, ids["deny-me"], "approval_decision", t0)
        wait_until(lambda: any(r["type"] == "tool_call" for r in trail_records(node_file(shared_cluster, ids["steer-me"]))), 60, 0.1)
        assert zap("send", ids["steer-me"], "also check the docs").returncode == 0
        _arrival(shared_cluster, ids["steer-me"], "steer", time.monotonic())  # on the node before
        go.touch()  # its tool ends (a loaded machine may ship it later than the next model call)
        assert zap("wait", *ids.values(), "--timeout", "90").returncode == 0
        approved = zap.json("replay", ids["approve-me"])["records"]
        result = next(r for r in approved if r["type"] == "tool_result")
        assert result["ok"] and "approve-me-ran" in result["content"] and KEY not in result["content"]
        denied = next(r for r in zap.json("replay", ids["deny-me"])["records"] if r["type"] == "tool_result")
        assert not denied["ok"] and "not on the cluster" in denied["content"]
        assert zap("output", ids["approve-me"]).out.rstrip().endswith("approve-me finished")
        steered = [m for req in srv.requests for m in req["messages"]
                   if m["role"] == "user" and m["content"] == "also check the docs"]
        assert steered, "the message reached the model on the node"
        pool_job = cluster._get_json(f"{shared_cluster.dashboard}/api/jobs/{pool_of(zap)['job']}")
        assert KEY not in json.dumps(pool_job)  # the dashboard shows a job's entrypoint and env_vars
        for sid in ids.values():  # the key reached the node, but no trail and not the dashboard
            assert KEY not in zap.trail(sid).read_text() and KEY not in node_file(shared_cluster, sid).read_text()
        # a figure, not an assertion (tests never assert speed): bench_ray.py measures it
        print(f"decision on the node {approve_s * 1000:.0f} ms / {deny_s * 1000:.0f} ms after approve/deny began")
    finally:
        srv.stop()


def test_a_forwarded_key_is_not_in_the_runners_environment_on_the_node(zap: Zap, shared_cluster) -> None:
    """As locally (tests/e2e/test_secrets_proc.py): a key `ray.env` forwards
    reaches the runner outside its environment block, which any same-user
    tool on the node could read; the model calls with it still work (the
    server refuses any other key)."""
    script = [{"match": "peek", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo peeked"}}]}, {"text": "peek done"}]}]
    with ScriptedServer(script, api_key=KEY) as srv:
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY=KEY)
        zap = remote(zap, shared_cluster, ray={"env": ["OPENAI_BASE_URL", "OPENAI_API_KEY"]})
        res = zap("spawn", "--", "peek")
        assert res.returncode == 0, res.err
        sid = res.out.strip()
        # parked on the approval of its tool call: the runner is alive, its first model call made
        view = wait_until(lambda: (v := poll(zap, sid))["status"] in ("awaiting_approval", "failed") and v, 90, 0.2)
        assert view["status"] == "awaiting_approval", view  # type: ignore[index]
        start = next(r for r in trail_records(node_file(shared_cluster, sid)) if r["type"] == "start")
        environ = open(f"/proc/{start['pid']}/environ", "rb").read()
        assert b"ZAPCLI_HOME=" in environ and b"OPENAI_BASE_URL=" in environ  # the node runner's block
        assert KEY.encode() not in environ
        assert zap("approve", sid).returncode == 0
        assert zap("wait", sid, "--timeout", "90").returncode == 0
        assert zap("output", sid).out.rstrip().endswith("peek done")
        assert len(srv.requests) == 2
