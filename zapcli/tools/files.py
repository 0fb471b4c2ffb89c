"""The `read`, `write` and `edit` tools.
Imports: stdlib, zapcli.agent.types, zapcli.beneath, zapcli.tools._base
(`zapcli.sandbox.placeholders` to say why a control file cannot be written yet).

Whether a write may happen is the approvals' business (zapcli.approvals),
decided before `run` is called; these tools only do the I/O, in UTF-8, each
on one descriptor opened through the context's view (`zapcli.beneath`): a
link swapped in after the decision is refused, never followed out, and
zapcli's own folders are never opened.
"""

from __future__ import annotations

import errno
import io
import os
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.tools._base import (
    BaseTool,
    ToolError,
    is_binary,
    ok,
    resolve_path,
    schema,
    show_path,
    view_of,
)

DEFAULT_LIMIT = 2000  # lines per read
MAX_LINE = 2000  # characters shown of one line
MAX_OUTPUT = 100_000  # characters of one read's answer
SNIFF = 8192
MAX_EDIT_BYTES = 16 << 20  # edit holds the file in memory twice


def _not_regular(e: OSError, path: str, shown: str, tool: str) -> ToolError | None:
    """What to tell the model when `e` says the path is no regular file."""
    if e.errno == errno.EISDIR:
        if tool == "read":
            return ToolError(f"{shown} is a directory; use glob (e.g. pattern \"{shown}/*\") "
                             "to list it")
        if _held(path):
            return _held_error(shown)
        return ToolError(f"{shown} is a directory; give a file path")
    if e.errno in (errno.EINVAL, errno.ENXIO):
        return ToolError(f"{shown} {e.strerror}; {tool} works only on regular files")
    return None


def _open_read(ctx: ToolContext, path: str, shown: str, tool: str) -> int:
    try:
        return view_of(ctx).open_read(path)
    except FileNotFoundError:
        raise _missing(path, shown) from None
    except OSError as e:
        raise _not_regular(e, path, shown, tool) or e from None


def _open_write(ctx: ToolContext, path: str, shown: str, tool: str, *,
                create: bool) -> tuple[int, bool]:
    try:
        fd, created = view_of(ctx).open_write(path, create=create)
    except FileNotFoundError:
        raise _missing(path, shown) from None
    except OSError as e:
        raise _not_regular(e, path, shown, tool) or e from None
    if not created and _held(path):  # a file the sandbox holds a missing control file with
        os.close(fd)
        raise _held_error(shown)
    return fd, created


def _held_error(shown: str) -> ToolError:
    return ToolError(f"{shown} is a control file (another program runs what it says) that did "
                     "not exist when this run's sandbox started, so zapcli holds its name "
                     "read-only (an empty folder, or a file that configures nothing) until the "
                     "run ends; nothing was written. Say in your report that a person should "
                     "create it after the run")


def _held(path: str) -> bool:
    """Whether `path` is a placeholder the sandbox holds a control file with."""
    from zapcli.paths import placeholders_dir
    from zapcli.sandbox.placeholders import is_placeholder

    return is_placeholder(path, str(placeholders_dir()))


def _replace_content(fd: int, text: str) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    with open(fd, "w", encoding="utf-8", newline="", closefd=False) as f:
        f.write(text)


def _missing(path: str, shown: str) -> ToolError:
    parent = os.path.dirname(path)
    hint = "" if os.path.isdir(parent) else f" (its folder {os.path.dirname(shown) or '.'} " \
                                            "does not exist either)"
    return ToolError(f"no such file: {shown}{hint}; use glob to find the right path")


class ReadTool(BaseTool):
    spec = ToolSpec(
        name="read",
        description=(
            "Read a text file and return its lines numbered from 1 (`   12\\tline`). The "
            "path is relative to the working directory, or absolute. Reads at most "
            f"{DEFAULT_LIMIT} lines by default: use `offset` (first line to show, 1-based) and "
            "`limit` (how many lines) to read a long file in parts. Lines longer than "
            f"{MAX_LINE} characters are cut. Binary files and directories are refused "
            "(use glob to list a folder). The line numbers are not part of the file: "
            "leave them out of `old_string` when you edit."),
        parameters=schema({
            "path": {"type": "string", "description": "File to read."},
            "offset": {"type": "integer", "minimum": 1,
                       "description": "First line to return, 1-based. Default 1."},
            "limit": {"type": "integer", "minimum": 1,
                      "description": f"Number of lines to return. Default {DEFAULT_LIMIT}."},
        }, ["path"]),
    )

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args["path"])
        shown = show_path(ctx, path)
        offset, limit = args.get("offset", 1), args.get("limit", DEFAULT_LIMIT)
        with open(_open_read(ctx, path, shown, "read"), "rb") as fb:
            if is_binary(fb.read(SNIFF)):
                size = os.fstat(fb.fileno()).st_size
                raise ToolError(f"{shown} is a binary file ({size:,} bytes); it cannot be "
                                "shown as text")
            fb.seek(0)
            return _numbered(io.TextIOWrapper(fb, encoding="utf-8", errors="replace"),
                             shown, offset, limit)


