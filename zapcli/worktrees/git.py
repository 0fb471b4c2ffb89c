"""Running git, and what a worktree receipt is made of.

Imports only the standard library, `zapcli.errors`, `zapcli.gitenv` (the
variables never passed on: `DROPPED`) and `zapcli.plain`. Every
git zapcli runs goes through `git()`, the one runner, which makes git run no
program that configuration or a tree could choose (issue 27, C31):

- the repository is named outright (`Place`: GIT_DIR, GIT_COMMON_DIR,
  GIT_WORK_TREE from what zapcli recorded, or at spawn found by zapcli:
  `around`), never discovered from a tree's `.git` file or an admin
  folder's `commondir`, which an agent can write, nor its work tree from
  the configuration (`core.worktree`: `_settled` refuses one naming
  another folder);
- configuration that runs a program is overridden for the command (`NEUTRAL`,
  through GIT_CONFIG_COUNT): hooks, `core.fsmonitor`, editors, pagers,
  signing programs, every transport (ssh, proxies, helpers), maintenance; the
  content filters, merge drivers and configured hooks (`hook.<name>.command`,
  git 2.54) the configuration defines are turned off by name (`_drivers`); diffs are made with `--no-ext-diff --no-textconv`;
  submodules are never entered;
- the environment a caller (a git hook) set for another repository, and the
  variables that name programs, are dropped.

Every call has a timeout and a fixed environment for machine-readable output
(no pager, no prompts, C locale), so a user's git configuration cannot make
zapcli wait on a terminal either.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from zapcli.errors import UsageError, param
from zapcli.gitenv import DROPPED
from zapcli.paths import own_lookups
from zapcli.plain import asdict, frozen

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

GIT_TIMEOUT_S = 120.0

# Configuration that would run a program, set for every command so it runs none
# (git-config(1), each key that names a command, a hook or a program).
NEUTRAL: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),         # a hook (or daemon) run by status, add, reset, merge
    ("core.hooksPath", "/dev/null"),     # every hook: no file can be found below /dev/null
    ("core.editor", ":"), ("sequence.editor", ":"),  # ":" is git's own "no editor"
    ("core.pager", ""),                  # and --no-pager for pager.<command>
    ("core.askPass", ""), ("credential.helper", ""),  # an empty helper list
    ("core.sshCommand", ""), ("protocol.allow", "never"),  # no transport at all: ssh, proxies,
    ("core.gitProxy", ""),                                 # remote helpers, ext::
    ("commit.gpgSign", "false"), ("tag.gpgSign", "false"),  # gpg.program, gpg.ssh.*
    ("log.showSignature", "false"), ("merge.verifySignatures", "false"),
    ("gc.auto", "0"), ("maintenance.auto", "false"),  # no `git maintenance run --auto` after
    ("submodule.recurse", "false"), ("diff.ignoreSubmodules", "all"),  # a submodule's git
    ("status.submoduleSummary", "false"),  # would read the submodule's own config
    ("rebase.updateRefs", "false"), ("rebase.autoStash", "false"), ("merge.autoStash", "false"),
    ("help.autoCorrect", "0"),
)
# Options that turn off the diff drivers' programs (diff.external, diff.<driver>.command
# and .textconv), for the commands that make a diff.
DIFF_COMMANDS = frozenset({"diff", "diff-tree", "diff-index", "diff-files", "log", "show"})
NO_DIFF_PROGRAMS = ("--no-ext-diff", "--no-textconv")


class GitError(Exception):
    """A git command failed; `message` is git's own (stderr, trimmed)."""

    def __init__(self, message: str, returncode: int | None = None):
        super().__init__(message)
        self.message = message
        self.returncode = returncode


@frozen
class Place:
    """A repository as git is pointed at it: the files (`work_tree`), the git
    dir of that checkout (`git_dir`: the admin folder of a linked tree) and
    the shared one (`common_dir`). Made by `zapcli.worktrees.place` from a
    receipt, after checking the tree's admin files still agree with it."""

    work_tree: str
    git_dir: str
    common_dir: str
    # a sandboxed tree's own object folder, read as an alternate ('' none:
    # `zapcli.worktrees.objects`)
    objects: str = ""

    def env(self) -> dict[str, str]:
        return {"GIT_DIR": self.git_dir, "GIT_COMMON_DIR": self.common_dir,
                "GIT_WORK_TREE": self.work_tree,
                **({"GIT_ALTERNATE_OBJECT_DIRECTORIES": self.objects} if self.objects else {})}


