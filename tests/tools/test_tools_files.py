"""read, write, edit on real files."""

from __future__ import annotations

import os

from zapcli.tools.files import MAX_LINE, EditTool, ReadTool, WriteTool


def test_read_numbers_lines_and_pages(ctx, tmp_path):
    f = tmp_path / "ws" / "a.txt"
    f.write_text("".join(f"line {i}\n" for i in range(1, 11)), encoding="utf-8")
    res = ReadTool().run({"path": "a.txt"}, ctx)
    assert res.ok
    assert res.content.splitlines()[0] == "     1\tline 1"
    assert res.content.splitlines()[-1] == "    10\tline 10"
    res = ReadTool().run({"path": str(f), "offset": 3, "limit": 2}, ctx)
    assert res.content.splitlines() == ["     3\tline 3", "     4\tline 4",
                                        "[showing lines 3-4 of 10; read on with offset=5]"]
    res = ReadTool().run({"path": "a.txt", "offset": 50}, ctx)
    assert not res.ok and "past the end" in res.content and "10 lines" in res.content


def test_read_caps_long_lines_and_refuses_binary_and_dirs(ctx, tmp_path):
    ws = tmp_path / "ws"
    (ws / "long.txt").write_text("x" * (MAX_LINE + 500) + "\n", encoding="utf-8")
    res = ReadTool().run({"path": "long.txt"}, ctx)
    assert res.ok and "500 characters cut" in res.content and "1 long line(s)" in res.content
    (ws / "bin.dat").write_bytes(b"\x89PNG\x00\x01\x02")
    res = ReadTool().run({"path": "bin.dat"}, ctx)
    assert not res.ok and "binary" in res.content
    (ws / "d").mkdir()
    res = ReadTool().run({"path": "d"}, ctx)
    assert not res.ok and "directory" in res.content and "glob" in res.content
    res = ReadTool().run({"path": "nope/missing.txt"}, ctx)
    assert not res.ok and "no such file" in res.content and "glob" in res.content
    (ws / "empty").write_text("", encoding="utf-8")
    assert "empty" in ReadTool().run({"path": "empty"}, ctx).content


def test_read_replaces_bad_utf8(ctx, tmp_path):
    (tmp_path / "ws" / "latin.txt").write_bytes("café\n".encode("latin-1"))
    res = ReadTool().run({"path": "latin.txt"}, ctx)
    assert res.ok and "caf\ufffd" in res.content


def test_read_output_is_bounded(ctx, tmp_path):
    (tmp_path / "ws" / "big.txt").write_text(("y" * 1000 + "\n") * 500, encoding="utf-8")
    res = ReadTool().run({"path": "big.txt"}, ctx)
    assert res.ok and len(res.content) < 110_000 and "read on with offset=" in res.content


def test_write_creates_parents_and_overwrites(ctx, tmp_path):
    res = WriteTool().run({"path": "deep/er/x.py", "content": "print('é')\n"}, ctx)
    assert res.ok and res.content.startswith("created deep/er/x.py")
    target = tmp_path / "ws" / "deep" / "er" / "x.py"
    assert target.read_text(encoding="utf-8") == "print('é')\n"
    res = WriteTool().run({"path": str(target), "content": "a\r\nb"}, ctx)
    assert res.ok and "overwrote" in res.content
    assert target.read_bytes() == b"a\r\nb"  # line endings written as given
    assert not WriteTool().run({"path": "deep", "content": "x"}, ctx).ok
    assert not WriteTool().run({"path": "y.txt"}, ctx).ok
    assert not WriteTool().run({"path": "", "content": "x"}, ctx).ok


def test_edit_exact_unique_replacement(ctx, tmp_path):
    f = tmp_path / "ws" / "m.py"
    f.write_text("def a():\n    return 1\n\ndef b():\n    return 1\n", encoding="utf-8")
    edit = EditTool()
    res = edit.run({"path": "m.py", "old_string": "return 1", "new_string": "return 2"}, ctx)
    assert not res.ok and "occurs 2 times" in res.content and "lines 2, 5" in res.content
    assert "replace_all" in res.content
    res = edit.run({"path": "m.py", "old_string": "def b():\n    return 1",
                    "new_string": "def b():\n    return 3"}, ctx)
    assert res.ok and "line 4" in res.content
    assert f.read_text(encoding="utf-8").endswith("return 3\n")
    res = edit.run({"path": "m.py", "old_string": "return 9", "new_string": "x"}, ctx)
    assert not res.ok and "not found" in res.content
    res = edit.run({"path": "m.py", "old_string": "return", "new_string": "yield",
                    "replace_all": True}, ctx)
    assert res.ok and "2 occurrences" in res.content
    assert f.read_text(encoding="utf-8").count("yield") == 2


