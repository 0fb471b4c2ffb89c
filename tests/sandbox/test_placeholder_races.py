"""Two sandboxes in one workspace, the first ending while the second starts
(`zapcli.sandbox.placeholders`): a control path the second's policy found
existing — the first's placeholder — may be gone by the time it holds its
paths. The second then holds it as a placeholder of its own, as it would
have had it seen it missing: it starts, and the name stays read-only.

Seen in the field as a `sleep 30` spawned next to an `echo` through
`mcp serve` ending `failed` at once: `bwrap: Can't find source path
…/.devcontainer`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.sandbox.conftest import boxed, needs_bwrap
from zapcli.sandbox import placeholders
from zapcli.sandbox.policy import resolve

NAMES = (".git", ".zapcli", ".envrc", "opencode.json", ".vscode/tasks.json")
WRITES = ("mkdir -p .zapcli/subagents; echo x > .zapcli/mcp.json; echo '{\"mcp\": 1}' > opencode.json;"
          " echo 'curl x' > .envrc; mkdir -p .vscode; echo '{}' > .vscode/tasks.json; git init -q .")


def _resolve(tmp: Path, names: tuple[str, ...]):
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    (tmp / "scratch").mkdir(exist_ok=True)
    return ws, resolve("workspace", workspace=str(ws), scratch=str(tmp / "scratch"),
                       control=names)[0]


def _gone_before_the_hold(tmp: Path, names: tuple[str, ...] = NAMES):
    """The second sandbox's policy, resolved while the first's placeholders
    existed; the first ends before the second holds."""
    ws, policy = _resolve(tmp, names)
    records = str(tmp / "records")
    first = placeholders.hold(policy, records)
    _, seen = _resolve(tmp, names)
    assert str(ws / ".zapcli") in seen.readonly and str(ws / "opencode.json") in seen.readonly
    if ".vscode/tasks.json" in names:  # missing, inside the first's `.vscode`
        assert seen.placeholders == (str(ws / ".vscode" / "tasks.json"),)
    first.release()
    assert os.listdir(ws) == []
    return ws, seen, records


def test_a_control_path_gone_since_the_policy_is_held_as_a_placeholder(tmp_path):
    ws, seen, records = _gone_before_the_hold(tmp_path)
    second = placeholders.hold(seen, records)  # before: EBUSY ("kept being removed") on `.vscode`
    try:
        bound = [*second.policy.readonly, *second.policy.placeholders]
        assert all(os.path.lexists(p) for p in bound), [p for p in bound if not os.path.lexists(p)]
        for name in (".git", ".zapcli", ".envrc", "opencode.json", ".vscode"):
            assert str(ws / name) in bound, (name, bound)
        assert (ws / "opencode.json").read_text() == "{}\n" and (ws / ".zapcli").is_dir()
    finally:
        second.release()
    assert os.listdir(ws) == [] and os.listdir(records) == []  # its own to remove


@needs_bwrap
@pytest.mark.parametrize("names", [NAMES, NAMES[:-1]], ids=["nested", "top"])
def test_the_second_sandbox_starts_and_writes_no_control_file(tmp_path, names):
    """`top`: every name a top-level one, so the hold itself went through
    before and bwrap refused the missing mount point, as in the field."""
    ws, seen, records = _gone_before_the_hold(tmp_path, names)
    try:
        second = placeholders.hold(seen, records)
    except OSError as exc:  # the code before: the hold gave up on the folder that went
        raise AssertionError(f"the second sandbox could not hold its control files: {exc}") from None
    try:
        done = boxed(second.policy, ["sh", "-c", WRITES], cwd=ws, capture_output=True, text=True,
                     timeout=60)
        assert "Can't find source path" not in done.stderr, done.stderr  # bwrap started
        assert not (ws / ".zapcli" / "mcp.json").exists() and not (ws / ".git" / "HEAD").exists()
        assert (ws / "opencode.json").read_text() == "{}\n" and (ws / ".envrc").read_text() == ""
        assert not (ws / ".vscode" / "tasks.json").exists() or ".vscode/tasks.json" not in names
    finally:
        second.release()
    mine = [] if ".vscode/tasks.json" in names else [".vscode"]  # `top`: no control name, the command's
    assert os.listdir(ws) == mine


HOLDER = r"""
import sys
from zapcli.sandbox import placeholders
from zapcli.sandbox.policy import resolve
ws, scratch, records, times = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for _ in range(times):
    policy = resolve("workspace", workspace=ws, scratch=scratch,
                     control=(".git", ".zapcli", ".envrc", "opencode.json", "opencode.jsonc"))[0]
    placeholders.hold(policy, records).release()
"""


def test_sandboxes_starting_and_ending_at_once_in_other_folders_leave_nothing(tmp_path):
    """Sandboxes of one user in several folders at once (the `attempts
    --check` of each tree, runners of a fleet): each start sweeps what
    killed runners left, while another start is between recording its
    placeholders and making them. Seen in a full run: `pick` refused the
    attempt it was given, "it changes control files: opencode.json,
    opencode.jsonc" — the check's placeholders had stayed in the tree,
    their record dropped by the sweep of the other attempt's check that
    had seen them missing a moment before they were made."""
    import sys

    records = tmp_path / "records"
    folders = []
    for k in range(6):
        (tmp_path / f"ws{k}").mkdir()
        (tmp_path / f"scratch{k}").mkdir()
        folders.append(tmp_path / f"ws{k}")
    procs = [subprocess.Popen([sys.executable, "-c", HOLDER, str(ws), str(tmp_path / f"scratch{k}"),
                               str(records), "40"]) for k, ws in enumerate(folders)]
    assert [p.wait(timeout=120) for p in procs] == [0] * len(procs)
    left = {ws.name: sorted(os.listdir(ws)) for ws in folders if os.listdir(ws)}
    assert left == {}, f"placeholders left in the folders once every sandbox ended: {left}"
    assert not records.exists() or os.listdir(records) == []