def _numbered(f: io.TextIOWrapper, shown: str, offset: int, limit: int) -> ToolResult:
    """Lines `offset`.. of `f`, numbered, at most `limit` and MAX_OUTPUT characters."""
    lines: list[str] = []
    size = 0
    total = 0
    cut_lines = 0
    full = False
    for total, line in enumerate(f, start=1):
        if total < offset or full:
            continue
        line = line.rstrip("\n")
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE] + f" … [{len(line) - MAX_LINE:,} characters cut]"
            cut_lines += 1
        entry = f"{total:6}\t{line}"
        if size + len(entry) > MAX_OUTPUT and lines:
            full = True
            continue
        lines.append(entry)
        size += len(entry) + 1
        full = full or len(lines) >= limit
    if total == 0:
        return ok(f"{shown} is empty (0 lines)")
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has "
                        f"{total} lines")
    last = offset + len(lines) - 1
    notes = []
    if last < total:
        notes.append(f"showing lines {offset}-{last} of {total}; read on with "
                     f"offset={last + 1}")
    if cut_lines:
        notes.append(f"{cut_lines} long line(s) cut at {MAX_LINE} characters")
    body = "\n".join(lines)
    return ok(body + "".join(f"\n[{n}]" for n in notes))


class WriteTool(BaseTool):
    spec = ToolSpec(
        name="write",
        description=(
            "Create a file, or replace a file's whole content, with `content` (UTF-8). "
            "Missing parent folders are created. To change part of an existing file, "
            "prefer edit: it cannot lose the lines you did not mean to touch."),
        parameters=schema({
            "path": {"type": "string", "description": "File to write, relative to the "
                                                      "working directory or absolute."},
            "content": {"type": "string", "description": "The complete new file content."},
        }, ["path", "content"]),
    )

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args["path"])
        shown = show_path(ctx, path)
        content: str = args["content"]
        fd, created = _open_write(ctx, path, shown, "write", create=True)
        try:
            _replace_content(fd, content)
        finally:
            os.close(fd)
        n_bytes = len(content.encode("utf-8", errors="surrogatepass"))
        n_lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        verb = "created" if created else "overwrote"
        return ok(f"{verb} {shown} ({n_bytes:,} bytes, {n_lines:,} lines)")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


class EditTool(BaseTool):
    spec = ToolSpec(
        name="edit",
        description=(
            "Replace exact text in an existing file. `old_string` must match the file "
            "character for character (indentation and line breaks included, no line-number "
            "prefixes from read) and must occur exactly once, unless `replace_all` is true. "
            "If it occurs several times, include more surrounding lines to make it unique. "
            "Read the file first. To create a file, use write."),
        parameters=schema({
            "path": {"type": "string", "description": "File to edit."},
            "old_string": {"type": "string", "description": "Exact text to replace."},
            "new_string": {"type": "string", "description": "Text to put in its place."},
            "replace_all": {"type": "boolean",
                            "description": "Replace every occurrence. Default false."},
        }, ["path", "old_string", "new_string"]),
    )

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args["path"])
        shown = show_path(ctx, path)
        old, new = args["old_string"], args["new_string"]
        if old == "":
            raise ToolError("`old_string` is empty; to create or replace a whole file use write")
        if old == new:
            raise ToolError("`old_string` and `new_string` are the same; nothing to change")
        fd, _ = _open_write(ctx, path, shown, "edit", create=False)
        try:
            return self._edit(fd, shown, old, new, bool(args.get("replace_all")))
        finally:
            os.close(fd)

    @staticmethod
    def _edit(fd: int, shown: str, old: str, new: str, replace_all: bool) -> ToolResult:
        """Read, change and rewrite the file on the one descriptor it was opened on."""
        with open(fd, "rb", closefd=False) as fb:
            raw = fb.read(MAX_EDIT_BYTES + 1)
        if len(raw) > MAX_EDIT_BYTES:
            raise ToolError(f"{shown} is larger than {MAX_EDIT_BYTES >> 20} MB, too large for "
                            "edit; change it with a command in bash (e.g. sed) instead")
        if is_binary(raw[:SNIFF]):
            raise ToolError(f"{shown} is a binary file; edit only works on text")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ToolError(f"{shown} is not valid UTF-8 (byte {e.start}); editing it could "
                            "corrupt it, so nothing was changed") from None
        count = text.count(old)
        if count == 0:
            hint = ""
            if "\r\n" in text and "\n" in old and "\r\n" not in old:
                hint = " (the file uses CRLF line endings)"
            raise ToolError(f"`old_string` was not found in {shown}{hint}; read the file and "
                            "copy the exact text, including whitespace and indentation")
        if count > 1 and not replace_all:
            where, start = [], 0
            for _ in range(min(count, 10)):
                start = text.index(old, start)
                where.append(str(_line_of(text, start)))
                start += len(old)
            more = ", …" if count > 10 else ""
            raise ToolError(f"`old_string` occurs {count} times in {shown} (lines "
                            f"{', '.join(where)}{more}); include more surrounding lines to "
                            "make it unique, or set replace_all: true")
        first = _line_of(text, text.index(old))
        text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        _replace_content(fd, text)
        what = f"{count} occurrences" if count > 1 else f"1 occurrence at line {first}"
        return ok(f"edited {shown}: replaced {what}")
