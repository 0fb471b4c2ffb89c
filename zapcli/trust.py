"""Workspace trust: a folder's own zapcli files take effect only once the
person trusted them, by content (docs: the security model, workspace trust).
Imports the standard library, `zapcli.paths`, `zapcli.boundedread`,
`zapcli.agentroots`; `zapcli.trust_store` when a record is read, hashlib
only when there is something to hash, yaml only to read `trusted:` from a user's config.yaml
that names it. Trusting (writing records) is `zapcli.trust_store`'s.

What needs trust (`units`): `.zapcli/config.yaml`, `.zapcli/mcp.json`, each
definition file in `.zapcli/subagents/`, and each skill folder in
`.zapcli/skills/`, `.claude/skills/` and `.agents/skills/` — the files that
choose programs to run, where requests and keys go, and what an agent is
told. Memory (`.zapcli/agent-memory/`, `.zapcli/memory/`) is data: never
hashed, never asked about.

Where the decision comes from (`decide`), the first that applies:
1. inherited: a subagent's runner, a `zapcli run`, and whatever a
   subagent's work starts take the decision recorded when they were spawned
   (`Verdict.frozen()` in the spawn record): a file is used only while its
   content is the one trusted then, so a file planted mid-run reaches no
   later child. Inside a subagent's work with nothing to inherit, nothing is
   trusted.
2. the user's own config.yaml `trusted:` folders (for scripts and CI):
   every workspace in and under them, as it is when the command starts —
   except a repository inside another repository in or under that folder
   (`nested_in`): anything that may write in the outer one (a subagent's
   work, which may write anything below its workspace's top) can make one,
   so it is trusted by name (3.), unless git itself manages it as a
   submodule of the outer one; nor one below a folder agent work was given
   to write in (`zapcli.agentroots`: nothing on disk marks a plain folder).
3. the record `zapcli trust` writes in the user's config folder
   (`<config>/trust/`): each file's sha256. A file whose content is not the
   recorded one, or that is new, is ignored until trusted again.

The loaders (config, definitions, MCP servers, skills) take a unit's bytes
from `verdict(ws).read(rel)`: the very bytes whose hash was checked, or None.
Inside `Scope(ws)` one decision serves every loader of one command.
"""

from __future__ import annotations

import _thread
import os
from pathlib import Path

from zapcli import agentroots
from zapcli.boundedread import read_at_most
from zapcli.gitlinks import core_worktree, git_dir_at
from zapcli.paths import SUBAGENT_MARKER, config_dir

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

CONFIG = ".zapcli/config.yaml"
MCP = ".zapcli/mcp.json"
DEFINITIONS = ".zapcli/subagents"
DEFINITION_SUFFIXES = (".yml", ".yaml")
SKILLS = (".zapcli/skills", ".claude/skills", ".agents/skills")
# What a loader reads of a file at most (config.yaml, mcp.json and a definition
# 256 KB + 1 byte, a SKILL.md 64 KB): what is hashed is all that can take effect.
READ_BYTES = 256 * 1024
STATES = {"trusted": "trusted", "changed": "changed since you trusted it",
          "new": "not trusted", "unreadable": "cannot be read"}


# ----------------------------------------------------------------- the units


def units(workspace: Path) -> list[str]:
    """The workspace's own zapcli files that exist, as paths relative to it
    (`/`-separated), in a stable order: what a trust covers."""
    out = []
    if os.path.isdir(workspace / ".zapcli"):
        out += [rel for rel in (CONFIG, MCP) if os.path.lexists(workspace / rel)]
        out += [f"{DEFINITIONS}/{name}" for name in _names(workspace / DEFINITIONS)
                if os.path.splitext(name)[1] in DEFINITION_SUFFIXES
                and not os.path.isdir(workspace / DEFINITIONS / name)]
    for folder, root in skill_roots(workspace).items():
        out += [f"{root}/{name}" for name in _names(folder)
                if os.path.lexists(folder / name / "SKILL.md")]
    return out


def skill_roots(workspace: Path) -> dict[Path, str]:
    """The workspace's own skill folders (folder -> unit prefix). In the home
    folder `.claude/skills` and `.agents/skills` are the user's own skills,
    not a workspace's."""
    roots = {workspace / root: root for root in SKILLS}
    if any(os.path.isdir(f) for f in list(roots)[1:]) and \
            os.path.realpath(workspace) == os.path.realpath(os.path.expanduser("~")):
        return {workspace / SKILLS[0]: SKILLS[0]}
    return roots


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def is_skill(rel: str) -> bool:
    return rel.startswith(tuple(root + "/" for root in SKILLS))


