"""The one view of the file system that the built-in agent's file tools get:
every path an agent names is opened beneath its root without following links
out, so the file read or written is the file the approval decision looked
at, and nothing inside zapcli's own folders is ever opened or listed — the
view the sandbox gives commands (docs: the security model). Imports only the
standard library and `zapcli.boundedread` (ctypes lazily, once, to reach
openat2).

Roots are the places agent work may write (the workspace, `writable_roots`,
the scratch folder). A path inside one is opened from the root's descriptor:
with openat2 `RESOLVE_BENEATH` where the kernel has it (5.6+), else one
component at a time with `O_NOFOLLOW` from the root's descriptor, reading
each link and refusing one that leads out. Reads follow links that stay
inside the root; writes follow no link at all (`RESOLVE_NO_SYMLINKS`), so a
folder swapped for a link between the decision and the write is refused,
never followed. A path outside every root is opened by its real path, the
last component never followed for a write (nothing outside the roots is the
agent's to change).

Hidden are zapcli's state and config folders (but the scratch folder in
them), and other processes' and the runner's own `/proc/<pid>`: a read
outside the roots (or beneath a root that holds one, a workspace in the home
folder) is checked on the descriptor it opened (`/proc/self/fd`), so no
link, `..` or rename reaches them; beneath any other root nothing can.
"""

from __future__ import annotations

import _thread  # threading's lock itself: threading is not otherwise loaded by a spawn
import errno
import os
import stat

from zapcli.boundedread import regular

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
MAX_LINKS = 40  # links followed in one path, as the kernel allows
_O_PATH = getattr(os, "O_PATH", 0)
_DIR = _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_OPEN = os.O_NONBLOCK | os.O_CLOEXEC  # never block on a FIFO's open


class Refused(OSError):
    """A path the view does not open; `str()` says why, for the model."""

    def __init__(self, code: int, why: str, path: str):
        super().__init__(code, why, path)
        self.why = why

    def __str__(self) -> str:
        return self.why


# ------------------------------------------------------------- openat2


_lock = _thread.allocate_lock()
_openat2: list = []  # [the call] once probed, [None] where the kernel has none


def _load() -> object:
    with _lock:
        if _openat2:
            return _openat2[0]
        call = None
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)

            class How(ctypes.Structure):
                _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                            ("resolve", ctypes.c_uint64)]

            syscall = libc.syscall
            syscall.restype = ctypes.c_long
            number = 547 if os.uname().machine.startswith("alpha") else 437

            def openat2(dirfd: int, path: str, flags: int, mode: int, resolve: int) -> int:
                how = How(flags, mode, resolve)
                fd = syscall(number, dirfd, os.fsencode(path), ctypes.byref(how),
                             ctypes.sizeof(how))
                if fd < 0:
                    code = ctypes.get_errno()
                    raise OSError(code, os.strerror(code), path)
                return int(fd)

            os.close(openat2(os.open("/", _DIR), ".", _DIR, 0, RESOLVE_BENEATH))
            call = openat2
        except (OSError, AttributeError, ImportError):
            call = None  # ENOSYS, or a seccomp filter's EPERM: walk instead
        _openat2.append(call)
        return call


