"""The sandbox from the command line (docs/explanation/rules.md#sandbox): `--cli sh --sandbox`, the
built-in agent's default, and a machine where bwrap cannot run — spawn says
so (never a silent downgrade), `--sandbox` is refused there with nothing
created, and doctor names what is missing. `ZAPCLI_BWRAP` points at a
program that is not there: a missing bubblewrap, without uninstalling it."""

from __future__ import annotations

import json

from tests.conftest import record_of, trail_records, wait_until
from tests.sandbox.conftest import needs_bwrap

MISSING = {"ZAPCLI_BWRAP": "/nonexistent/bwrap"}


@needs_bwrap
def test_sh_with_sandbox_writes_only_its_workspace(zap, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    cmd = (f"touch {outside}/sandboxed; touch /etc/zapcli-probe; touch inside && "
           "ls /proc | grep -c '^[0-9]'; echo tmp=$TMPDIR")
    sid = zap.spawn_sh(cmd, "--sandbox")
    assert zap("wait", sid, "--timeout", "60").returncode == 0
    out = zap("output", sid).out
    assert (zap.cwd / "inside").exists() and not (outside / "sandboxed").exists()
    assert int(out.splitlines()[0]) < 10 and f"tmp={zap.home}/subagents/{sid}.tmp" in out
    err = zap("output", sid, "--stderr").out
    assert "/etc/zapcli-probe': Read-only file system" in err, err
    assert "outside/sandboxed': No such file" in err  # /tmp is hidden with the network off
    plain = zap.spawn_sh(f"touch {outside}/plain")  # without --sandbox: the user's own command
    zap("wait", plain, "--timeout", "60")
    assert (outside / "plain").exists()
    # A new user's trial: replay showed neither its output nor that it ran
    # sandboxed. It shows the sandbox it ran in and its output, as output has them.
    replayed = zap("replay", sid).out
    assert " sandbox=on task: touch " in replayed, replayed
    assert f"  Output:\n    {out.splitlines()[0]}\n    tmp={zap.home}" in replayed, replayed
    assert "  Stderr:\n" in replayed and "/etc/zapcli-probe': Read-only file system" in replayed
    assert " sandbox=off task: touch " in zap("replay", plain).out


def test_without_bwrap_spawn_says_so_and_sandbox_is_refused(zap, model):
    model([{"match": "quiet", "turns": [{"text": "ok"}]}])
    spawned = zap("spawn", "quiet please", env=MISSING)
    assert spawned.returncode == 0, spawned.err
    assert "commands run WITHOUT a sandbox: /nonexistent/bwrap (bubblewrap) is not installed" \
        in spawned.err
    sid = spawned.out.strip()
    assert zap("wait", sid, "--timeout", "60", env=MISSING).returncode == 0
    diag = [r for r in trail_records(zap.trail(sid)) if r.get("type") == "diagnostic"
            and r.get("dimension") == "sandbox"]
    assert diag and "WITHOUT a sandbox" in diag[0]["message"]  # and in the trail, for replay
    silent = zap("spawn", "--no-sandbox", "quiet please", env=MISSING)
    assert "sandbox" not in silent.err  # asked for: nothing to say
    for argv in (["spawn", "--sandbox", "quiet"], ["spawn", "--cli", "sh", "--sandbox", "--", "true"],
                 ["run", "--sandbox", "quiet"]):
        before = sorted(zap.home.glob("subagents/*.jsonl"))
        refused = zap(*argv, env=MISSING)
        assert refused.returncode == 1, (argv, refused.err)
        assert "was asked for, but /nonexistent/bwrap (bubblewrap) is not installed" in refused.err
        assert sorted(zap.home.glob("subagents/*.jsonl")) == before  # nothing created
    both = zap("spawn", "--sandbox", "--no-sandbox", "x")
    assert both.returncode == 2 and "contradict" in both.err


def test_doctor_names_what_the_sandbox_lacks(zap):
    doc = zap.json("doctor", env=MISSING)
    check = next(c for c in doc["checks"] if c["name"] == "sandbox")
    assert not check["ok"] and "WITHOUT a sandbox" in check["detail"]
    assert check["problems"] == ["/nonexistent/bwrap (bubblewrap) is not installed",
                                 "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; "
                                 "Fedora: dnf install bubblewrap)"]


@needs_bwrap
def test_a_definition_is_held_to_what_its_approval_mode_allows(zap, model, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (zap.cwd / ".zapcli" / "subagents").mkdir(parents=True)
    (zap.cwd / ".zapcli" / "subagents" / "wide.yml").write_text(
        "name: wide\ndescription: wants more\ntools: [bash]\n"
        f"sandbox: {{network: false, writable: [., {elsewhere}]}}\n")
    zap("trust", check=True)  # trusted, and still held to what its approval mode allows
    cmd = f"touch {elsewhere}/x; touch here && echo made"
    model([{"match": "widen", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]}, {"text": "done"}]}])
    for mode, written in (("workspace", False), ("full", True)):
        sid = zap("spawn", "--agent", "wide", "--approval", mode, f"widen {mode}").out.strip()
        if mode == "workspace":  # bash asks there: a person approves the command, not a wider sandbox
            wait_until(lambda: zap.status(sid) == "awaiting_approval", 60)  # noqa: B023
            assert zap("approve", sid).returncode == 0
        assert zap("wait", sid, "--timeout", "60").returncode == 0
        assert (elsewhere / "x").exists() is written, mode
        diags = [r["message"] for r in trail_records(zap.trail(sid)) if r.get("type") == "diagnostic"]
        assert any("workspace mode lets commands write only" in d for d in diags) is not written
        result = record_of(zap, sid, "tool_result")
        assert "made" in json.dumps(result), result
        (zap.cwd / "here").unlink()


@needs_bwrap
def test_a_shell_subagent_the_parent_model_spawns_is_sandboxed_too(zap, model, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    model([{"match": "delegate a shell", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {
            "action": "spawn", "cli": "sh", "task": f"touch {outside}/by-child; touch by-child"}}]},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}]},
        {"text": "delegated"}]}])
    done = zap("run", "--approval", "full", "delegate a shell", timeout=120)
    assert done.returncode == 0, done.err
    assert (zap.cwd / "by-child").exists() and not (outside / "by-child").exists()
