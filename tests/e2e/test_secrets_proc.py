"""Secrets never reach the model (#12.1): the runner's environment block
holds none (a tool can read /proc/<runner>/environ), and every tool result is
masked before the model sees it, as before the trail."""

from __future__ import annotations

import json

from tests.conftest import record_of, wait_until
from zapcli.testing import ScriptedServer

KEY = "sk-test-model-key-0123456789"
TOKEN = "ghp_other_token_abcdefgh"


def test_no_tool_can_read_a_secret_from_the_runner(zap):
    """Without the sandbox (whose own pid namespace would hide the runner),
    what a same-user tool reads from /proc/<runner> holds no key."""
    (zap.cwd / "leak.txt").write_text(f"in a file: {TOKEN}\n")
    cmd = ("tr '\\0' '\\n' < /proc/$PPID/environ; echo; cat /proc/$PPID/cmdline; echo; "
           "cat leak.txt")
    script = [{"match": "peek", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]},
        {"text": "done"}]}]
    with ScriptedServer(script) as srv:
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY=KEY,
                       GH_TOKEN=TOKEN)
        proc = zap("spawn", "--approval", "full", "--no-sandbox", "--", "peek at the environment")
        sid = proc.out.strip()
        pid = int(wait_until(lambda: record_of(zap, sid, "start"), 10)["pid"])
        environ = open(f"/proc/{pid}/environ", "rb").read()
        assert b"ZAPCLI_HOME" in environ  # it is the runner's block we read
        assert KEY.encode() not in environ and TOKEN.encode() not in environ
        assert zap("wait", sid, "--timeout", "60").returncode == 0
        second = json.dumps(srv.requests[1])
    assert "ZAPCLI_HOME" in second  # the tool really printed the runner's environment
    assert KEY not in second and TOKEN not in second
    assert "in a file: ***" in second  # masked before the model, like the trail