def _nofollow_walk(root_fd: int, rel: str, flags: int, mode: int, links: bool) -> int:
    """openat2's answer without openat2: one component at a time from
    `root_fd`, each opened with O_NOFOLLOW; a link is read and followed only
    when `links` and only while it stays beneath (EXDEV otherwise); ELOOP
    for any link when not `links`."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    stack = [os.dup(root_fd)]
    hops = 0
    try:
        while parts:
            name = parts.pop(0)
            if name == "..":
                if len(stack) == 1:
                    raise OSError(errno.EXDEV, "leads out of its root", rel)
                os.close(stack.pop())
                continue
            try:
                if not parts:
                    return os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=stack[-1])
                stack.append(os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=stack[-1]))
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                try:
                    target = os.readlink(name, dir_fd=stack[-1])
                except OSError:
                    raise exc from None  # not a link: a file where a folder was named
            if not links:
                raise OSError(errno.ELOOP, "goes through a symbolic link", rel)
            hops += 1
            if target.startswith("/") or hops > MAX_LINKS:
                raise OSError(errno.EXDEV if hops <= MAX_LINKS else errno.ELOOP,
                              "leads out of its root", rel)
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
        return os.dup(stack[-1])  # the root itself (or where `..` led back to)
    finally:
        for fd in stack:
            os.close(fd)


def open_beneath(root_fd: int, rel: str, flags: int, mode: int = 0o666, *,
                 links: bool = False) -> int:
    """A descriptor for `rel` beneath the folder `root_fd`, never resolved
    outside it (EXDEV), following links only inside it when `links` (ELOOP
    for any link otherwise). Raises OSError."""
    call = _openat2[0] if _openat2 else _load()
    resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (0 if links else RESOLVE_NO_SYMLINKS)
    if call is not None:  # openat2 takes a mode only to create (EINVAL otherwise)
        tmpfile = getattr(os, "O_TMPFILE", 0)
        mode = mode if flags & os.O_CREAT or (tmpfile and flags & tmpfile == tmpfile) else 0
        return call(root_fd, rel or ".", flags, mode, resolve)  # type: ignore[operator]
    return _nofollow_walk(root_fd, rel, flags, mode, links)


def makedirs_beneath(root_fd: int, rel: str, mode: int = 0o777) -> None:
    """`mkdir -p rel` beneath `root_fd`, through no link. Raises OSError
    (ELOOP: a link in the way; ENOTDIR: a file)."""
    fd = os.dup(root_fd)
    try:
        for name in [p for p in rel.split("/") if p not in ("", ".")]:
            if name == "..":
                raise OSError(errno.EXDEV, "leads out of its root", rel)
            try:
                os.mkdir(name, mode, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                nxt = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ENOTDIR and stat.S_ISLNK(
                        os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise OSError(errno.ELOOP, "goes through a symbolic link", rel) from None
                raise
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)


# ------------------------------------------------------------- the view


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class View:
    """What the file tools may open. `roots`: where agent work writes (the
    approval roots and the scratch folder); `hidden`: zapcli's own folders;
    `shown`: folders inside `hidden` that are the agent's all the same (its
    scratch folder). Paths given to the methods are absolute and normalized."""

    def __init__(self, roots: tuple[str, ...] = (), hidden: tuple[str, ...] = (),
                 shown: tuple[str, ...] = ()):
        spelled: dict[str, str] = {}
        for root in roots:
            if root:
                spelled[os.path.normpath(root)] = os.path.realpath(root)
                spelled[os.path.realpath(root)] = os.path.realpath(root)
        # the deepest root first: a writable root inside the workspace is its own root
        self._roots = sorted(spelled.items(), key=lambda kv: len(kv[0]), reverse=True)
        self.roots = tuple(dict.fromkeys(real for _, real in self._roots))
        self.hidden = tuple(os.path.realpath(h) for h in hidden if h)
        self.shown = tuple(os.path.realpath(s) for s in shown if s)
        # roots with a hidden folder inside (a workspace in the home folder): a
        # path there is checked before it is opened, as one outside every root
        self._mixed = {r for r in self.roots if any(_under(h, r) for h in self.hidden)}
        self._fds: dict[str, int] = {}  # each root's descriptor, opened once
        self._fds_lock = _thread.allocate_lock()

    def _root_fd(self, root: str) -> int:
        fd = self._fds.get(root)
        if fd is None:
            with self._fds_lock:
                fd = self._fds.get(root)
                if fd is None:
                    fd = self._fds[root] = os.open(root, _DIR)
        return fd

    def close(self) -> None:
        """Close the roots' descriptors (opened again when next needed)."""
        with self._fds_lock:
            fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # --- where a path lies

    def root_of(self, path: str) -> tuple[str, str] | None:
        """(the real root, the path relative to it) for a path spelled inside a
        root, else None."""
        for spelled, real in self._roots:
            if _under(path, spelled):
                return real, os.path.relpath(path, spelled) if path != spelled else "."
        return None

    def hides(self, real: str) -> str | None:
        """The hidden folder a real path lies in (None: it is in view)."""
        if real.startswith("/proc/"):
            head = real.split("/")[2]
            if head.isdigit() or head in ("self", "thread-self"):
                return "/proc/" + head
        for hidden in self.hidden:
            if _under(real, hidden) and not any(_under(real, s) for s in self.shown):
                return hidden
        return None

    def visible(self, path: str, real: str | None = None) -> bool:
        """Whether a listing (glob, grep) may name `path`: not hidden, and a
        path inside a root does not lead out of it."""
        real = real or os.path.realpath(path)
        if self.hides(real):
            return False
        found = self.root_of(path)
        return found is None or _under(real, found[0])

    # --- opening

    def _why_hidden(self, path: str, hidden: str) -> Refused:
        what = "another process" if hidden.startswith("/proc/") else f"zapcli's own folder {hidden}"
        return Refused(errno.EACCES, f"{path} is inside {what}, which agents do not see (their "
                       "commands see nothing there either)", path)

    def _precheck(self, path: str, root: str | None) -> None:
        """Refuse a path spelled into a hidden folder, or whose real folder is
        one, before anything is opened: a missing file there is not told
        apart from one that exists. (Inside a root without a hidden folder
        the open itself refuses every way out.)"""
        if root is not None and root not in self._mixed:
            return
        hidden = self.hides(path) or self.hides(
            os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path)))
        if hidden:
            raise self._why_hidden(path, hidden)

    def _checked(self, fd: int, path: str) -> int:
        """`fd` when what it opened is in view; closed and Refused otherwise."""
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            real = os.path.realpath(path)  # no /proc: the path's own resolution
        hidden = self.hides(real)
        if hidden:
            os.close(fd)
            raise self._why_hidden(path, hidden)
        return fd

    def open_read(self, path: str) -> int:
        """A descriptor of the regular file at `path`, for reading. Inside a
        root, links are followed only while they stay inside it. Raises
        Refused (hidden, or a link out of the root) or OSError as
        `boundedread.open_regular` does."""
        found = self.root_of(path)
        self._precheck(path, found[0] if found else None)
        if found is None:
            fd = self._checked(os.open(path, os.O_RDONLY | _OPEN), path)
        else:
            root, rel = found
            fd = self._at(root, rel, os.O_RDONLY | _OPEN, 0, links=True, path=path)
            if root in self._mixed:  # beneath a root that holds a hidden folder: look where
                fd = self._checked(fd, path)
        return regular(fd, path)

    def open_write(self, path: str, *, create: bool = True,
                   makedirs: bool = True) -> tuple[int, bool]:
        """(a read-write descriptor of the regular file at `path`, whether it
        was created). Inside a root no link is followed; outside every root
        the path's real folder is used and its last component never followed.
        Raises Refused or OSError (ENOENT without `create`)."""
        found = self.root_of(path)
        self._precheck(path, found[0] if found else None)
        if found is None:  # outside every root: where its real folder is
            folder = os.path.realpath(os.path.dirname(path))
            inside = self.root_of(os.path.join(folder, os.path.basename(path)))
            if inside is not None:
                found = inside
            else:
                return self._outside(folder, os.path.basename(path), create, makedirs)
        root, rel = found
        flags = os.O_RDWR | _OPEN
        try:
            return regular(self._at(root, rel, flags, 0, links=False, path=path), path), False
        except FileNotFoundError:
            if not create:
                raise
        if makedirs and os.path.dirname(rel):
            try:
                makedirs_beneath(self._root_fd(root), os.path.dirname(rel))
            except OSError as exc:
                raise self._refusal(exc, path, root) from None
        try:
            return regular(self._at(root, rel, flags | os.O_CREAT | os.O_EXCL, 0o666,
                                    links=False, path=path), path), True
        except FileExistsError:  # made meanwhile: open it as it is
            return regular(self._at(root, rel, flags, 0, links=False, path=path), path), False

    def _outside(self, folder: str, name: str, create: bool, makedirs: bool) -> tuple[int, bool]:
        if makedirs and create:
            os.makedirs(folder, exist_ok=True)
        dfd = os.open(folder, _DIR)
        try:
            try:
                fd = os.open(name, os.O_RDWR | _OPEN | os.O_NOFOLLOW, dir_fd=dfd)
                return regular(fd, os.path.join(folder, name)), False
            except FileNotFoundError:
                if not create:
                    raise
            fd = os.open(name, os.O_RDWR | os.O_CREAT | _OPEN | os.O_NOFOLLOW, 0o666, dir_fd=dfd)
            return regular(fd, os.path.join(folder, name)), True
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._refusal(exc, os.path.join(folder, name), folder) from None
            raise
        finally:
            os.close(dfd)

    def _at(self, root: str, rel: str, flags: int, mode: int, *, links: bool, path: str) -> int:
        try:
            return open_beneath(self._root_fd(root), rel, flags, mode, links=links)
        except OSError as exc:
            if exc.errno in (errno.EXDEV, errno.ELOOP):
                raise self._refusal(exc, path, root) from None
            raise

    def _refusal(self, exc: OSError, path: str, root: str) -> OSError:
        if exc.errno not in (errno.EXDEV, errno.ELOOP):
            return exc
        target = os.path.realpath(path)
        if exc.errno == errno.EXDEV:
            return Refused(errno.EXDEV, f"{path} leads out of {root} through a symbolic link "
                           f"(to {target}); name {target} itself if you mean it", path)
        return Refused(errno.ELOOP, f"{path} goes through a symbolic link, and writes never "
                       f"follow one (it leads to {target}); name the real path if you mean it",
                       path)
