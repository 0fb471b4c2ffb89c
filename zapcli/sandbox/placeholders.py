"""Placeholders: what zapcli makes where a control file does not exist yet
(a folder's `.zapcli/`, `.envrc`, `opencode.json`, the `.git` of a folder
that is no repository), so the sandbox can hold that name read-only — a
mount needs something to mount on — and removes again once no sandbox uses
it. Imports the standard library and this room (`whole.in_view`,
`whole.git_common`).

What is made. A name a program reads as a file is held by a regular file
whose content that program reads as "nothing configured" (`content`: `{}`
for JSON and YAML, nothing for TOML, dotenv and `.envrc`, `repos: []` for
pre-commit, an empty task or launch list for VS Code); programs inside
the sandbox (opencode, Claude Code, mise, direnv, pre-commit) and the
user's own tools in the same folder during the run see that one file, the
same content inside and out. Any other name (`.git`, `.zapcli`, `.claude`,
the missing `.vscode` of `.vscode/tasks.json`) is held by an empty folder:
git takes an empty `.git` folder for no repository (an empty `.git` file
breaks it), and a folder holds everything that could be made inside it. A
file, like a folder, can be neither written, removed, renamed over nor
made into a folder inside the sandbox (a read-only mount point).

git. An empty folder is invisible to git; a file is not. Inside the
sandbox every held file of a repository whose exclude file is in view is
ignored for that sandbox alone: its `<common dir>/info/exclude` is covered
(bound read-only over it, `Policy.covers`) by a copy of itself plus one
anchored line per held file, written in the sandbox's scratch folder on
the host (out of the sandbox's sight: a tmpfs is there) and removed with
the hold. So `git status` lists none of them and `git add -A` takes none
into the agent's commits, whatever the command's environment, while the
repository's own files stay byte for byte as they were. This beats an
environment-level `core.excludesFile`, which a command can unset and
which would replace the user's own global excludes (their ignored `.env`
would then be committed). A repository without an exclude file gets no
cover (a note says so): none can be bound where no file is. Outside the
sandbox the user's `git status` lists the held files as untracked while
a run lasts; they go when it ends.

Who removes what. Every sandbox that binds a control path read-only holds
a shared `flock` on it for its whole life; whoever ends last (its
exclusive lock granted at once) removes a placeholder that is still the
one that was made and still empty or still its neutral content — one that
another sandbox, of this user or another, still mounts is never removed
under it (removing a mount point in another namespace would unmount it
there). Each placeholder made is recorded in a folder of zapcli's state
(`records`, one small file per sandbox start: the paths, and for a file
the inode and change time it had once written), so one left by a runner
killed with SIGKILL is removed by the next sandbox that starts or by
`zapcli gc` (`sweep`). One that holds something of the user's now is
kept and forgotten: a folder the memory tool wrote into, a file written
in place or replaced (another inode, another change time, other bytes).

A caller runs bwrap with `Held.policy` after `hold` and calls `release`
once bwrap has ended.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from dataclasses import dataclass, field, replace

from zapcli.sandbox.policy import Policy
from zapcli.sandbox.whole import git_common, in_view

TRIES = 5  # a placeholder removed under us between its open and its lock: made again
LOCK_WAIT_S = 5.0

# What a file placeholder holds: content a program of that format reads as no configuration.
# By the name's last parts first, then by its suffix; a name known to neither is a folder.
BY_NAME: tuple[tuple[str, bytes], ...] = (
    (".vscode/tasks.json", b'{"version": "2.0.0", "tasks": []}\n'),
    (".vscode/launch.json", b'{"version": "0.2.0", "configurations": []}\n'),
    (".pre-commit-config.yaml", b"repos: []\n"),  # pre-commit refuses `{}`, runs nothing on this
    (".envrc", b""),
    (".env", b""),
)
BY_SUFFIX: dict[str, bytes] = {
    ".json": b"{}\n", ".jsonc": b"{}\n", ".json5": b"{}\n",
    ".yaml": b"{}\n", ".yml": b"{}\n",  # an empty YAML document is null, which most refuse
    ".toml": b"", ".ini": b"", ".cfg": b"", ".conf": b"",
}
COVER_HEADER = b"# zapcli: control files held read-only while a sandbox runs\n"


def content(path: str) -> bytes | None:
    """What the placeholder at `path` holds when the name is a file (its
    neutral content), or None when it is held by an empty folder."""
    norm = "/" + path.replace(os.sep, "/").strip("/")
    for tail, text in BY_NAME:
        if norm.endswith("/" + tail):
            return text
    name = norm.rsplit("/", 1)[-1]
    if name.startswith(".env."):  # .env.local, .env.development: dotenv files
        return b""
    return BY_SUFFIX.get(os.path.splitext(name)[1].lower())


def _same(st: os.stat_result, other: os.stat_result) -> bool:
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


def _unchanged(path: str, st: os.stat_result, fd: int, stamps: list[list[int]]) -> bool:
    """Whether the regular file `st` (open as `fd`) is still a placeholder as
    made: its name's neutral content, and (when recorded) the inode and
    change time it had once written. Any write or replacement changes one."""
    want = content(path)
    if want is None or st.st_size != len(want):
        return False
    if stamps and [st.st_ino, st.st_ctime_ns] not in stamps:
        return False
    try:
        return os.pread(fd, len(want) + 1, 0) == want
    except OSError:
        return False


@dataclass
class Held:
    """The policy as it can be mounted now (placeholders that could not be made
    left out: nothing else could make them either; git's exclude files
    covered), the locks that keep its control paths, and `notes` on what was
    left out."""

    policy: Policy
    records: str = ""
    notes: list[str] = field(default_factory=list)
    _locks: list[tuple[str, int]] = field(default_factory=list)
    _covers: list[str] = field(default_factory=list)

    def release(self) -> None:
        """Let go of every control path; remove each placeholder no other
        sandbox still holds, and the exclude files made for git inside. Call
        once bwrap has ended; safe to call twice."""
        locks, self._locks = self._locks, []
        covers, self._covers = self._covers, []
        for cover in covers:
            try:
                os.unlink(cover)
            except OSError:
                pass
        book = _Book(self.records) if locks and self.records else None
        for path, fd in reversed(locks):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)  # another sandbox still holds it: the last one removes it
                continue
            try:
                if book is not None:
                    book.settle(path, fd)
            finally:
                os.close(fd)
        if book is not None:
            book.save()


class _Book:
    """The records: one JSON file per sandbox start that made placeholders,
    `{"paths": [...], "stamps": {path: [inode, ctime_ns]}}` (stamps: of the
    files). Read whole (a few small files), settled path by path under each
    one's exclusive lock, and written back once."""

    def __init__(self, records: str):
        self.records = records
        self.files: dict[str, list[str]] = {}
        self.stamps: dict[str, dict[str, list[int]]] = {}
        try:
            names = os.listdir(records)
        except OSError:
            names = []
        for name in names:
            if name.endswith(".json"):
                try:
                    with open(os.path.join(records, name), encoding="utf-8") as fh:
                        data = json.load(fh)
                    paths, stamps = data.get("paths"), data.get("stamps") or {}
                except (OSError, ValueError, AttributeError):
                    continue
                if isinstance(paths, list):
                    self.files[name] = [p for p in paths if isinstance(p, str)]
                if isinstance(stamps, dict):
                    self.stamps[name] = {p: s for p, s in stamps.items()
                                         if isinstance(s, list) and len(s) == 2}
        self.settled: set[str] = set()

    def recorded(self, path: str) -> bool:
        return any(path in paths for paths in self.files.values())

    def stamps_of(self, path: str) -> list[list[int]]:
        return [s[path] for s in self.stamps.values() if path in s]

    def still_made(self, path: str, st: os.stat_result, fd: int) -> bool:
        """Whether the folder or file `st` (open as `fd`) is a recorded
        placeholder as it was made: an empty folder, or a file unchanged."""
        if not self.recorded(path):
            return False
        if stat.S_ISDIR(st.st_mode):
            return not os.listdir(fd)
        return stat.S_ISREG(st.st_mode) and _unchanged(path, st, fd, self.stamps_of(path))

    def settle(self, path: str, fd: int) -> None:
        """With the path's exclusive lock held: remove it when it is a
        recorded placeholder as made and still at `path`; forget it when it
        holds something of the user's now or is gone."""
        if not self.recorded(path):
            return
        try:
            here, held = os.lstat(path), os.fstat(fd)
        except OSError:
            self.settled.add(path)
            return
        if not _same(here, held):
            return  # another one is there now: decided on when that one is held
        try:
            if not self.still_made(path, held, fd):
                self.settled.add(path)  # it holds something now: it is the user's
                return
            os.rmdir(path) if stat.S_ISDIR(held.st_mode) else os.unlink(path)
        except OSError:
            return
        self.settled.add(path)

    def save(self) -> None:
        for name, paths in self.files.items():
            left = [p for p in paths if p not in self.settled]
            if left == paths:
                continue
            target = os.path.join(self.records, name)
            try:
                if left:
                    stamps = self.stamps.get(name, {})
                    _write(target, left, {p: s for p, s in stamps.items() if p in left})
                else:
                    os.unlink(target)
            except OSError:
                continue


