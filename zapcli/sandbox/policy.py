"""What one sandbox may write and reach (docs/explanation/rules.md#sandbox): `Policy`, and `resolve`,
which turns an approval mode, the workspace, `writable_roots` and a
definition's `sandbox: {network, writable}` into it.

Imports `zapcli.approvals` (the one place that says what a mode lets run) and
`zapcli.control` (the one list of control files). A definition chooses inside
what its approval mode allows, never past it: a `writable` path outside the
mode's ceiling is left read-only with a note. zapcli's own state and config
folders are hidden (an empty read-only folder in their place: trails,
approvals and the MCP server's token are not the agent's), all but the
subagent's scratch folder.

Control files (another program runs what they say: `.git`, `.zapcli`, the
agent CLIs' settings, `.envrc`, …; the caller passes the whole list) are
read-only in every writable root whether they exist or not, but in `full`
mode: one that exists is bound read-only; for one that does not, the first
missing part of its path is a placeholder — an empty folder, or for a name
a program reads as a file a file that reads as "nothing configured", that
the caller makes before bwrap starts and removes after
(`zapcli.sandbox.placeholders`), so nothing can be created there. Below
a root's top, the control files that exist are held where they are (a
nested repository's `.git` and what its config names; no placeholders
there): `zapcli.sandbox.deeper` walks each root, bounded, with a note
past its bound.

A `--worktree` tree's git (its admin folder, the shared objects, its own
branch) comes in from the caller as `GitAccess`, worked out where git's
layout is known (`zapcli.worktrees.fence`); nothing of a repository is made
writable here from what a tree's own files say.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping

from zapcli.approvals import write_ceiling
from zapcli.control import PRESENT, of_root
from zapcli.control import match as control_match
from zapcli.control import names as control_names
from zapcli.plain import frozen
from zapcli.sandbox.deeper import LIMIT, Walk

TYPE_CHECKING = False  # `typing` costs a sandboxed runner ~3 ms: annotations only
if TYPE_CHECKING:
    from typing import Any

SCRATCH_SIZE = 1 << 30  # the scratch folder's cap when nothing says otherwise: 1 GiB


@frozen
class Policy:
    """Real paths. `writable` are bound read-write over a read-only `/`;
    `readonly` (the control files of a writable root that exist, a tree's git
    link files) stay read-only inside them; `placeholders` (where one does not
    exist yet) too, once made (`zapcli.sandbox.placeholders.hold`: bwrap
    refuses to start on a missing one); `hidden` become empty and read-only.
    `scratch` is a fresh tmpfs of at most `scratch_size` bytes (0: the
    kernel's default, half the memory), gone with the sandbox. `sockets`:
    unix sockets (or folders of them) outside the writable roots that stay
    reachable with the network off. `binds` are (source, target): the source
    folder bound read-write in the target's place (a tree's own branch folder)."""

    network: bool = False
    writable: tuple[str, ...] = ()
    readonly: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    scratch: str = ""
    scratch_size: int = SCRATCH_SIZE
    sockets: tuple[str, ...] = ()
    # a whole program in the sandbox (an agent CLI, `zapcli.sandbox.whole`): /tmp is an
    # empty writable folder of its own; what is bound under /tmp comes back above it
    own_tmp: bool = False
    placeholders: tuple[str, ...] = ()
    # (source, target): a file bound read-only over another that exists, in this sandbox
    # alone (git's exclude file, extended by the held placeholder files: `placeholders`)
    covers: tuple[tuple[str, str], ...] = ()
    # (source, target): a folder bound read-write in the target's place (a tree's own branch)
    binds: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"network": self.network, "writable": list(self.writable),
                "readonly": list(self.readonly), "hidden": list(self.hidden),
                "scratch": self.scratch, "scratch_size": self.scratch_size,
                "sockets": list(self.sockets), "placeholders": list(self.placeholders),
                **({"own_tmp": True} if self.own_tmp else {}),
                **({"covers": [list(c) for c in self.covers]} if self.covers else {}),
                **({"binds": [list(b) for b in self.binds]} if self.binds else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        def paths(key: str) -> tuple[str, ...]:
            return tuple(str(p) for p in data.get(key) or ())

        size = data.get("scratch_size")
        return cls(network=bool(data.get("network")), writable=paths("writable"),
                   readonly=paths("readonly"), hidden=paths("hidden"),
                   scratch=str(data.get("scratch") or ""),
                   scratch_size=size if isinstance(size, int) and size >= 0 else SCRATCH_SIZE,
                   sockets=paths("sockets"), own_tmp=bool(data.get("own_tmp")),
                   placeholders=paths("placeholders"),
                   covers=tuple((str(c[0]), str(c[1])) for c in data.get("covers") or ()
                                if isinstance(c, (list, tuple)) and len(c) == 2),
                   binds=tuple((str(b[0]), str(b[1])) for b in data.get("binds") or ()
                               if isinstance(b, (list, tuple)) and len(b) == 2))

    def describe(self) -> str:
        """One line for a person (the trail's start diagnostic, doctor)."""
        rw = ", ".join(self.writable) or "nothing"
        return (f"network {'on' if self.network else 'off'}; writable: {rw} and the scratch "
                f"folder {self.scratch}")


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def _expand(path: str, workspace: str) -> str:
    path = os.path.expanduser(path)
    return os.path.realpath(path if os.path.isabs(path) else os.path.join(workspace, path))


def _in_protected(path: str, roots: list[str], names: tuple[str, ...],
                  own: dict[str, tuple[str, ...]], asked: dict[str, Any]) -> str | None:
    """The control name `path` is or lies in below the root it lies in (a
    root's own name does not count: a workspace may live anywhere). `own`:
    each root's names (`of_root`), kept for the one `resolve` (it may ask git)."""
    base = next((r for r in roots if _under(path, r)), None)
    rel = os.path.relpath(path, base) if base else path
    if base and base not in own:
        own[base] = of_root(base, names, roots, asked=asked)
    return control_match(rel, own[base] if base else names, anywhere=True)


def _guard(root: str, names: tuple[str, ...], roots: list[str]
           ) -> tuple[list[str], list[str], list[str]]:
    """(what exists and is bound read-only, the placeholders to make, notes)
    for the control names of one writable root. Each name is walked part by
    part: the first part that is missing is the placeholder (nothing inside
    it can be made then), except for a name held only where it exists
    (`zapcli.control.PRESENT`); a file where a folder is named is held as it is
    (else it could be removed and the folder made); a link is noted, and its
    target held when it lies in a writable root."""
    readonly: list[str] = []
    missing: list[str] = []
    notes: list[str] = []
    for name in names:
        path = root
        parts = name.split("/")
        for i, part in enumerate(parts):
            path = os.path.join(path, part)
            try:
                st = os.lstat(path)
            except OSError:
                if name not in PRESENT:
                    missing.append(path)
                break
            if stat.S_ISLNK(st.st_mode):
                target = os.path.realpath(path)
                if os.path.exists(target) and any(_under(target, r) for r in roots):
                    readonly.append(target)  # what it points to, at least
                notes.append(f"control file {path} is a symbolic link: commands could replace "
                             "the link itself (a mount cannot hold a link), so it is not "
                             "protected; replace it with what it points to")
                break
            if i == len(parts) - 1 or not stat.S_ISDIR(st.st_mode):
                readonly.append(path)
                break
    return readonly, missing, notes


def _code_in(code: Iterable[str], roots: list[str]) -> list[tuple[str, str]]:
    """(folder, the writable root it lies in) for each of `code` in one."""
    out = []
    for raw in dict.fromkeys(code):
        if not raw or not os.path.isabs(raw):
            continue
        place = os.path.realpath(raw)
        root = next((r for r in roots if _under(place, r)), None)
        if root is not None and (place, root) not in out:
            out.append((place, root))
    return out


@frozen
class GitAccess:
    """What a commit on its own branch writes of the git of the tree at `root`
    (a `--worktree` subagent's): `writable` folders and files (its admin
    folder, the shared objects, its branch's reflog), `readonly` files inside
    them (the admin folder's `commondir`, `gitdir`, `config.worktree`), and
    `binds` (its branch's own folder in place of the folder of every
    branch), and `covers` bound read-only (the shared objects, read-only,
    inside the tree's own object folder that `binds` puts in their place).
    Granted only with that root: a root left read-only gets none."""

    root: str
    writable: tuple[str, ...] = ()
    readonly: tuple[str, ...] = ()
    binds: tuple[tuple[str, str], ...] = ()
    covers: tuple[tuple[str, str], ...] = ()


def linked_git(root: str, access: Iterable[GitAccess]) -> GitAccess | None:
    """The git access given for the writable root `root`, if any."""
    return next((a for a in access if os.path.realpath(a.root) == root), None)


def _kept(shown: Iterable[str], shut: list[str]) -> list[str]:
    """The `shown` folders (real) inside a hidden one: a subagent's own tree
    among zapcli's trees (`zapcli.paths.own_tree`), in view read-only and
    writable where the work may write, while the other trees stay hidden."""
    return [os.path.realpath(k) for k in shown if k and os.path.isdir(k)
            and any(_under(os.path.realpath(k), h) for h in shut)]


def _held(declared: list[str], names: tuple[str, ...], code: Iterable[str], shut: list[str],
          readonly: list[str], walk: int, runs: list[Any] | None = None,
          asked: dict[str, Any] | None = None) -> tuple[list[str], list[str], list[str]]:
    """(what to bind read-only besides `readonly` (what is held or fenced
    already), the placeholders, notes) in
    the writable roots `declared`: each root's control names at its top
    (`_guard`), the code folders in them, and the control files that exist
    below the tops (`zapcli.sandbox.deeper`, at most `walk` entries looked at)."""
    held: list[str] = []
    missing: list[str] = []
    notes: list[str] = []

    def guard(root: str, rels: Iterable[str], placeholders: bool = True) -> list[str]:
        found, absent, said = _guard(root, tuple(rels), declared)
        held.extend(p for p in found if p not in held and p not in readonly)
        missing.extend(p for p in absent if placeholders and p not in missing)
        return said

    runs = [] if runs is None else runs
    for root in declared:
        notes += guard(root, of_root(root, names, declared, runs, asked))
    notes += list(dict.fromkeys(f"{line} (a program your git runs reads it)"
                                for *_, got in runs for line in got.said))
    for place, root in _code_in(code, declared):
        if place == root and root not in held:
            held.append(root)
        notes += [*(guard(root, (os.path.relpath(place, root),)) if place != root else []),
                  f"{place} is where zapcli, or a program you run, takes code from "
                  "(its Python environment, module path, PATH or LD_LIBRARY_PATH): it stays "
                  "read-only, so nothing run here can plant what runs next outside the sandbox; "
                  "install zapcli in an environment of its own (pipx) and keep the workspace "
                  "off those paths to let commands write there"]
    deeper = Walk(names, declared, [*readonly, *held, *missing], shut, limit=walk)
    for root in declared:
        deeper.root(root)
    for path in deeper.found:  # each exists: held where it is, never a placeholder
        root = next(r for r in declared if _under(path, r))
        notes += guard(root, (os.path.relpath(path, root),), placeholders=False)
    return held, missing, notes + deeper.said()


def resolve(mode: str, *, workspace: str, writable_roots: Iterable[str] = (),
            network: bool = False, writable: Iterable[str] | None = None, scratch: str,
            hidden: Iterable[str] = (), shown: Iterable[str] = (),
            control: Iterable[str] | None = None,
            git: Iterable[GitAccess] = (), code: Iterable[str] = (),
            walk: int = LIMIT, runs: list[Any] | None = None) -> tuple[Policy, list[str]]:
    """(the policy, one note per declared path that was left out and why).

    `writable` None (not declared) means the workspace and `writable_roots`;
    relative paths are taken from the workspace. `control`: the one list of
    control files (`zapcli.backends.registry.control_files`; None: the
    names no backend owns). `git`: what a `--worktree` tree's commits need,
    for the root it names. `code`: folders zapcli's own processes, or the
    programs they run, take code from (`zapcli.host.sandbox.own_code`): one
    in a writable root stays read-only (a missing one is held by a
    placeholder), as the control files are (not in `full` mode). `hidden`:
    zapcli's own folders, empty inside; `shown`: one inside them that is the
    work's all the same (its tree: `_kept`). `walk`: the most folder entries
    looked at for control files that exist below the roots' tops
    (`zapcli.sandbox.deeper`). `runs` gets what the roots' git runs that is
    held by its folder or cannot be held (`zapcli.control.of_root`), for
    the caller to refuse (`zapcli.gitconfigs.unholdable`). Raises
    ValueError for an unknown mode."""
    roots = tuple(writable_roots)
    names = control_names() if control is None else tuple(control)
    ceiling, protect = write_ceiling(mode, workspace, roots)
    limits = [os.path.realpath(c) for c in ceiling] if ceiling is not None else None
    shut = [os.path.realpath(h) for h in hidden if h and os.path.isdir(h)]
    kept = _kept(shown, shut)
    wanted = [workspace, *roots] if writable is None else list(writable)
    notes: list[str] = []
    out: list[str] = []
    own: dict[str, tuple[str, ...]] = {}
    asked: dict[str, Any] = {}  # what git said of each repository's configuration, asked once
    for raw in wanted:
        real = _expand(raw, workspace)
        why = None
        if not os.path.exists(real):
            why = "it does not exist"
        elif limits is not None and not any(_under(real, c) for c in limits):
            why = f"{mode} mode lets commands write only in the workspace and writable_roots"
        elif protect and (inside := _in_protected(real, limits or [os.path.realpath(workspace)],
                                                  names, own, asked)):
            why = f"it is inside {inside}, a control file only a person may change"
        elif any(_under(real, h) for h in shut) and not any(_under(real, k) for k in kept):
            why = "it is inside zapcli's own folders, which only a person may change"
        if why:
            notes.append(f"sandbox.writable {raw}: {why}; it stays read-only")
        elif real not in out:
            out.append(real)
    declared = list(out)
    access = list(git)
    links: list[str] = []
    binds: list[tuple[str, str]] = []
    covers: list[tuple[str, str]] = []
    for root in declared:
        given = linked_git(root, access)
        if given is not None:
            out += [g for g in given.writable if g not in out]
            links += [p for p in given.readonly if p not in links]
            binds += given.binds
            covers += given.covers
    # a shown folder no writable one covers comes back in view, read-only (the
    # tree of a subagent spawned in its subfolder: git there reads the tree's .git)
    readonly: list[str] = [k for k in kept if not any(_under(k, w) for w in out)]
    missing: list[str] = []
    if protect:
        given_git = [w for w in out if w not in declared]  # a tree's git: its own to fence
        held, missing, said = _held(declared, names, code, shut, [*readonly, *given_git], walk,
                                    runs, asked)
        readonly += held
        notes += said
    return Policy(network=network, writable=tuple(out),
                  readonly=tuple(readonly + [p for p in links if p not in readonly]),
                  hidden=tuple(dict.fromkeys(shut)), scratch=scratch,
                  placeholders=tuple(missing), binds=tuple(binds), covers=tuple(covers)), notes
