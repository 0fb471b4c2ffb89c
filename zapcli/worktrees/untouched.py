"""A tree kept as it was across a command that must leave nothing in it: the
`attempts` check (`zapcli.ops.attempts`) is an evaluation of an attempt,
never part of it, so what it writes (a `__pycache__`, a `build/`, a changed
file) must not reach `diff`, `merge` or `pick`.

Imports `zapcli.worktrees.git` and `zapcli.worktrees.snapshot`. `hold`
notes every path of the tree (its own `.git` link aside: git's admin files
are not the tree's work) and stores the tree's work in git's object store,
committed, uncommitted and untracked files alike, through a copy of the
tree's index as `zapcli.worktrees.snapshot` does (the tree, its index and
its branch are not touched). `put_back` then removes every path the command
made, ignored ones included, and writes back each file it changed, removed
or re-moded, from what was stored, with its mode and times. An ignored file
the command changed has no stored copy (git never stored it): it is left as
the command left it, and named.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile

from zapcli.plain import plain
from zapcli.worktrees import git as g

Mark = tuple[str, int, int, int, int, int]  # kind (f, l, d, o), mode, size, mtime, ctime, inode


def _mark(st: os.stat_result) -> Mark:
    m = st.st_mode
    kind = "d" if stat.S_ISDIR(m) else "l" if stat.S_ISLNK(m) else "f" if stat.S_ISREG(m) else "o"
    if kind == "d":  # a folder's times change as its entries come and go
        return kind, m, 0, 0, 0, 0
    return kind, m, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _walk(root: str) -> dict[str, Mark]:
    """Every path under `root` (relative, '/'-separated) but its top `.git`,
    never through a link."""
    marks: dict[str, Mark] = {}
    todo = [""]
    while todo:
        rel = todo.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel) if rel else root))
        except OSError:
            continue
        for e in entries:
            if not rel and e.name == ".git":
                continue
            path = f"{rel}/{e.name}" if rel else e.name
            try:
                marks[path] = _mark(e.stat(follow_symlinks=False))
            except OSError:
                continue
            if marks[path][0] == "d":
                todo.append(path)
    return marks


@plain
class Held:
    """A tree as it was: the `marks` of its paths, and `index`, a copy of its
    index holding all of its work (`stored`: the paths it holds; their
    objects are in the store)."""
    where: g.Place
    marks: dict[str, Mark]
    index: str
    stored: frozenset[str]


def hold(where: g.Place) -> Held:
    """Note the tree at `where` and store its work. Raises GitError."""
    from zapcli.worktrees.snapshot import _copy_index

    folder = tempfile.mkdtemp(prefix="zapcli-held-")
    index = os.path.join(folder, "index")
    try:
        _copy_index(os.path.join(where.git_dir, "index"), index)
        env = {"GIT_INDEX_FILE": index}
        g.git(["add", "-A", "--", "."], where, env=env)
        listed = g.git(["ls-files", "-z", "-s"], where, env=env).stdout
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    stored = frozenset(line.split("\t", 1)[1] for line in listed.split("\0")
                       if "\t" in line and not line.startswith("160000"))  # not a submodule
    return Held(where, _walk(where.work_tree), index, stored)


def put_back(held: Held) -> list[str]:
    """Make the tree what `hold` found: what is new removed, what changed
    written back. Returns notes on what could not be (empty: all of it)."""
    try:
        return _put_back(held, held.where.work_tree)
    finally:
        shutil.rmtree(os.path.dirname(held.index), ignore_errors=True)


def _put_back(held: Held, root: str) -> list[str]:
    before, now = held.marks, _walk(root)
    changed = sorted(p for p in before.keys() | now.keys() if before.get(p) != now.get(p))
    unsaved = [p for p in changed if p in before and before[p][0] != "d" and p not in held.stored]
    notes = _remove(root, [p for p in changed if p in now and p not in unsaved
                           and not (before.get(p, ("",))[0] == now[p][0] == "d")], now)
    if notes:  # a link it left could lead what follows outside the tree: nothing more is done
        return [*notes, "nothing else of the tree was put back (what it made is still there)"]
    folders = [p for p in changed if p in before and before[p][0] == "d"]
    for path in folders:
        if not _beneath(root, path, last=False):
            return [f"{path} lies past a link: nothing else of the tree was put back"]
        os.makedirs(os.path.join(root, path), exist_ok=True)
    files = [p for p in changed if p in before and before[p][0] != "d" and p not in unsaved]
    if files:
        notes += _write_back(held, root, files)
    for path in reversed(folders):  # a folder's mode once its files are in it
        try:
            if not _beneath(root, path):
                raise OSError(0, "it lies past a link")
            os.chmod(os.path.join(root, path), stat.S_IMODE(before[path][1]))
        except OSError as exc:
            notes.append(f"could not put back the mode of {path}: {exc.strerror}")
    if unsaved:
        notes.append("ignored files it changed are left as it left them (git keeps no copy "
                     "of them): " + ", ".join(unsaved[:5]) + (" …" if len(unsaved) > 5 else ""))
    return notes


def _beneath(root: str, path: str, last: bool = True) -> bool:
    """Whether every folder on the way to `path` in the tree is a folder, no
    link (and `path` itself no link, with `last`; it may be missing): what
    is done to it stays in the tree. Nothing else runs in the tree by now
    (the check's sandbox, and every process in it, has ended)."""
    parts = path.split("/")
    for i in range(1, len(parts) + 1):
        try:
            st = os.lstat(os.path.join(root, *parts[:i]))
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if i < len(parts) and not stat.S_ISDIR(st.st_mode):
            return False
        if i == len(parts) and last and stat.S_ISLNK(st.st_mode):
            return False
    return True


def _remove(root: str, paths: list[str], now: dict[str, Mark]) -> list[str]:
    """Remove `paths` (sorted: a folder before what is in it, which goes with
    it); the folder holding one opened for writing if it was shut (a check
    may leave a read-only folder)."""
    notes: list[str] = []
    removed: set[str] = set()
    for path in paths:
        parts = path.split("/")
        if any("/".join(parts[:i]) in removed for i in range(1, len(parts))):
            continue
        full = os.path.join(root, path)
        try:
            if not _beneath(root, path, last=False):
                raise OSError(0, "it lies past a link")
            try:
                _unlink(full, now[path][0])
            except PermissionError:
                holder = os.path.dirname(full)
                os.chmod(holder, stat.S_IMODE(os.lstat(holder).st_mode) | stat.S_IRWXU)
                _unlink(full, now[path][0])
            if now[path][0] == "d":
                removed.add(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            notes.append(f"could not remove {path}: {exc.strerror}")
    return notes


def _unlink(full: str, kind: str) -> None:
    if kind == "d":
        shutil.rmtree(full, onerror=_writable)
    else:
        os.unlink(full)


def _writable(func: object, path: str, _exc: object) -> None:
    """rmtree's second try at `path`, once it and the folder holding it may be
    written and read (a build cache makes its folders read-only). Raises OSError."""
    os.chmod(os.path.dirname(path), 0o700)
    if stat.S_ISDIR(os.lstat(path).st_mode):
        os.chmod(path, 0o700)
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _write_back(held: Held, root: str, paths: list[str]) -> list[str]:
    """Write `paths` out of the held index, with their modes and times."""
    proc = g.git(["checkout-index", "-f", "-z", "--stdin"], held.where, check=False,
                 env={"GIT_INDEX_FILE": held.index}, input="\0".join(paths) + "\0")
    notes = [] if proc.returncode == 0 else [f"git could not write back its files: "
                                             f"{g._message(proc)}"]
    for path in paths:
        full, mark = os.path.join(root, path), held.marks[path]
        try:
            if not _beneath(root, path, last=mark[0] != "l"):
                raise OSError(0, "it lies past a link")
            if mark[0] != "l":
                os.chmod(full, stat.S_IMODE(mark[1]))
            os.utime(full, ns=(mark[3], mark[3]), follow_symlinks=False)
        except OSError as exc:
            notes.append(f"could not put back {path}: {exc.strerror}")
    return notes
