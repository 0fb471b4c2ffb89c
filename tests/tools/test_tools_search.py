"""glob and grep over real folders."""

from __future__ import annotations

import os
import time

from zapcli.tools.search import GREP_MAX_HITS, GREP_MAX_LINE, GlobTool, GrepTool


def make_tree(ws):
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / ".git" / "config.py").write_text("needle = 1\n", encoding="utf-8")
    (ws / "src" / "a.py").write_text("import os\nneedle = 2\n", encoding="utf-8")
    (ws / "src" / "pkg" / "b.py").write_text("x = 'Needle'\n", encoding="utf-8")
    (ws / "src" / "notes.md").write_text("needle in docs\n", encoding="utf-8")
    (ws / "blob.bin").write_bytes(b"needle\x00\x01")
    old = time.time() - 100
    os.utime(ws / "src" / "a.py", (old, old))


def test_glob_sorted_by_mtime_skips_git(ctx, tmp_path):
    ws = tmp_path / "ws"
    make_tree(ws)
    res = GlobTool().run({"pattern": "**/*.py"}, ctx)
    assert res.ok
    assert res.content.splitlines() == ["src/pkg/b.py", "src/a.py"]  # newest first
    res = GlobTool().run({"pattern": "*.py", "path": "src"}, ctx)
    assert res.content.splitlines() == ["src/a.py"]
    res = GlobTool().run({"pattern": "**/*.rs"}, ctx)
    assert res.ok and "no files match" in res.content
    assert not GlobTool().run({"pattern": "*", "path": "src/a.py"}, ctx).ok
    res = GlobTool().run({"pattern": os.path.join(str(ws), "src", "*.md")}, ctx)
    assert res.content == "src/notes.md"


def test_glob_caps_count(ctx, tmp_path):
    ws = tmp_path / "ws"
    for i in range(250):
        (ws / f"f{i}.txt").write_text("", encoding="utf-8")
    res = GlobTool().run({"pattern": "*.txt"}, ctx)
    assert len(res.content.splitlines()) == 201
    assert "showing 200 of 250" in res.content


def test_grep_finds_lines_skips_binary_and_git(ctx, tmp_path):
    ws = tmp_path / "ws"
    make_tree(ws)
    res = GrepTool().run({"pattern": "needle"}, ctx)
    assert res.ok
    assert res.content.splitlines() == ["src/a.py:2: needle = 2",
                                        "src/notes.md:1: needle in docs"]
    res = GrepTool().run({"pattern": "needle", "ignore_case": True, "glob": "*.py"}, ctx)
    assert res.content.splitlines() == ["src/a.py:2: needle = 2",
                                        "src/pkg/b.py:1: x = 'Needle'"]
    res = GrepTool().run({"pattern": "needle", "path": "src", "glob": "pkg/*.py",
                          "ignore_case": True}, ctx)
    assert res.content.splitlines() == ["src/pkg/b.py:1: x = 'Needle'"]
    res = GrepTool().run({"pattern": "import", "path": "src/a.py"}, ctx)
    assert res.content == "src/a.py:1: import os"
    res = GrepTool().run({"pattern": "absent"}, ctx)
    assert res.ok and "no matches" in res.content


def test_grep_limits_and_errors(ctx, tmp_path):
    ws = tmp_path / "ws"
    (ws / "many.txt").write_text("hit " + "z" * 1000 + "\n" + "hit\n" * 300, encoding="utf-8")
    res = GrepTool().run({"pattern": "^hit"}, ctx)
    lines = res.content.splitlines()
    assert len([x for x in lines if x.startswith("many.txt:")]) == GREP_MAX_HITS
    assert "truncated at 200 hits" in res.content
    assert len(lines[0]) < GREP_MAX_LINE + 30 and lines[0].endswith("…")
    res = GrepTool().run({"pattern": "(unclosed"}, ctx)
    assert not res.ok and "invalid regular expression" in res.content
    res = GrepTool().run({"pattern": "x", "path": "missing"}, ctx)
    assert not res.ok and "no such file" in res.content
