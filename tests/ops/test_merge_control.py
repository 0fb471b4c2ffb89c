"""Which changes of a merge are control files (`zapcli.ops.merge.control_changes`),
and the list of every backend's control file names kept in the state folder
(`zapcli.backends.controlnames`)."""

from __future__ import annotations

import json

from tests.conftest import isolate
from zapcli import control
from zapcli.backends import controlnames
from zapcli.ops.merge import control_changes


def test_a_control_file_is_found_at_any_depth_and_only_by_whole_names():
    names = control.names((".claude", "opencode.json"))
    files = [".envrc", "sub/.envrc", "a/b/.zapcli/mcp.json", "x/.vscode/tasks.json",
             ".vscode/notes.md", "docs/.claude/settings.json", "pkg/opencode.json",
             ".gitignore", "src/.git-notes", "envrc", "my.envrc", "README"]
    assert control_changes(files, names) == [
        ".envrc", "sub/.envrc", "a/b/.zapcli/mcp.json", "x/.vscode/tasks.json",
        "docs/.claude/settings.json", "pkg/opencode.json"]
    assert control_changes([], names) == []


def test_every_backends_names_are_kept_until_the_installed_packages_change(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    first = controlnames.names()
    assert set(control.BASE) <= set(first)
    cache = tmp_path / "state" / controlnames.CACHE
    saved = json.loads(cache.read_text())
    saved["names"] = [".planted-by-a-test"]  # the stamp still matches: read back as it is
    cache.write_text(json.dumps(saved))
    assert ".planted-by-a-test" in controlnames.names()
    saved["stamp"] = ["another zapcli"]  # a package installed or removed since: scanned again
    cache.write_text(json.dumps(saved))
    assert controlnames.names() == first
