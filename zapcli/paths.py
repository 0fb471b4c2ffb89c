"""Where things live (docs/explanation/rules.md#where-things-live); imports only `zapcli.errors`
and `zapcli.gitlinks`.

State (trails, captured output, database) lives under `ZAPCLI_HOME` or
`platformdirs.user_state_dir("zapcli")`; config under `ZAPCLI_CONFIG_HOME` or
`platformdirs.user_config_dir("zapcli")` — on Linux worked out as the library
would without importing it where the answer is plain (`_xdg`). Directories are created 0700 and
files zapcli writes for the user (definitions, memory, the database) 0600.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.errors import StateError
from zapcli.gitlinks import git_dir_at

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import MutableMapping

DIR_MODE = 0o700
FILE_MODE = 0o600


def state_dir() -> Path:
    """The state root (not created). `ZAPCLI_HOME` overrides the platform default;
    a relative value is taken from the current directory (and passed on to
    children made absolute: they run elsewhere)."""
    env = os.environ.get("ZAPCLI_HOME")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env)))
    plain = _xdg("XDG_STATE_HOME", ".local/state")
    if plain is not None:
        return Path(plain)
    import platformdirs  # only where the plain answer below is not sure

    return Path(platformdirs.user_state_dir("zapcli"))


def config_dir() -> Path:
    """The user config root (not created). `ZAPCLI_CONFIG_HOME` overrides
    (relative: from the current directory, as `ZAPCLI_HOME`)."""
    env = os.environ.get("ZAPCLI_CONFIG_HOME")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env)))
    plain = _xdg("XDG_CONFIG_HOME", ".config")
    if plain is not None:
        return Path(plain)
    import platformdirs

    return Path(platformdirs.user_config_dir("zapcli"))


def _xdg(variable: str, under_home: str) -> str | None:
    """`platformdirs`' answer on Linux in the common case, without importing
    it (~16 ms, a third of a `poll`): `$variable/zapcli` when that is an
    absolute path, else `$HOME/<under_home>/zapcli` when HOME is absolute.
    None elsewhere (another platform, no usable HOME): the library decides.
    `tests/test_paths_xdg.py` holds it to the library's answers."""
    import sys

    if sys.platform != "linux":
        return None
    base = os.environ.get(variable, "")
    if base.startswith("/"):
        return os.path.join(base, "zapcli")
    home = os.environ.get("HOME", "")
    if not home.startswith("/"):
        return None
    return os.path.join(home.rstrip("/") or "/", under_home, "zapcli")


def subagents_dir() -> Path:
    """`<state>/subagents`, where `<id>.jsonl`, `<id>.out`, `<id>.err` live."""
    return state_dir() / "subagents"


def locks_dir() -> Path:
    """`<state>/locks`: cross-process lock files (queue, retention)."""
    return state_dir() / "locks"


def make_dirs(path: Path) -> Path:
    """`mkdir -p` giving every directory it creates mode 0700 (Path.mkdir's
    `parents=True` would create the parents with the umask default, 0755).
    Folders that already exist keep their mode. Raises OSError."""
    try:
        path.mkdir(mode=DIR_MODE, exist_ok=True)
    except FileNotFoundError:
        if path.parent == path:
            raise
        make_dirs(path.parent)
        path.mkdir(mode=DIR_MODE, exist_ok=True)
    return path