def test_edit_refusals(ctx, tmp_path):
    ws = tmp_path / "ws"
    edit = EditTool()
    assert "no such file" in edit.run({"path": "x", "old_string": "a", "new_string": "b"},
                                      ctx).content
    (ws / "t.txt").write_text("abc", encoding="utf-8")
    assert "empty" in edit.run({"path": "t.txt", "old_string": "", "new_string": "b"},
                               ctx).content
    assert "same" in edit.run({"path": "t.txt", "old_string": "a", "new_string": "a"},
                              ctx).content
    (ws / "l1.txt").write_bytes("café".encode("latin-1"))
    res = edit.run({"path": "l1.txt", "old_string": "caf", "new_string": "cof"}, ctx)
    assert not res.ok and "UTF-8" in res.content
    assert (ws / "l1.txt").read_bytes() == "café".encode("latin-1")
    (ws / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    res = edit.run({"path": "crlf.txt", "old_string": "one\ntwo", "new_string": "x"}, ctx)
    assert not res.ok and "CRLF" in res.content
    res = edit.run({"path": "crlf.txt", "old_string": "two", "new_string": "2"}, ctx)
    assert res.ok and (ws / "crlf.txt").read_bytes() == b"one\r\n2\r\n"


def test_paths_expand_home_and_absolute(ctx, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert WriteTool().run({"path": "~/h.txt", "content": "hi"}, ctx).ok
    assert (tmp_path / "h.txt").read_text(encoding="utf-8") == "hi"
    res = ReadTool().run({"path": os.path.join(str(tmp_path), "h.txt")}, ctx)
    assert res.ok and "hi" in res.content


def _within(seconds: float, fn):
    """fn() in a daemon thread; its result, or AssertionError when it blocks."""
    import threading

    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert box, "the tool blocked"
    return box[0]


def test_a_fifo_or_device_is_refused_at_once_never_opened(ctx, tmp_path):
    """Opening a FIFO blocks until its other end opens: a tool call on one used
    to hang until the subagent's deadline. /dev/zero never ends."""
    from zapcli.tools.search import GrepTool

    ws = tmp_path / "ws"
    os.mkfifo(ws / "pipe")
    (ws / "a.txt").write_text("needle\n", encoding="utf-8")
    os.symlink("/dev/zero", ws / "zero")
    for tool, args in ((ReadTool(), {"path": "pipe"}), (WriteTool(), {"path": "pipe", "content": "x"}),
                       (EditTool(), {"path": "pipe", "old_string": "a", "new_string": "b"}),
                       (ReadTool(), {"path": "/dev/zero"}),
                       (EditTool(), {"path": "/dev/zero", "old_string": "a", "new_string": "b"})):
        res = _within(5, lambda tool=tool, args=args: tool.run(args, ctx))
        assert not res.ok and "not a regular file" in res.content, (tool.spec.name, res.content)
    for tool, args in ((ReadTool(), {"path": "zero"}),  # a link out of the workspace: not followed
                       (EditTool(), {"path": "zero", "old_string": "a", "new_string": "b"})):
        res = _within(5, lambda tool=tool, args=args: tool.run(args, ctx))
        assert not res.ok and "/dev/zero" in res.content, (tool.spec.name, res.content)
    res = _within(5, lambda: GrepTool().run({"pattern": "needle"}, ctx))  # walks past the FIFO
    assert res.ok and "a.txt:1: needle" in res.content
    res = _within(5, lambda: GrepTool().run({"pattern": "x", "path": "pipe"}, ctx))
    assert not res.ok and "FIFO" in res.content


def test_edit_refuses_a_file_too_large_to_hold(ctx, tmp_path):
    from zapcli.tools import files

    big = tmp_path / "ws" / "big.txt"
    with open(big, "wb") as f:
        f.truncate(files.MAX_EDIT_BYTES + 10)  # sparse: no disk used
    res = EditTool().run({"path": "big.txt", "old_string": "a", "new_string": "b"}, ctx)
    assert not res.ok and "too large for edit" in res.content and "sed" in res.content