def _drivers(where: Place, base: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The overrides that turn off every content filter and merge driver the
    configuration of `where` defines (`zapcli.worktrees.drivers`: asked of git
    itself, includes and all, and kept while its config files stay as they are)."""
    def ask() -> str:
        return _run(["config", "--list", "-z", "--show-origin"], where, base,
                    timeout=GIT_TIMEOUT_S, input=None).stdout

    from zapcli.worktrees.drivers import overrides

    return overrides(where.git_dir, where.common_dir, base, ask)


def _base_env(where: Place) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    own_lookups(env)  # git is never found, nor its libraries, in the tree it runs in
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_EDITOR=":", GIT_SEQUENCE_EDITOR=":",
               GIT_OPTIONAL_LOCKS="0",  # `status` must not take index.lock behind anyone's back
               # no transport at all, whatever a repository's config says: its per-protocol
               # `protocol.ext.allow=always` beats `protocol.allow=never`, this list beats both
               # (a partial clone's lazy fetch of a missing object ran an ext:: command)
               GIT_ALLOW_PROTOCOL="none", GIT_NO_LAZY_FETCH="1")
    env.update(where.env())
    return _configured(env, NEUTRAL)


def _configured(env: dict[str, str], pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    n = int(env.get("GIT_CONFIG_COUNT") or 0)
    for i, (key, value) in enumerate(pairs, n):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    env["GIT_CONFIG_COUNT"] = str(n + len(pairs))
    return env


def _run(args: list[str], where: Place, env: dict[str, str], *, timeout: float,
         input: str | None, cwd: str | Path | None = None,  # noqa: A002
         alone: bool = False, keep_fds: tuple[int, ...] = (),
         stdin_path: str = "", stdout_path: str = "") -> subprocess.CompletedProcess[str]:
    folder = cwd or where.work_tree
    if alone:
        return _alone(args, str(folder), env, timeout, keep_fds)
    with open(stdin_path or os.devnull, "rb") as fin, open(stdout_path or os.devnull, "wb") as fout:
        try:
            with Popen(["git", "--no-pager", *args], cwd=str(folder), env=env,
                       stdout=fout if stdout_path else subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, encoding="utf-8", errors="replace",
                       stdin=subprocess.PIPE if input is not None else fin) as proc:
                try:  # what subprocess.run does, woken the moment git ends (`Popen`)
                    out, err = proc.communicate(input, timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    raise
                except BaseException:
                    proc.kill()  # its __exit__ waits
                    raise
                return subprocess.CompletedProcess(proc.args, proc.wait(), out, err)
        except FileNotFoundError:
            raise GitError("git is not installed (not on PATH)") from None
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitError(f"git {args[0]} could not run: {exc}") from None


class Popen(subprocess.Popen):  # type: ignore[type-arg]
    """A git whose wait with a timeout (the last step of `communicate` too)
    returns the moment it ends (`zapcli.pidwait`): Python's own sleeps
    between looks cost about a millisecond of every git a merge runs, up to
    5 ms for a tree's status, on its critical path."""

    def wait(self, timeout: float | None = None) -> int:
        if timeout is not None and self.returncode is None:
            from zapcli.pidwait import ended_within

            ended = ended_within(self.pid, timeout)
            if ended is False:
                raise subprocess.TimeoutExpired(self.args, timeout)
            if ended:
                return super().wait()
        return super().wait(timeout)


def _alone(args: list[str], folder: str, env: dict[str, str], timeout: float,
           keep_fds: tuple[int, ...]) -> subprocess.CompletedProcess[str]:
    """git in a session of its own, its output to files (no pipe whose reader
    can die): a signal to the caller's process group, or the caller's death,
    does not stop it halfway."""
    with _scratch() as out, _scratch() as err:
        try:
            proc = Popen(["git", "--no-pager", *args], cwd=folder, env=env,
                         stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                         start_new_session=True, pass_fds=keep_fds)
        except FileNotFoundError:
            raise GitError("git is not installed (not on PATH)") from None
        except OSError as exc:
            raise GitError(f"git {args[0]} could not run: {exc}") from None
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} did not finish in {timeout:.0f}s; it goes on "
                           f"(pid {proc.pid})") from None
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
    return subprocess.CompletedProcess(proc.args, code, texts[0], texts[1])


def _scratch() -> Any:
    """A file with no name, for a child's output: in memory where Linux has
    memfd (no `tempfile`, whose import costs a few ms of a merge), else a
    temporary file."""
    try:
        return open(os.memfd_create("zapcli-git", os.MFD_CLOEXEC), "w+b")
    except (AttributeError, OSError):
        import tempfile

        return tempfile.TemporaryFile()


