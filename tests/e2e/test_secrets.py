"""Secrets: masked in every record and display, yet the task runs exactly as typed."""

from __future__ import annotations

SECRET = "supersecret123"


def test_task_with_a_secret_runs_unchanged_but_is_never_stored(zap):
    (zap.cwd / "ZT_A").touch()
    zap.env["MY_API_KEY"] = SECRET
    sid = zap.spawn_sh(f'echo "quoted: {SECRET}" > cap.txt; echo unq {SECRET} >> cap.txt; echo out {SECRET}')
    assert zap("wait", sid).returncode == 0
    assert (zap.cwd / "cap.txt").read_text() == f"quoted: {SECRET}\nunq {SECRET}\n"  # no glob, no ***
    for path in zap.home.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert "echo unq ***" in zap("list").out
    assert "out ***" in zap("output", sid).out


def test_a_secret_missing_from_the_childs_environment_fails_clearly(zap):
    zap.env["MY_API_KEY"] = SECRET
    proc = zap("spawn", "--cli", "sh", "--after", zap.spawn_sh("sleep 1"), "--", f"echo {SECRET}")
    sid = proc.out.strip()
    # the queued subagent is started by an observer whose environment lacks the key
    del zap.env["MY_API_KEY"]
    assert zap("wait", sid, "--timeout", "30").returncode in (0, 3)
    view = zap.json("poll", sid)["subagents"][0]
    if view["status"] == "failed":
        assert "MY_API_KEY" in view["reason"]
    else:  # the finishing sibling (which has the key) started it first
        assert view["status"] == "completed"