def _write(target: str, paths: list[str], stamps: dict[str, list[int]] | None = None) -> None:
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"paths": paths, **({"stamps": stamps} if stamps else {})}, fh)
    os.replace(tmp, target)


def _record(records: str, paths: list[str]) -> str:
    """Record the placeholders about to be made, before they are (a crash
    right after leaves them sweepable); the record's file. Best effort: one
    that cannot be recorded is still made (the protection comes first)."""
    if not records or not paths:
        return ""
    target = os.path.join(records, f"{os.getpid()}.{os.urandom(6).hex()}.json")
    try:
        os.makedirs(records, mode=0o700, exist_ok=True)
        _write(target, paths)
    except OSError:
        return ""
    return target


def _open(path: str) -> int | None:
    """A read-only descriptor of the folder or regular file at `path` (a
    link is never followed, a fifo never waited on); None for anything else."""
    if not _kept_kind(os.lstat(path)):
        return None  # a device is never opened: that alone may act
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            return None
        raise
    if not _kept_kind(os.fstat(fd)):  # swapped since the look
        os.close(fd)
        return None
    return fd


def _kept_kind(st: os.stat_result) -> bool:
    return stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)


def is_placeholder(path: str, records: str) -> bool:
    """Whether `path` is a placeholder zapcli made to hold a missing control
    file, as it was made (to say so to whoever wants to write a file there)."""
    try:
        fd = _open(path)
    except OSError:
        return False
    if fd is None:
        return False
    try:
        st = os.fstat(fd)
        want = content(path)
        if stat.S_ISREG(st.st_mode) and (want is None or st.st_size != len(want)):
            return False  # the common case, a file of the user's: no record read
        return _Book(records).still_made(path, st, fd)
    except OSError:
        return False
    finally:
        os.close(fd)