def git(args: list[str], where: Place, *, check: bool = True,
        timeout: float = GIT_TIMEOUT_S, env: dict[str, str] | None = None,
        input: str | None = None, cwd: str | Path | None = None,  # noqa: A002 - subprocess's name
        alone: bool = False, keep_fds: tuple[int, ...] = (),
        stdin_path: str = "", stdout_path: str = "") -> subprocess.CompletedProcess[str]:
    """Run `git args` on the repository `where` names (a subagent's tree, the
    checkout it came from, the checkout `around` a spawn's folder): git
    discovers no repository, and no configuration moves its work tree.
    `env`: variables to add; `input`: its stdin; `cwd`: where in the tree;
    `alone`: in a session of its own, so no signal to ours stops it halfway
    (`keep_fds`: descriptors it inherits, e.g. a lock held while it lives);
    `stdin_path`, `stdout_path`: files of bytes for its stdin and stdout (a pack).
    Raises GitError (git's message) when `check` and it fails, or when git
    cannot be run at all."""
    base = _base_env(where)
    if args and args[0] in DIFF_COMMANDS:
        args = [args[0], *NO_DIFF_PROGRAMS, *args[1:]]
    full = base
    if args and args[0] != "config":  # every command: any that looks at a file of a tree
        drivers = _drivers(where, base)  # may re-hash it through its clean filter (racy git)
        if drivers:
            full = _configured(dict(base), drivers)
    proc = _run(args, where, {**full, **(env or {})}, timeout=timeout, input=input, cwd=cwd,
                alone=alone, keep_fds=keep_fds, stdin_path=stdin_path, stdout_path=stdout_path)
    if check and proc.returncode != 0:
        raise GitError(_message(proc), proc.returncode)
    return proc


def _message(proc: subprocess.CompletedProcess[str]) -> str:
    text = (proc.stderr or proc.stdout or "").strip()
    return " ".join(text.split("\n")[-4:])[:600] or f"git exited with code {proc.returncode}"


@frozen
class Receipt:
    """Where a subagent's tree is: the main checkout (`repo`), its common git
    dir and its own git dir (`git_dir`; recorded since issue 27, derived for
    older receipts), the tree's `path` and `branch`, the `base` commit it
    started from, and the `subdir` of the checkout the subagent was spawned in.
    `tree()` and `checkout()` are the places zapcli's git runs on."""

    repo: str
    common_dir: str
    path: str
    branch: str
    base: str
    subdir: str = ""
    git_dir: str = ""

    @property
    def repo_gone(self) -> bool:
        """The repository was deleted (or moved): git keeps no record of the tree."""
        return bool(self.common_dir) and not Path(self.common_dir).is_dir()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> Receipt | None:
        if not isinstance(d, dict):
            return None
        try:
            return cls(**{k: str(d[k]) for k in ("repo", "common_dir", "path", "branch", "base")},
                       subdir=str(d.get("subdir") or ""), git_dir=str(d.get("git_dir") or ""))
        except KeyError:
            return None

    @property
    def cwd(self) -> str:
        """The tree's counterpart of the directory the subagent was spawned in."""
        return str(Path(self.path, self.subdir)) if self.subdir else self.path

    def tree(self) -> Place:
        """The tree's place, once its admin files are checked to agree with this
        receipt. Raises GitError saying what moved."""
        from zapcli.worktrees.place import tree

        return tree(self)

    def checkout(self) -> Place:
        """The place of the checkout the tree was made from. Raises GitError."""
        from zapcli.worktrees.place import checkout

        return checkout(self)


def plan(cwd: Path, path: Path, branch: str) -> Receipt:
    """The receipt for a new tree of the checkout around `cwd` (`around`),
    based on its current HEAD (two git calls, at spawn time). Raises
    UsageError when `cwd` is not in a checkout with at least one commit, or
    in one whose configuration moves its work tree elsewhere (`_settled`)."""
    place = around(cwd)
    _settled(place, cwd)
    try:
        proc = git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], place, check=False)
    except GitError as exc:  # git missing or not runnable
        raise UsageError(f"{param('worktree')}: {exc.message}") from None
    head = proc.stdout.strip()
    if proc.returncode != 0 or not head:
        raise UsageError(f"{param('worktree')}: the repository at {place.work_tree} has no "
                         "commit yet, and a tree starts from a commit; make the first one "
                         "(e.g. git add -A && git commit -m 'first commit'), then spawn again")
    prefix = os.path.relpath(cwd.resolve(), place.work_tree)
    r = Receipt(repo=place.work_tree, common_dir=place.common_dir, path=str(path), branch=branch,
                base=head, subdir="" if prefix == "." else prefix, git_dir=place.git_dir)
    _trusted(r, cwd)
    return r


