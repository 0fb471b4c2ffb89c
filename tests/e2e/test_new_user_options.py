"""A new user's reports (offline, `--cli sh`, from the README and docs):
options that contradicted each other or were taken in part without a word.
`poll --no-wait --wait-secs N` is refused naming both."""

from __future__ import annotations

import json

import pytest


@pytest.mark.timeout(60)
def test_poll_refuses_no_wait_with_wait_secs_naming_both(zap):
    """Accepted silently before (it checked once, the wait asked for dropped)."""
    sid = zap.spawn_sh("echo hi")
    for args in (("--no-wait", "--wait-secs", "3"), ("--wait-secs", "0", "--no-wait")):
        res = zap("poll", *args, sid)
        assert res.returncode == 2 and res.out == "", (args, res.out)
        assert "--no-wait" in res.err and "--wait-secs" in res.err, res.err
        assert "Traceback" not in res.err
    doc = json.loads(zap("poll", "--json", "--no-wait", "--wait-secs", "3", sid).out)
    assert doc["error"]["code"] == "usage" and doc["error"]["exit_code"] == 2
    tool = zap("call", json.dumps({"action": "poll", "ids": [sid], "no_wait": True, "wait_secs": 3}))
    assert tool.returncode == 2 and "`no_wait` and `wait_secs`" in tool.out, tool.out
    assert zap("poll", "--no-wait", sid).returncode == 0  # either alone still works
    assert zap("poll", "--wait-secs", "1", sid).returncode == 0