def sweep(records: str) -> list[str]:
    """Remove the placeholders no sandbox holds any more (left by a runner
    that was killed); the paths removed."""
    book = _Book(records)
    removed: list[str] = []
    for path in sorted({p for paths in book.files.values() for p in paths}, reverse=True):
        try:
            fd = _open(path)
        except OSError:
            fd = None
        if fd is None:
            book.settled.add(path)  # gone, or neither folder nor file: not ours to touch
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live sandbox holds it
        try:
            book.settle(path, fd)
            if not os.path.lexists(path):
                removed.append(path)
        finally:
            os.close(fd)
    book.save()
    return removed


def _make(path: str) -> bool:
    """Make the placeholder at `path`: an empty folder, or a file of the
    name's neutral content. False when something is there already."""
    text = content(path)
    try:
        if text is None:
            os.mkdir(path, 0o755)
            return True
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
    except FileExistsError:
        return False
    try:
        view = memoryview(text)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return True


def _lock(path: str, may_make: bool) -> tuple[int | None, bool]:
    """(a descriptor of the folder or file at `path` under a shared lock,
    whether it was made here); (None, False) when it is neither (a link is
    bound as its target is, and noted by the policy) or cannot be made.
    Raises OSError for a placeholder that cannot be made."""
    for _ in range(TRIES):
        made = False
        if may_make and not os.path.lexists(path):
            made = _make(path)
        try:
            fd = _open(path)
        except FileNotFoundError:
            continue  # removed by a sandbox that ended just now: make it again
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                return None, False
            raise
        if fd is None:
            return None, False
        try:
            _shared(fd)
        except OSError:
            os.close(fd)
            raise
        try:
            if _same(os.fstat(fd), os.lstat(path)):
                return fd, made
        except OSError:
            pass
        os.close(fd)  # removed (or replaced) while we waited: again
    raise OSError(errno.EBUSY, "kept being removed while the sandbox started", path)


