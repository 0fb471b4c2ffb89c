"""The `glob` and `grep` tools: finding files and lines without a shell.
Imports: stdlib, zapcli.agent.types, zapcli.tools._base.

Both skip `.git`; both bound their work and say when a bound cut the answer.
Both see what the context's view (`zapcli.beneath`) shows: nothing in
zapcli's own folders, nothing through a link out of a root.
"""

from __future__ import annotations

import fnmatch
import glob as globlib
import io
import os
import re
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.beneath import Refused, View
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

GLOB_MAX_RESULTS = 200
GLOB_MAX_SCANNED = 50_000
GREP_MAX_HITS = 200
GREP_MAX_LINE = 400
GREP_MAX_FILE_BYTES = 10 * 1024 * 1024
SKIP_DIRS = frozenset({".git"})


def _in_skipped_dir(rel: str) -> bool:
    return any(part in SKIP_DIRS for part in rel.replace(os.sep, "/").split("/"))


class _Real:
    """Real paths of many matches for the price of one lstat each: a folder's
    real path is kept once resolved."""

    def __init__(self) -> None:
        self.folders: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        folder, name = os.path.split(path)
        real = self.folders.get(folder)
        if real is None:
            real = self.folders[folder] = os.path.realpath(folder)
        full = os.path.join(real, name)
        return os.path.realpath(full) if os.path.islink(full) else full


def _folder(view: View, path: str, shown: str) -> str | None:
    """The real folder (or file) to search for `path`; None when the view
    shows nothing there (zapcli's own folders look empty, as to commands).
    Raises ToolError for a link out of its root."""
    real = os.path.realpath(path)
    if view.hides(real):
        return None
    found = view.root_of(path)
    if found is not None and not (real == found[0] or real.startswith(found[0].rstrip("/") + "/")):
        raise ToolError(f"{shown} leads out of {found[0]} through a symbolic link (to {real}); "
                        f"name {real} itself if you mean it")
    return real


class GlobTool(BaseTool):
    spec = ToolSpec(
        name="glob",
        description=(
            "Find files by name pattern, e.g. `**/*.py` (any depth), `src/*.ts`, "
            "`**/test_*`. The pattern is relative to `path` (default: the working "
            f"directory). Returns at most {GLOB_MAX_RESULTS} paths, most recently modified "
            "first. Names starting with a dot match only when the pattern says so "
            "(`**/.*`); .git is never listed."),
        parameters=schema({
            "pattern": {"type": "string", "description": "Glob pattern; ** matches any "
                                                         "number of folders."},
            "path": {"type": "string", "description": "Folder to search from. Default: the "
                                                      "working directory."},
        }, ["pattern"]),
    )

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = args["pattern"].strip()
        if not pattern:
            raise ToolError("`pattern` is empty; e.g. **/*.py")
        base = resolve_path(ctx, args.get("path", "."))
        view, real = view_of(ctx), _Real()
        if _folder(view, base, show_path(ctx, base)) is None:
            return ok(f"no files match {pattern!r} under {show_path(ctx, base)}")
        if not os.path.isdir(base):
            raise ToolError(f"{show_path(ctx, base)} is not a folder; give a folder as `path`")
        full_pattern = pattern if os.path.isabs(pattern) else os.path.join(base, pattern)
        found: list[tuple[float, str]] = []
        scanned = 0
        for match in globlib.iglob(full_pattern, recursive=True):
            scanned += 1
            if scanned > GLOB_MAX_SCANNED:
                break
            match = os.path.normpath(match)
            if _in_skipped_dir(os.path.relpath(match, base)) or not view.visible(match, real(match)):
                continue
            try:
                mtime = os.stat(match).st_mtime
            except OSError:
                continue  # a dangling symlink or a file gone meanwhile
            found.append((mtime, match))
        if not found:
            return ok(f"no files match {pattern!r} under {show_path(ctx, base)}")
        found.sort(key=lambda t: (-t[0], t[1]))
        shown = [show_path(ctx, p) + ("/" if os.path.isdir(p) else "")
                 for _, p in found[:GLOB_MAX_RESULTS]]
        notes = []
        if len(found) > GLOB_MAX_RESULTS:
            notes.append(f"showing {GLOB_MAX_RESULTS} of {len(found)} matches (newest first); "
                         "narrow the pattern to see the rest")
        if scanned > GLOB_MAX_SCANNED:
            notes.append(f"stopped after scanning {GLOB_MAX_SCANNED:,} matches; narrow the "
                         "pattern or the path")
        return ok("\n".join(shown) + "".join(f"\n[{n}]" for n in notes))


