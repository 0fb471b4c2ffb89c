"""Which changes of a merge are control files (`zapcli.ops.merge.control_changes`);
the list itself is `zapcli.backends.registry.control_files`
(tests/backends/test_registry_control.py)."""

from __future__ import annotations

from zapcli import control
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