def digest_bytes(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data[:READ_BYTES + 1]).hexdigest()


def path_of(workspace: Path, rel: str) -> Path:
    """The file a unit's content is: the file itself, or a skill's SKILL.md
    (the only file of a skill zapcli itself reads; the rest of its folder is
    data, as any file of the workspace)."""
    return workspace / rel / "SKILL.md" if is_skill(rel) else workspace / rel


def content(workspace: Path, rel: str) -> bytes:
    """What a loader reads of a unit: its first `READ_BYTES` + 1 bytes.
    Raises OSError: missing, unreadable, not a regular file (a FIFO never
    blocks)."""
    return read_at_most(path_of(workspace, rel), READ_BYTES)


# --------------------------------------------------------------- the verdict


class Verdict:
    """The decision for one workspace. `trusted`: unit -> the hash trusted
    (None: everything, as it is now: `trusted:` in the user's config).
    `how`: "trusted" (the record), "config", "inherited", "subagent" (inside
    a subagent's work, nothing inherited), "none" (never trusted).
    `nested_in`: (the `trusted:` folder, the outer folder) when a `trusted:`
    folder would cover the workspace but it is a repository inside that
    repository (`nested_in`) or, `worked`, below a folder agent work was
    given to write in (`zapcli.agentroots`), so only the record decides."""

    def __init__(self, workspace: Path, trusted: dict[str, str] | None, how: str,
                 at: str | None = None, nested_in: tuple[Path, Path] | None = None,
                 worked: bool = False):
        self.workspace, self.trusted, self.how, self.at = workspace, trusted, how, at
        self.nested_in, self.worked = nested_in, worked
        self._seen: dict[str, tuple[bytes, str] | None] = {}  # unit -> (content, its hash)
        self._unread: dict[str, str] = {}  # why a unit could not be read
        self._units: list[str] | None = None

    def _look(self, rel: str) -> tuple[bytes, str] | None:
        """The unit's content and hash, read once per verdict (None: missing
        or unreadable)."""
        if rel not in self._seen:
            try:
                data = content(self.workspace, rel)
                self._seen[rel] = (data, digest_bytes(data))
            except OSError as exc:
                self._seen[rel] = None
                self._unread[rel] = exc.strerror or str(exc)
        return self._seen[rel]

    def digest(self, rel: str) -> str | None:
        """The unit's hash now (None: missing or unreadable)."""
        seen = self._look(rel)
        return seen[1] if seen else None

    def read(self, rel: str) -> bytes | None:
        """What the loaders use of unit `rel`: the very bytes whose hash was
        checked (so a file swapped after the check is never what is used),
        or None when the unit is missing, unreadable or not trusted."""
        if not self.allows(rel):
            return None
        seen = self._look(rel)
        return seen[0] if seen else None

    def why(self, rel: str) -> str:
        """The unit's state in words: "trusted", "not trusted", "changed
        since you trusted it", "cannot be read: is a FIFO ..."."""
        state = self.state(rel)
        if state == "unreadable":
            return f"cannot be read: {self._unread.get(rel, 'missing')}"
        return STATES[state]

    def allows(self, rel: str) -> bool:
        """Whether the loaders may use unit `rel` (a missing one: nothing to use)."""
        if self.trusted is not None and rel not in self.trusted:
            return False
        now = self.digest(rel)
        return now is not None and (self.trusted is None or self.trusted[rel] == now)

    def state(self, rel: str) -> str:
        if self.allows(rel):
            return "trusted"
        if self.digest(rel) is None:
            return "unreadable"
        return "changed" if self.trusted and rel in self.trusted else "new"

    def units(self) -> list[str]:
        if self._units is None:
            self._units = units(self.workspace)
        return self._units

    def ignored(self) -> list[tuple[str, str]]:
        """(unit, state) of every unit the loaders skip."""
        return [(rel, self.state(rel)) for rel in self.units() if not self.allows(rel)]

    def frozen(self) -> dict[str, Any]:
        """For a spawn record: what its children may use (`inherit`)."""
        return {"workspace": str(self.workspace),
                "files": {rel: self.digest(rel) for rel in self.units() if self.allows(rel)}}

    def notice(self, skills: bool = True) -> str | None:
        """One line: what was ignored and the command that trusts it; None
        when nothing was. `skills` False: not the skills (a shell command or
        an agent CLI uses none of zapcli's; `.claude/skills` is Claude's own)."""
        ignored = [(rel, st) for rel, st in self.ignored() if skills or not is_skill(rel)]
        if not ignored:
            return None
        names = [rel if state == "new" else f"{rel} ({self.why(rel)})" for rel, state in ignored]
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        command = f"zapcli trust {_quoted(self.workspace)}"
        them = "them" if len(ignored) > 1 else "it"
        if self.how in ("inherited", "subagent"):
            return (f"ignored {shown}: not trusted when the work that started this began (a "
                    f"subagent's work never trusts a folder; a person does: {command})")
        if self.how == "config":  # trusted whatever it holds: only what cannot be read is left
            return f"ignored {shown}"
        if self.how == "trusted":
            return (f"ignored {shown}: this folder is trusted as it was, not as it is now; "
                    f"to use {them}: {command}")
        if self.nested_in and self.worked:
            prefix, outer = self.nested_in
            return (f"this folder lies inside {outer}, where agent work was given to write: "
                    f"`trusted:` ({prefix}) does not cover it (that work could have made its "
                    f"files), so its own zapcli files were ignored: {shown}; if you made {them}, "
                    f"to use {them}: {command}")
        if self.nested_in:
            prefix, outer = self.nested_in
            return (f"this folder is a repository inside the repository {outer}: `trusted:` "
                    f"({prefix}) does not cover such a folder (work in the outer one can make "
                    f"one), so its own zapcli files were ignored: {shown}; if you made it, to use "
                    f"{them}: {command}")
        return (f"this folder is not trusted, so its own zapcli files were ignored: {shown}; "
                f"to use {them}: {command}")


