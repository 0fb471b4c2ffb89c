"""What a new user met following the README and the docs alone: a script's
wait that hides a failed check, a trust warning on the wrong stream, two
commands that disagree on an agent's model, a doctor that does not name the
workspace's definitions nor say Ray is missing, a fast-forwarded tree that
`worktree list` calls clean."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.timeout(90)
def test_a_script_that_names_its_ids_sees_a_check_that_already_failed(zap):
    ok = zap.spawn_sh("echo checking api")
    bad = zap.spawn_sh("echo checking web; exit 1")
    assert zap.wait_status(ok) == "completed" and zap.wait_status(bad) == "failed"
    # without ids: only those still running or queued — the ended failure is not counted
    unnamed = zap("wait")
    assert unnamed.returncode == 0 and "nothing to wait for" in unnamed.out
    # the README's way: the ids spawn printed, named
    named = zap("wait", ok, bad, "--json")
    assert named.returncode == 3, named.err
    assert "not ones already ended" in zap("wait", "--help").out


def _untrusted_notes(zap) -> str:
    notes = zap.cwd / ".zapcli" / "subagents" / "notes.yml"
    notes.parent.mkdir(parents=True)
    notes.write_text("name: notes\ndescription: Reads the notes.\ntools: [read]\n")
    return f"zapcli: warning: this folder is not trusted, so its own zapcli files were ignored: " \
           f".zapcli/subagents/notes.yml; to use it: zapcli trust {zap.cwd.resolve()}"


@pytest.mark.timeout(120)
def test_every_command_says_the_untrusted_warning_alike_on_stderr(zap):
    line = _untrusted_notes(zap)
    listed = zap("agents", "list")
    assert listed.returncode == 0
    assert "notes" not in listed.out  # not listed as usable, and the warning is not in the listing
    assert listed.err.splitlines() == [line]
    shown = zap("agents", "show", "general")
    assert shown.returncode == 0 and "notes" not in shown.out and shown.err.splitlines() == [line]
    assert zap("agents", "list", "--json").err.splitlines() == [line]
    spawned = zap("spawn", "--cli", "sh", "--", "true")
    assert spawned.returncode == 0 and line in spawned.err.splitlines()
    doctor = zap("doctor", timeout=120)
    assert line in doctor.err.splitlines()


@pytest.mark.timeout(60)
def test_list_and_show_resolve_the_model_alike_and_say_where_it_is_set(zap, tmp_path):
    env = {"ZAPCLI_MODEL": "scripted"}
    listed = [x for x in zap("agents", "list", env=env).out.splitlines() if x.startswith("general ")]
    assert listed and listed[0].endswith("model: scripted (env ZAPCLI_MODEL)")
    shown = zap("agents", "show", "general", env=env).out.splitlines()[1]
    assert shown.endswith("model: scripted (env ZAPCLI_MODEL)")
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.yaml").write_text("model: from-config\n")
    shown = zap("agents", "show", "general").out.splitlines()[1]
    assert shown.endswith(f"model: from-config (config {config / 'config.yaml'}:1)")
    assert zap.json("agents", "show", "general", env=env)["agent"]["model"] == "scripted"
