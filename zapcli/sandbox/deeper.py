"""The control files that already exist BELOW a writable root's top, found
at the sandbox's start so that `zapcli.sandbox.policy.resolve` holds them
read-only too (the top's own names it holds itself, existing or not).
Imports the standard library and `zapcli.control` (what a folder's own
settings name: `named`).

Another repository of the person's inside the workspace (a folder of
checkouts, an ignored clone in a repository, `third_party/lib`) has a
`.git` whose hooks and config the person's next `git commit` there runs;
an existing `a/.vscode/tasks.json` runs on folder open. `walk` looks at
each folder below the top, breadth first (shallow first), and returns
every control name that exists there (`a/.git`, `a/.vscode/tasks.json`,
`b/.envrc`), and for each folder that holds one, what that folder's own
settings name (`zapcli.control.named`: a nested repository's git config
files, its `core.hooksPath` folder, the programs its settings run; yarn's
and mise's files), and the git dir a `.git` FILE names (and its common
dir) when that lies in a writable root. Only what exists: deeper down,
nothing gets a placeholder (one in every folder would litter the person's
tree; a name made there during the run is the file tools' to ask about,
at any depth, and the security model's to say).

Pruned, so a start stays cheap: links are never followed (a link that is
itself a control name is returned: the policy notes it); a folder already
held (a control folder, what the caller holds at the top, zapcli's hidden
folders, another writable root, walked on its own) is not entered; nor
are bulky folders that are tools' output, not the person's configuration:
`node_modules` (packages: thousands of files each), `.venv`, `venv` and
`site-packages` (installed Python packages), `__pycache__`, `.tox` and
`.nox` (test environments), `.mypy_cache`, `.pytest_cache`,
`.ruff_cache` (caches), `target` (cargo's and Maven's build output),
`.gradle` (Gradle's caches). A bulky folder that is itself a repository's
top (a checkout named `target`: a `.git` in it) is walked all the same.
The programs in them are what the person's tools run, a class the
security model names on its own (`.venv`, hooks' interpreters).

Bounded: at most `LIMIT` folder entries in all per start, and git asked
about at most `ASKED` nested repositories (~5 ms each); past either, the
rest is not looked at, and a note says where (never a silent gap).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable

from zapcli.control import named

LIMIT = 200_000  # folder entries looked at per sandbox start (all roots): ~0.15 s at most
ASKED = 64       # nested repositories git is asked about per start
BULKY = frozenset({"node_modules", ".venv", "venv", "site-packages", "__pycache__", ".tox",
                   ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "target", ".gradle"})
# a folder with one of these entries gets `named` (yarn's, mise's per-environment files)
_SETTINGS = (".yarnrc.yml", ".yarnrc", "mise", ".config")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Walk:
    """One sandbox start's walk of the writable `roots` (real paths, each
    walked by `root`): `found` (absolute paths to hold), `said()` (notes).
    `held`: what is held already (not entered, nor held again); `fenced`:
    folders not entered (zapcli's hidden ones). `limit` and `asked` bound it
    (the defaults: `LIMIT`, `ASKED`)."""

    def __init__(self, names: Iterable[str], roots: Iterable[str], held: Iterable[str],
                 fenced: Iterable[str] = (), limit: int = LIMIT, asked: int = ASKED) -> None:
        self.names = [n.split("/") for n in names]
        self.roots = list(roots)
        self.skip = set(held)
        self.fenced = set(fenced) | set(self.roots)
        self.left = limit
        self.limit = limit
        self.asks = self.asked = asked
        self.unasked: list[str] = []
        self.found: list[str] = []
        self.notes: list[str] = []

    def root(self, root: str) -> None:
        """Walk below `root`'s top (its own names are the caller's)."""
        queue = deque([root])
        while queue:
            folder = queue.popleft()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)  # the same walk each start
            except OSError:
                continue
            if len(entries) > self.left:
                self._stopped(root, [folder, *queue])
                return
            self.left -= len(entries)
            if folder != root:
                self._folder(folder, entries)
            for entry in entries:
                path = entry.path
                if path in self.skip or path in self.fenced or not _is_dir(entry):
                    continue
                if entry.name in BULKY and not os.path.lexists(os.path.join(path, ".git")):
                    continue
                queue.append(path)

    def _hold(self, path: str) -> None:
        """Hold `path` (not entered then), unless it lies in what is held already."""
        place = path
        while any(_under(place, r) for r in self.roots):
            if place in self.skip:
                return
            place = os.path.dirname(place)
        self.found.append(path)
        self.skip.add(path)

    def _folder(self, folder: str, entries: list[os.DirEntry[str]]) -> None:
        """Hold the control names that exist in `folder`, and what its settings name."""
        here = {e.name: e for e in entries}
        held = False
        for parts in self.names:
            if parts[0] in here and os.path.lexists(path := os.path.join(folder, *parts)):
                self._hold(path)
                held = True
        git = here.get(".git")
        if git is not None and not git.is_symlink() and git.is_file():
            self._git_file(git.path)
        if held or any(s in here for s in _SETTINGS):
            self._named(folder, repository=git is not None)

    def _named(self, folder: str, *, repository: bool) -> None:
        if repository:
            if self.asks <= 0:
                self.unasked.append(folder)
                repository = False
            self.asks -= 1
        for path in named(folder, repository=repository):
            real = os.path.normpath(path)
            if any(_under(real, r) for r in self.roots) and os.path.lexists(real):
                self._hold(real)

    def _git_file(self, path: str) -> None:
        """The git dir a `.git` file names (and the common dir that names), where
        it lies in a writable root: its hooks and config are the repository's."""
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                line = f.read(4096).partition("\n")[0]
        except OSError:
            return
        if not line.startswith("gitdir:"):
            return
        gitdir = os.path.realpath(os.path.join(os.path.dirname(path), line[7:].strip()))
        places = [gitdir]
        try:
            with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="replace") as f:
                places.append(os.path.realpath(os.path.join(gitdir, f.read(4096).strip())))
        except OSError:
            pass
        for place in places:
            if os.path.isdir(place) and any(_under(place, r) for r in self.roots):
                self._hold(place)

    def _stopped(self, root: str, rest: list[str]) -> None:
        shown = ", ".join(rest[:3]) + (f" and {len(rest) - 3} more" if len(rest) > 3 else "")
        self.notes.append(
            f"the sandbox looked for existing control files below {root}'s top in its first "
            f"{self.limit} folder entries and stopped there: what lies in {shown} (and below) was "
            "not looked at, so a .git, .envrc or editor task file there is writable to commands; "
            "give work a smaller folder to write in, or keep other checkouts out of it")
        self.left = 0

    def said(self) -> list[str]:
        """The notes, with the nested repositories git was not asked about."""
        if not self.unasked:
            return self.notes
        shown = ", ".join(self.unasked[:3]) + (
            f" and {len(self.unasked) - 3} more" if len(self.unasked) > 3 else "")
        return [*self.notes, f"{len(self.unasked)} repositories below a writable root's top "
                f"({shown}) were not asked what their git config names beyond .git (over "
                f"{self.asked} in one start): their .git is held read-only, but a hooks folder or "
                "program their config names elsewhere is not"]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