def _quoted(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


def real(workspace: Path | str) -> Path:
    return Path(os.path.realpath(workspace))


_INHERITED: list[dict[str, Any]] = []  # the spawner's decision, once `inherit` set it


def inherit(record: Any, tree: str | None = None) -> None:
    """Take the decision a spawner recorded (`Verdict.frozen()`; anything
    else: nothing trusted) for the rest of this process: a runner, a `zapcli
    run`, a spawn from a subagent's work. `tree`: the worktree zapcli checked
    out of that workspace for a `--worktree` subagent, which the decision
    covers too (its files, as everywhere, only in the content trusted)."""
    ok = isinstance(record, dict) and isinstance(record.get("workspace"), str) and \
        isinstance(record.get("files"), dict)
    files = {str(k): str(v) for k, v in record["files"].items()} if ok else {}
    places = {record["workspace"]} if ok else set()
    _INHERITED[:] = [{"workspaces": places | ({str(real(tree))} if ok and tree else set()),
                      "files": files}]


def inherited() -> bool:
    return bool(_INHERITED)


def decide(workspace: Path | str) -> Verdict:
    """The decision for `workspace` now (see the module's docstring)."""
    ws = real(workspace)
    if _INHERITED:
        got = _INHERITED[0]
        return Verdict(ws, dict(got["files"]) if str(ws) in got["workspaces"] else {}, "inherited")
    if os.environ.get(SUBAGENT_MARKER):
        return Verdict(ws, {}, "subagent")
    if not any(os.path.isdir(folder) for folder in (ws / ".zapcli", *skill_roots(ws))):
        return Verdict(ws, {}, "none")  # nothing to trust: no record, no config read
    nested = None
    for folder in trusted_folders():
        if ws == folder or folder in ws.parents:
            outer = nested_in(ws, folder)
            worked = outer is None and (outer := agentroots.worked_above(ws)) is not None
            if outer is None:
                return Verdict(ws, None, "config")
            nested = nested or (folder, outer, worked)
    from zapcli.trust_store import read

    rec = read(ws)
    where = (nested[0], nested[1]) if nested else None
    worked = bool(nested and nested[2])
    if rec is None:
        return Verdict(ws, {}, "none", nested_in=where, worked=worked)
    return Verdict(ws, rec["files"], "trusted", rec.get("trusted_at"), nested_in=where,
                   worked=worked)


def nested_in(ws: Path, prefix: Path) -> Path | None:
    """The repository in or under the `trusted:` folder `prefix` that the
    workspace `ws` lies inside, so that `prefix` does not cover it; None when
    it does: no folder from `ws`'s parent up to `prefix` is a repository, or
    each that is manages the one below it as a submodule (`_submodule_of`).
    A stat per folder in between; a submodule's config read."""
    inner = ws
    for folder in ws.parents:
        if folder != prefix and prefix not in folder.parents:
            return None
        if git_dir_at(folder) is None:
            continue
        if not _submodule_of(inner, folder):
            return folder
        inner = folder
    return None


def _submodule_of(inner: Path, outer: Path) -> bool:
    """Whether git manages the repository `inner` as a submodule of `outer`:
    its git folder lies in `outer`'s `modules/` (in its common git folder,
    which nothing writing in `outer`'s tree can change) and its config's
    `core.worktree` names `inner` back — as `git submodule` makes them. A
    `.git` file an agent wrote pointing at another submodule's git folder
    fails the second test."""
    own, theirs = git_dir_at(inner), git_dir_at(outer)
    if own is None or theirs is None:
        return False
    try:
        named = read_at_most(theirs / "commondir", 4096).decode("utf-8", "replace").strip()
    except OSError:
        named = ""
    common = Path(os.path.realpath(theirs / named)) if named else theirs
    if common / "modules" not in own.parents:
        return False
    try:
        config = read_at_most(own / "config", 64 * 1024).decode("utf-8", "replace")
    except OSError:
        return False
    worktree = core_worktree(config)
    return worktree is not None and os.path.realpath(own / worktree) == str(inner)


def trusted_folders() -> tuple[Path, ...]:
    """`trusted:` of the user's own config.yaml, resolved (config checks its
    form and says what is wrong; here a bad value trusts nothing)."""
    try:
        raw = read_at_most(config_dir() / "config.yaml", 256 * 1024)
    except OSError:
        return ()
    if b"trusted" not in raw:
        return ()
    import yaml

    try:
        data = yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError):
        return ()
    value = data.get("trusted") if isinstance(data, dict) else None
    if not isinstance(value, list):
        return ()
    return tuple(real(os.path.expanduser(v)) for v in value
                 if isinstance(v, str) and os.path.isabs(os.path.expanduser(v)))