def _shared(fd: int, wait_s: float = LOCK_WAIT_S) -> None:
    """A shared lock on `fd`; an exclusive one is held only for a remover's
    look and removal, so waiting long means its holder is stopped: EBUSY."""
    import time

    end = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > end:
                raise OSError(errno.EBUSY, "another process holds it locked") from None
            time.sleep(0.01)


def hold(policy: Policy, records: str = "") -> Held:
    """Make the policy's placeholders and hold every control path it binds
    read-only inside a writable root (a shared lock each); cover git's
    exclude files so git inside ignores the held files. `records`: the
    folder in zapcli's state where placeholders are recorded (empty: none
    are, and none are removed)."""
    if records:
        sweep(records)
    held = Held(policy, records)
    locked: set[str] = set()
    made: list[str] = []
    stamps: dict[str, list[int]] = {}
    intent = [p for p in policy.placeholders if not os.path.lexists(p)]
    record = _record(records, intent)

    def lock(path: str, make: bool) -> None:
        for folder in _between(path, policy.writable):  # another's placeholder it lies in
            if folder not in locked:
                locked.add(folder)
                fd, _ = _lock(folder, may_make=False)
                if fd is not None:
                    held._locks.append((folder, fd))
        if path not in locked:
            locked.add(path)
            fd, fresh = _lock(path, may_make=make)
            if fresh:
                made.append(path)
            if fd is not None:
                held._locks.append((path, fd))
                st = os.fstat(fd)
                if fresh and stat.S_ISREG(st.st_mode):
                    stamps[path] = [st.st_ino, st.st_ctime_ns]

    kept: list[str] = []
    for path in policy.placeholders:
        try:
            lock(path, True)
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                held.release()
                raise
            held.notes.append(f"{path} could not be held read-only ({exc.strerror}): nothing "
                              "can create it there")
            continue
        kept.append(path)
    for path in policy.readonly:
        if _root_of(path, policy.writable) is None:
            continue  # only a writable root holds placeholders, another sandbox's too
        try:
            lock(path, False)
        except OSError:
            continue
    if record and (made != intent or stamps):  # only what was made here is this start's to remove
        try:
            _write(record, made, stamps) if made else os.unlink(record)
        except OSError:
            pass
    held.policy = replace(policy, placeholders=tuple(kept))
    _cover_git(held, set(made))
    return held


def _root_of(path: str, roots: tuple[str, ...]) -> str | None:
    """The innermost writable root `path` lies strictly inside."""
    return max((r for r in roots if path.startswith(r.rstrip("/") + "/")), key=len, default=None)


