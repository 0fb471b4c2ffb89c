"""`zapcli.sandbox.placeholders`: the empty folders made where a control file
does not exist yet, held by every sandbox that mounts them and removed by
the last one to end — never under a sandbox that still mounts one, never
when it holds something now, and swept when a runner was killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

from tests.conftest import REPO, wait_until
from tests.sandbox.conftest import FOUND, needs_bwrap
from zapcli.sandbox import placeholders
from zapcli.sandbox.bwrap import argv
from zapcli.sandbox.policy import resolve

NAMES = (".git", ".zapcli", ".envrc", ".vscode/tasks.json")


def _policy(tmp: Path):
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    (tmp / "scratch").mkdir(exist_ok=True)
    return ws, resolve("workspace", workspace=str(ws), scratch=str(tmp / "scratch"),
                       control=NAMES)[0]


def test_made_before_held_and_gone_after(tmp_path):
    ws, policy = _policy(tmp_path)
    records = str(tmp_path / "records")
    assert sorted(policy.placeholders) == sorted(str(ws / n) for n in (".git", ".zapcli", ".envrc",
                                                                        ".vscode"))
    held = placeholders.hold(policy, records)
    assert all(Path(p).is_dir() for p in policy.placeholders) and not held.notes
    assert len(os.listdir(records)) == 1  # one record for this start
    held.release()
    assert os.listdir(ws) == [] and os.listdir(records) == []
    held.release()  # twice is harmless


def test_the_last_of_two_sandboxes_removes_them(tmp_path):
    ws, policy = _policy(tmp_path)
    records = str(tmp_path / "records")
    first = placeholders.hold(policy, records)
    _, seen = _policy(tmp_path)  # the second sees them existing (and `.vscode/tasks.json` missing)
    assert seen.placeholders == (str(ws / ".vscode" / "tasks.json"),)
    second = placeholders.hold(seen, records)
    first.release()
    assert sorted(os.listdir(ws)) == [".envrc", ".git", ".vscode", ".zapcli"]  # still mounted
    assert os.listdir(ws / ".vscode") == ["tasks.json"]
    second.release()
    assert os.listdir(ws) == []


def test_one_that_holds_something_now_is_kept(tmp_path):
    ws, policy = _policy(tmp_path)
    records = str(tmp_path / "records")
    held = placeholders.hold(policy, records)
    (ws / ".zapcli" / "agent-memory").mkdir()  # the memory tool wrote its folder meanwhile
    held.release()
    assert os.listdir(ws) == [".zapcli"] and os.listdir(records) == []


def test_one_that_cannot_be_made_is_left_out_and_said(tmp_path):
    ws, policy = _policy(tmp_path)
    (ws / ".vscode").write_text("")  # made a file since the policy was resolved
    (ws / ".envrc").symlink_to(tmp_path / "nowhere")
    blocked = replace(policy, placeholders=(*policy.placeholders, str(ws / "file" / "x")))
    (ws / "file").write_text("")
    held = placeholders.hold(blocked, str(tmp_path / "records"))
    assert str(ws / "file" / "x") not in held.policy.placeholders and held.notes
    held.release()


KILLED = textwrap.dedent("""\
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from zapcli.sandbox import placeholders
    from zapcli.sandbox.policy import resolve
    policy = resolve("workspace", workspace=sys.argv[2], scratch=sys.argv[2],
                     control=(".zapcli", ".envrc"))[0]
    placeholders.hold(policy, sys.argv[3])
    print("held", flush=True)
    time.sleep(60)
""")


def test_a_killed_holders_placeholders_are_swept(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    records = tmp_path / "records"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(REPO), str(ws), str(records)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    assert placeholders.sweep(str(records)) == []  # it still holds them
    assert sorted(os.listdir(ws)) == [".envrc", ".zapcli"]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sorted(placeholders.sweep(str(records))) == [str(ws / ".envrc"), str(ws / ".zapcli")]
    assert os.listdir(ws) == [] and os.listdir(records) == []


@needs_bwrap
def test_bwrap_mounts_them_read_only_and_refuses_to_start_without_them(tmp_path):
    ws, policy = _policy(tmp_path)
    held = placeholders.hold(policy, str(tmp_path / "records"))
    try:
        done = subprocess.run([*argv(held.policy, FOUND.program), "sh", "-c",
                               "mkdir -p .zapcli/subagents; echo x > .envrc; git init -q .; "
                               "touch made; ls -A"], cwd=ws, capture_output=True, text=True)
        assert "Read-only file system" in done.stderr and "made" in done.stdout, done
        assert sorted(os.listdir(ws)) == [".envrc", ".git", ".vscode", ".zapcli", "made"]
        assert all(os.listdir(ws / n) == [] for n in (".envrc", ".git", ".vscode", ".zapcli"))
    finally:
        held.release()
    assert os.listdir(ws) == ["made"]
    bare = subprocess.run([*argv(policy, FOUND.program), "true"], cwd=ws, capture_output=True)
    assert bare.returncode != 0  # never the names left writable
    wait_until(lambda: os.listdir(ws) == ["made"], 5)


def test_an_approved_write_to_a_held_name_says_why_and_works_after(tmp_path, monkeypatch):
    """A person approved writing `.envrc`, which did not exist when the
    sandbox started: the tool says it is held, writes nothing through it,
    and writes it once the run's sandbox has ended."""
    from zapcli.agent.types import ToolContext
    from zapcli.paths import placeholders_dir
    from zapcli.tools.files import WriteTool

    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))
    ws, policy = _policy(tmp_path)
    held = placeholders.hold(policy, str(placeholders_dir()))
    ctx = ToolContext(str(ws), str(ws))
    said = WriteTool().run({"path": ".envrc", "content": "use nix\n"}, ctx)
    assert not said.ok and "control file" in said.content and (ws / ".envrc").is_dir()
    held.release()
    assert WriteTool().run({"path": ".envrc", "content": "use nix\n"}, ctx).ok
    assert (ws / ".envrc").read_text() == "use nix\n"