# ------------------------------------------------------- one command, one look


_SCOPES: dict[tuple[int, str], list[Verdict]] = {}


class Scope:
    """`with Scope(ws) as verdict:` every `verdict(ws)` on this thread gets
    this one decision (each file hashed once per command); re-entrant."""

    def __init__(self, workspace: Path | str):
        self.key = (_thread.get_ident(), str(real(workspace)))

    def __enter__(self) -> Verdict:
        stack = _SCOPES.setdefault(self.key, [])
        stack.append(stack[-1] if stack else decide(self.key[1]))
        return stack[-1]

    def __exit__(self, *exc: object) -> None:
        stack = _SCOPES[self.key]
        stack.pop()
        if not stack:
            del _SCOPES[self.key]


def verdict(workspace: Path | str) -> Verdict:
    """This command's decision for `workspace` (its `Scope`), else a fresh one."""
    stack = _SCOPES.get((_thread.get_ident(), str(real(workspace))))
    return stack[-1] if stack else decide(workspace)


def allows(workspace: Path | str, rel: str) -> bool:
    """Whether a loader may use the workspace's unit `rel`."""
    return verdict(workspace).allows(rel)


def own_file(path: Path | str) -> tuple[Path, str] | None:
    """(workspace, unit) when `path` is a workspace's own mcp.json or
    config.yaml; None for the user's own files (under the config folder)."""
    path = Path(os.path.abspath(path))
    if config_dir() in path.parents:
        return None
    for rel in (MCP, CONFIG):
        if path.as_posix().endswith("/" + rel):
            return Path(path.as_posix()[:-len(rel) - 1]), rel
    return None


def hold_too(workspace: Path, rel: str, value: str) -> None:
    """One more file for the decision this process holds (`inherit`): a
    definition the person approved saving during a `zapcli run`, which its
    next spawn may use."""
    if _INHERITED and str(workspace) in _INHERITED[0]["workspaces"]:
        _INHERITED[0]["files"][rel] = value