def _between(path: str, roots: tuple[str, ...]) -> list[str]:
    """The folders between the writable root `path` lies in and `path`,
    outermost first (`.vscode` for `.vscode/tasks.json`): a placeholder
    another sandbox made there must outlive this one's, so it is held too."""
    root = _root_of(path, roots)
    if root is None:
        return []
    folders = []
    folder = os.path.dirname(path)
    while folder != root and folder.startswith(root.rstrip("/") + "/"):
        folders.append(folder)
        folder = os.path.dirname(folder)
    return folders[::-1]


# ---------------------------------------------------------------- git inside the sandbox


def _held_files(held: Held, made: set[str]) -> list[str]:
    """The placeholder files this hold mounts: made here, or made by another
    sandbox of this user (recorded) and unchanged since."""
    book: _Book | None = None
    out = []
    for path, fd in held._locks:
        if content(path) is None:
            continue
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            continue
        if path not in made:
            book = book or _Book(held.records)
            if not book.still_made(path, st, fd):
                continue
        out.append(path)
    return out


def _repository(folder: str) -> tuple[str, str] | None:
    """(the top of the git worktree `folder` lies in, the exclude file git
    reads for it), found as git finds it: the nearest `.git` upward that is a
    repository (an empty `.git` placeholder is none: git looks further up)."""
    while True:
        dotgit = os.path.join(folder, ".git")
        common = git_common(folder) if os.path.isfile(dotgit) else dotgit
        if common and os.path.isfile(os.path.join(common, "HEAD")):
            return folder, os.path.join(common, "info", "exclude")
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _pattern(rel: str) -> bytes:
    """An anchored gitignore line matching exactly `rel` (`/`-separated)."""
    escaped = "".join("\\" + c if c in "*?[]\\!# " else c for c in rel)
    return ("/" + escaped + "\n").encode("utf-8", "surrogateescape")


def _cover_git(held: Held, made: set[str]) -> None:
    """Bind over each repository's exclude file, in this sandbox only, a
    copy of it that also ignores the held files (`Policy.covers`)."""
    files = _held_files(held, made)
    if not files:
        return
    by_exclude: dict[str, list[str]] = {}
    tops: dict[str, str] = {}
    for path in files:
        found = _repository(os.path.dirname(path))
        if found is not None:
            by_exclude.setdefault(found[1], []).append(path)
            tops[found[1]] = found[0]
    covers: list[tuple[str, str]] = []
    policy = held.policy
    for exclude, paths in by_exclude.items():
        if not in_view(policy, exclude):
            continue
        try:
            with open(exclude, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise OSError(errno.EINVAL, "not a file")
                original = fh.read()
        except OSError:
            held.notes.append(f"git inside the sandbox lists {', '.join(paths)} as untracked: "
                              f"the repository at {tops[exclude]} has no exclude file "
                              f"({exclude}) to extend for the run")
            continue
        if not policy.scratch or not os.path.isdir(policy.scratch):
            held.notes.append(f"git inside the sandbox lists {', '.join(paths)} as untracked: "
                              "the sandbox has no scratch folder to keep its exclude file in")
            continue
        text = original + (b"\n" if original and not original.endswith(b"\n") else b"")
        text += COVER_HEADER + b"".join(_pattern(os.path.relpath(p, tops[exclude]).replace(
            os.sep, "/")) for p in paths)
        cover = os.path.join(policy.scratch, f".git-exclude.{os.getpid()}.{os.urandom(6).hex()}")
        try:
            fd = os.open(cover, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            held.notes.append(f"git inside the sandbox lists {', '.join(paths)} as untracked: "
                              f"its exclude file could not be written ({exc.strerror})")
            continue
        held._covers.append(cover)
        try:
            with open(fd, "wb") as fh:
                fh.write(text)
        except OSError as exc:
            held.notes.append(f"git inside the sandbox lists {', '.join(paths)} as untracked: "
                              f"its exclude file could not be written ({exc.strerror})")
            continue
        covers.append((cover, os.path.realpath(exclude)))
    if covers:
        held.policy = replace(policy, covers=(*policy.covers, *covers))