def write_private(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Write `data` to `path` atomically (a temp file in the same folder,
    fsynced unless `sync` is False, then `os.replace`), mode 0600 whatever the
    umask, creating missing folders 0700: config, definitions and memory hold
    prompts and notes as private as a trail. Raises OSError."""
    make_dirs(path.parent)
    # not tempfile.mkstemp: it imports shutil, over the spawn path's import budget
    tmp = str(path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_private(path: Path, max_bytes: int) -> bytes | None:
    """What `write_private` wrote, as this user's copy: None when `path` is
    missing, a symlink, not a regular file, another user's, larger than
    `max_bytes` or unreadable (a cache read this way is then a miss)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        import stat

        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > max_bytes:
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def create_private(path: Path) -> None:
    """Create `path` empty with mode 0600 if it does not exist (before a
    library such as sqlite3 opens it with its own default, 0644)."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), FILE_MODE))


def ensure_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700; return it.

    Raises StateError("could not create subagent directory: <reason>") when the
    filesystem refuses (read-only, permissions, disk full, a file in the way).
    """
    try:
        make_dirs(path)
        if not path.is_dir():
            raise NotADirectoryError(f"{path} is not a directory")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StateError(
            f"could not create subagent directory: {reason} ({path}); {writable_hint()}"
        ) from None
    return path


SANDBOXED = "ZAPCLI_SANDBOXED"  # set in zapcli's OS sandbox, where its state is hidden


def writable_hint() -> str:
    """What to do when zapcli's state folder cannot be written."""
    if os.environ.get(SANDBOXED):
        return ("this runs inside zapcli's sandbox, where zapcli's own folders are hidden: "
                "an agent spawns through its subagent tool, or its parent runs with --no-sandbox")
    return "set ZAPCLI_HOME to a writable folder"


def workspace_of(cwd: Path) -> Path:
    """The git top-level containing `cwd`, or `cwd` itself outside a repository.

    Found by walking up for a `.git` entry (file or folder, so worktrees count)
    instead of running git, which would cost a process per command. A `.git`
    that is no repository — an empty folder, a file naming nothing (`gitdir:
    /nowhere`, which anything that writes below the top can plant), a file
    naming a git dir that does not name this folder back (`git_dir_at`) — is
    passed over.
    """
    cwd = cwd.resolve()
    for candidate in (cwd, *cwd.parents):
        if git_dir_at(candidate) is not None:
            return candidate
    return cwd


# In a runner's environment, and so in everything its work starts however
# detached (supervisor.kill.end_marked finds what it left that way). zapcli's
# own children — another runner, an on-finish helper — never carry it.
SUBAGENT_MARKER = "ZAPCLI_SUBAGENT_ID"


def child_env(environ: dict[str, str]) -> dict[str, str]:
    """`environ` for a child of zapcli's own (a runner, a helper) that runs
    in another directory: the state and config folders named, absolute, so
    it finds the same folders — and, where the platform default was used,
    need not work it out again (`platformdirs` costs a runner ~16 ms of
    start-up and ~1.5 MB); no subagent's marker (it is not that subagent's
    work)."""
    env = dict(environ)
    env.pop(SUBAGENT_MARKER, None)
    env["ZAPCLI_HOME"] = str(state_dir())
    env["ZAPCLI_CONFIG_HOME"] = str(config_dir())
    return own_process_env(env)


def own_process_env(env: dict[str, str]) -> dict[str, str]:
    """`env` (changed in place) for a process of zapcli's own started in
    another folder, and for the programs it looks up and starts there
    itself (git, bwrap, an agent CLI, a hook): PYTHONPATH cut to
    `own_module_path`, PATH to `own_exec_path`, a relative
    PYTHONPYCACHEPREFIX or PYTHONUSERBASE (read from that folder: a planted
    `.pyc` or `.pth` would run) left out. The caller's values are kept
    beside them, for the work that process starts (`restore_module_path`,
    `work_env`)."""
    for name in _CUT:
        _keep_aside(env, name)
    return env


def _keep_aside(env: MutableMapping[str, str], name: str) -> None:
    """`env[name]` cut (`_CUT`), the caller's value kept under `USER_VARS[name]`."""
    given = env.get(name)
    kept = _CUT[name](given)
    if given is not None and kept != given:
        env.setdefault(USER_VARS[name], given)
        if kept:
            env[name] = kept
        else:
            env.pop(name)


def _relative_dropped(value: str | None) -> str | None:
    return value if value is None or os.path.isabs(value) else ""


def own_exec_path(value: str | None) -> str | None:
    """PATH for the programs zapcli looks up itself: its absolute entries
    (the system's default when none is left). An empty entry (what `export
    PATH=$X:$PATH` makes of an unset X) or a relative one (`./node_modules/.bin`)
    names whatever folder the lookup runs in — a subagent's, where a
    sandboxed agent may have written a `git` or `bwrap` that zapcli would
    then run unsandboxed, with the user's keys."""
    kept = own_module_path(value)
    return kept if value is None or kept else os.defpath


def own_library_path(value: str | None) -> str | None:
    """LD_LIBRARY_PATH (and GCONV_PATH, LD_AUDIT) for the programs zapcli
    starts itself: only its absolute entries. The dynamic loader reads an
    empty entry (what `export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/x` makes of
    an unset one) or a relative one as the folder the program starts in — a
    subagent's tree for the git of `diff` and `merge`, the subagent's folder
    for bwrap — where a `libz.so.1` a sandboxed agent wrote would be loaded
    by them, unsandboxed, with the user's keys."""
    return own_module_path(value)


def own_preload(value: str | None) -> str | None:
    """LD_PRELOAD for the programs zapcli starts itself: an entry with a
    slash only if absolute (a relative one is read from the folder the
    program starts in); a bare name is looked up as any library."""
    if value is None:
        return None
    entries = value.replace(" ", ":").split(":")
    return ":".join(e for e in entries if e and ("/" not in e or os.path.isabs(e)))


USER_PYTHONPATH = "ZAPCLI_USER_PYTHONPATH"  # the caller's PYTHONPATH, while zapcli's own runs without
USER_VARS = {"PYTHONPATH": USER_PYTHONPATH, "PATH": "ZAPCLI_USER_PATH",
             "PYTHONPYCACHEPREFIX": "ZAPCLI_USER_PYTHONPYCACHEPREFIX",
             "PYTHONUSERBASE": "ZAPCLI_USER_PYTHONUSERBASE",
             "LD_LIBRARY_PATH": "ZAPCLI_USER_LD_LIBRARY_PATH",
             "LD_PRELOAD": "ZAPCLI_USER_LD_PRELOAD", "LD_AUDIT": "ZAPCLI_USER_LD_AUDIT",
             "GCONV_PATH": "ZAPCLI_USER_GCONV_PATH"}
# what every zapcli process cuts in its own environment at once, for the
# programs it looks up and starts itself wherever it runs them (git in a tree)
LOOKUPS = ("PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT", "GCONV_PATH")


def own_module_path(value: str | None) -> str | None:
    """PYTHONPATH for a Python process of zapcli's own started in another
    folder — a runner in its subagent's folder, an MCP server in an agent
    CLI's workspace: only its absolute entries. An empty entry (what
    `export PYTHONPATH=$PYTHONPATH:/x` makes of an unset one) means that
    folder, and a relative one lies in it; `-P` keeps neither off the module
    path, so a `sitecustomize.py` or `zapcli/` a subagent or a cloned
    repository wrote there would run as zapcli, outside the sandbox, with
    the user's keys."""
    if value is None:
        return None
    return os.pathsep.join(p for p in value.split(os.pathsep) if os.path.isabs(p))


_CUT = {"PYTHONPATH": own_module_path, "PATH": own_exec_path,
        "PYTHONPYCACHEPREFIX": _relative_dropped, "PYTHONUSERBASE": _relative_dropped,
        "LD_LIBRARY_PATH": own_library_path, "LD_PRELOAD": own_preload,
        "LD_AUDIT": own_library_path, "GCONV_PATH": own_library_path}


def work_env(env: dict[str, str]) -> dict[str, str]:
    """`env` (changed in place) for the work a runner starts: the caller's
    own PATH, PYTHONPYCACHEPREFIX, PYTHONUSERBASE and the loader's variables
    back, as it set them (`own_process_env` kept them aside for zapcli's own
    lookups)."""
    for name, user in USER_VARS.items():
        if name != "PYTHONPATH" and user in env:
            env[name] = env.pop(user)
    return env


def own_lookups(env: MutableMapping[str, str] | None = None) -> None:
    """In every zapcli process: PATH cut to `own_exec_path`, and the
    loader's variables to their absolute entries, for the programs it looks
    up and starts itself, wherever it runs them (`zapcli diff` runs git in a
    subagent's tree), the caller's kept for the work (`work_env`). `env`:
    another environment than this process's, changed in place."""
    for name in LOOKUPS:
        _keep_aside(os.environ if env is None else env, name)


def restore_module_path() -> None:
    """In a runner: the caller's own PYTHONPATH back, for the work it starts."""
    given = os.environ.pop(USER_PYTHONPATH, None)
    if given is not None:
        os.environ["PYTHONPATH"] = given


def placeholders_dir() -> Path:
    """`<state>/placeholders`: a record of each placeholder the sandbox made
    to hold a missing control file read-only (`zapcli.sandbox.placeholders`),
    so one a killed runner left is removed later."""
    return state_dir() / "placeholders"


def own_code() -> list[str]:
    """The folders zapcli's own processes — this one, its runners, the git
    and bwrap they start, the next `zapcli` the person types — and the
    programs the person runs take code from: this Python's environment
    (`sys.prefix`: a virtualenv, its `.pth` files), each folder on its module
    path (an editable install's `src/`), and the absolute folders of PATH,
    LD_LIBRARY_PATH and PYTHONPATH, as zapcli runs with them and as the
    caller set them. A sandbox keeps those in its writable roots read-only
    (`zapcli.sandbox.policy.resolve`), and an edit of a file tool there
    asks a person (`zapcli.approvals`)."""
    import sys

    # the first entry of a `python -m zapcli` is the folder it was typed in (the
    # person's own choice, as docs/explanation/security.md says), not where zapcli's code lies
    typed = not getattr(sys.flags, "safe_path", False) and sys.path[:1] in ([""], [os.getcwd()])
    places = [sys.prefix, sys.exec_prefix, *sys.path[1 if typed else 0:]]
    for name in ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH"):
        for value in (os.environ.get(name), os.environ.get(USER_VARS[name])):
            places += (value or "").split(os.pathsep)
    return [p for p in dict.fromkeys(places) if p and os.path.isabs(p)]


def trees_dir() -> Path:
    """Where `--worktree` subagents' trees live (not created):
    `<state>-worktrees/` beside the state folder
    (`~/.local/state/zapcli-worktrees`; `zapcli.worktrees.root`)."""
    state = state_dir()
    return state.parent / f"{state.name}-worktrees"


def control_roots() -> tuple[str, ...]:
    """zapcli's own folders, which no agent may edit without a person (the
    state folder holds the trails where approvals are recorded; the config
    folder holds config.yaml, mcp.json and the system definitions; the
    trees folder holds every subagent's tree, whose work `zapcli merge`
    takes as that subagent's). Agent work sees none of them, but the tree it
    works in (`own_tree`)."""
    return (str(state_dir()), str(config_dir()), str(trees_dir()))


def own_tree(workspace: str) -> str | None:
    """The subagent's tree (`<trees>/<id>`) `workspace` lies in, if any: the
    one folder of zapcli's own that agent work there still sees (whole:
    read-only but where it may write), while the other trees stay hidden
    from it. Only the workspace counts (the person's folder, the tree a
    `--worktree` spawn made, a child's inherited one), not a writable root."""
    top = os.path.realpath(trees_dir())
    real = os.path.realpath(workspace) if workspace else ""
    if not real.startswith(top + os.sep):
        return None
    return os.path.join(top, os.path.relpath(real, top).split(os.sep)[0])