def _file_filter(pattern: str | None):
    """`*.py` matches by file name; a pattern with `/` matches the path below the root."""
    if not pattern:
        return lambda rel: True
    pats = [p.strip() for p in pattern.split(",") if p.strip()]
    if not pats:
        return lambda rel: True

    def matches(rel: str) -> bool:
        rel = rel.replace(os.sep, "/")
        name = rel.rsplit("/", 1)[-1]
        for p in pats:
            if "/" in p:
                if fnmatch.fnmatch(rel, p) or (p.startswith("**/") and fnmatch.fnmatch(rel, p[3:])):
                    return True
            elif fnmatch.fnmatch(name, p):
                return True
        return False
    return matches


def _walk(root: str, real: str, view: View):
    """Each file under `root` (as spelled), whose real path is `real`; links
    to folders are not walked into, zapcli's own folders not at all."""
    if os.path.isfile(real):
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(real):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS
                             and not view.hides(os.path.join(dirpath, d)))
        shown = root if dirpath == real else os.path.join(root, os.path.relpath(dirpath, real))
        for name in sorted(filenames):
            yield os.path.join(shown, name)


class GrepTool(BaseTool):
    spec = ToolSpec(
        name="grep",
        description=(
            "Search file contents with a Python regular expression and return matching "
            "lines as `path:line: text`. Searches `path` (a file or a folder, recursively; "
            "default: the working directory), optionally only files matching `glob` "
            "(`*.py`, `src/**/*.ts`; several separated by commas). Skips binary files and "
            f".git. At most {GREP_MAX_HITS} hits; lines are cut at {GREP_MAX_LINE} "
            "characters; the answer says when it was truncated. Escape regex characters "
            "for literal text (e.g. `foo\\(`)."),
        parameters=schema({
            "pattern": {"type": "string", "description": "Python regular expression."},
            "path": {"type": "string", "description": "File or folder to search. Default: "
                                                      "the working directory."},
            "glob": {"type": "string", "description": "Only files whose name (or, with a /, "
                                                      "path) matches, e.g. *.py."},
            "ignore_case": {"type": "boolean", "description": "Case-insensitive. Default "
                                                              "false."},
        }, ["pattern"]),
    )

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            rx = re.compile(args["pattern"], re.IGNORECASE if args.get("ignore_case") else 0)
        except re.error as e:
            raise ToolError(f"invalid regular expression {args['pattern']!r}: {e}; fix it or "
                            "escape special characters with \\") from None
        root = resolve_path(ctx, args.get("path", "."))
        view = view_of(ctx)
        real = _folder(view, root, show_path(ctx, root))
        if real is not None and not os.path.exists(real):
            raise ToolError(f"no such file or folder: {show_path(ctx, root)}")
        if real is not None and not os.path.isdir(real):
            try:  # a FIFO, socket or device: said, never opened
                os.close(view.open_read(root))
            except Refused:
                raise
            except OSError as e:
                raise ToolError(f"{show_path(ctx, root)} {e.strerror}; grep searches files "
                                "and folders") from None
        wanted = _file_filter(args.get("glob"))
        hits: list[str] = []
        files = skipped_big = cut = 0
        truncated = False
        for path in _walk(root, real, view) if real is not None else ():
            rel = os.path.relpath(path, root) if path != root else os.path.basename(path)
            if not wanted(rel) or os.path.islink(path) and not os.path.isfile(path):
                continue
            try:
                fd = view.open_read(path)  # a FIFO raises, never blocks; a link out is refused
                if os.fstat(fd).st_size > GREP_MAX_FILE_BYTES:
                    os.close(fd)
                    skipped_big += 1
                    continue
                with open(fd, "rb") as fb:
                    if is_binary(fb.read(8192)):
                        continue
                    fb.seek(0)
                    files += 1
                    f = io.TextIOWrapper(fb, encoding="utf-8", errors="replace")
                    for number, line in enumerate(f, start=1):
                        if not rx.search(line):
                            continue
                        if len(hits) >= GREP_MAX_HITS:
                            truncated = True
                            break
                        line = line.rstrip("\r\n")
                        if len(line) > GREP_MAX_LINE:
                            line = line[:GREP_MAX_LINE] + " …"
                            cut += 1
                        hits.append(f"{show_path(ctx, path)}:{number}: {line}")
            except OSError:
                continue  # unreadable or vanished: not the model's problem
            if truncated:
                break
        notes = []
        if truncated:
            notes.append(f"truncated at {GREP_MAX_HITS} hits; narrow the pattern, the path "
                         "or the glob")
        if cut:
            notes.append(f"{cut} line(s) cut at {GREP_MAX_LINE} characters")
        if skipped_big:
            notes.append(f"{skipped_big} file(s) over {GREP_MAX_FILE_BYTES // 2**20} MiB "
                         "skipped")
        if not hits:
            head = f"no matches for {args['pattern']!r} in {files} file(s) under " \
                   f"{show_path(ctx, root)}"
            return ok(head + "".join(f"\n[{n}]" for n in notes))
        return ok("\n".join(hits) + "".join(f"\n[{n}]" for n in notes))