def around(cwd: Path) -> Place:
    """The checkout around `cwd`, found by zapcli and named to git outright:
    the nearest folder upward whose `.git` is a git folder or names one
    (`paths.git_dir_at`, as the workspace is found), that git folder, and its
    common one (named by its `commondir` in a linked tree). Never git's own
    discovery, which takes the work tree from the repository's configuration
    (`core.worktree`). A `.git` file naming a git dir that does not name its
    folder back (`paths.links_back`) is refused, not passed over: the folder
    looks like that repository's checkout; so is a git dir (or common dir)
    with a symbolic link leading out of it (`gitlinks.link_out`), through
    which git would write another repository's. Raises UsageError."""
    from zapcli.gitlinks import git_dir_at, gitfile_target, links_back

    here = cwd.resolve()
    for top in (here, *here.parents):
        own = git_dir_at(top)
        if own is not None:
            break
        link = gitfile_target(top)
        if link is not None:
            raise UsageError(
                f"{param('worktree')}: {top}/.git is a link (a file or a symbolic link) to "
                f"the git dir {link}, which "
                f"does not name {top} back: {links_back(link, top)}. zapcli takes a .git "
                "link only for a linked worktree (git worktree add) or a submodule (git "
                "submodule add), whose git dir names the folder back; merging into it would "
                f"change the repository of {link}. If you did not write that file, something "
                "that wrote in this folder did (a subagent's work can write below its "
                f"workspace): look at it, remove {top}/.git, and spawn from that repository's "
                "own checkout")
    else:
        raise UsageError(f"{param('worktree')} needs a git repository, and {cwd} is not in one "
                         "(no .git in it or above it)")
    from zapcli.gitlinks import link_out, link_out_says
    from zapcli.worktrees.place import _read

    named = _read(str(own / "commondir"))
    common = os.path.realpath(own / named) if named else str(own)
    for git_dir in dict.fromkeys((str(own), common)):
        found = link_out(git_dir)
        if found:
            raise UsageError(f"{param('worktree')}: {link_out_says(git_dir, found)}")
    return Place(work_tree=str(top), git_dir=str(own), common_dir=common)


TRUE = ("true", "yes", "on", "1", "")  # git's spellings of a true boolean ("": a bare key)


def _settled(place: Place, cwd: Path) -> None:
    """Raises UsageError when the repository's configuration puts its work
    tree somewhere else than the folder its `.git` is in: `core.worktree`
    naming another folder (git would check out, commit and merge there), or
    `core.bare`. zapcli names the work tree to git itself whatever they say;
    such a repository is refused rather than worked on in two places. A
    submodule's `core.worktree`, naming its own folder back, is fine."""
    try:
        proc = git(["config", "-z", "--get-regexp", r"^core\.(worktree|bare)$"], place,
                   check=False)
    except GitError as exc:
        raise UsageError(f"{param('worktree')}: {exc.message}") from None
    why = fix = ""
    for entry in filter(None, proc.stdout.split("\0")):
        key, _, value = entry.partition("\n")
        if key == "core.bare" and value.strip().lower() in TRUE:
            why, fix = ("says it is bare (core.bare = true): it has no work tree",
                        "if it is a checkout: git config core.bare false")
        elif key == "core.worktree" and \
                os.path.realpath(os.path.join(place.git_dir, value)) != place.work_tree:
            why, fix = (f"sets core.worktree = {value}: git would check out, commit and merge "
                        f"in that folder, not in {place.work_tree}",
                        "if you set it: git config --unset core.worktree")
    if why:
        raise UsageError(f"{param('worktree')}: the repository of {cwd} ({place.git_dir}) {why}. "
                         "zapcli makes trees only of a checkout whose files are where its .git "
                         f"is. {fix.capitalize()} (in {place.work_tree}); if you did not, "
                         "something that wrote in this folder did (a subagent's work can make a "
                         f"repository below its workspace): look at {place.git_dir}/config")


def _trusted(r: Receipt, cwd: Path) -> None:
    """Raises UsageError when the repository git found around `cwd` is one its
    own files could have planted: a common git dir inside the checkout other
    than its `.git`, or (for a checkout that is itself a linked tree, e.g. a
    subagent's) link files that do not agree."""
    top = os.path.realpath(r.repo)
    inside = r.common_dir.startswith(top + os.sep) and r.common_dir != os.path.join(top, ".git")
    why = (f"its git dir {r.common_dir} lies inside the checkout {top}" if inside else "")
    if not why and r.git_dir != r.common_dir:
        from zapcli.worktrees.place import linked

        try:
            linked(top, r.common_dir)
        except GitError as exc:
            why = exc.message
    if why:
        raise UsageError(f"{param('worktree')}: the repository around {cwd} is not one zapcli "
                         f"runs git in: {why}")


def branch_exists(where: Place, branch: str) -> bool:
    return git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], where,
               check=False).returncode == 0


def registered(where: Place) -> dict[str, str]:
    """Worktrees git knows for the repository: resolved path -> branch ref ('' when detached)."""
    out: dict[str, str] = {}
    proc = git(["worktree", "list", "--porcelain"], where, check=False)
    current = None
    for line in proc.stdout.split("\n"):
        if line.startswith("worktree "):
            current = str(Path(line[9:]).resolve())
            out[current] = ""
        elif line.startswith("branch ") and current:
            out[current] = line[7:]
    return out
