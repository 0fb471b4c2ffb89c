"""Running git, and what a worktree receipt is made of.

Imports only the standard library and `zapcli.errors`. Every call has a
timeout and runs with a fixed environment for machine-readable output (no
pager, no prompts, C locale), so a user's git configuration cannot make
zapcli wait on a terminal.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from zapcli.errors import UsageError, param
from zapcli.plain import asdict, frozen

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

GIT_TIMEOUT_S = 120.0


class GitError(Exception):
    """A git command failed; `message` is git's own (stderr, trimmed)."""

    def __init__(self, message: str, returncode: int | None = None):
        super().__init__(message)
        self.message = message
        self.returncode = returncode


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat", LC_ALL="C",
               GIT_OPTIONAL_LOCKS="0")  # `status` must not take index.lock behind anyone's back
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # a caller's (a hook's) must not redirect us
        env.pop(name, None)
    env.update(extra or {})
    return env


def git(args: list[str], cwd: str | Path, *, check: bool = True,
        timeout: float = GIT_TIMEOUT_S, env: dict[str, str] | None = None,
        input: str | None = None) -> subprocess.CompletedProcess[str]:  # noqa: A002 - subprocess's name
    """Run `git args` in `cwd` (`env`: variables to add; `input`: its stdin).
    Raises GitError (git's message) when `check` and it fails, or when git
    cannot be run at all."""
    try:
        proc = subprocess.run(["git", *args], cwd=str(cwd), env=_env(env), capture_output=True,
                              text=True, encoding="utf-8", errors="replace", input=input,
                              stdin=None if input is not None else subprocess.DEVNULL,
                              timeout=timeout)
    except FileNotFoundError:
        raise GitError("git is not installed (not on PATH)") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]} could not run: {exc}") from None
    if check and proc.returncode != 0:
        raise GitError(_message(proc), proc.returncode)
    return proc


def _message(proc: subprocess.CompletedProcess[str]) -> str:
    text = (proc.stderr or proc.stdout or "").strip()
    return " ".join(text.split("\n")[-4:])[:600] or f"git exited with code {proc.returncode}"


@frozen
class Receipt:
    """Where a subagent's tree is: the main checkout (`repo`) and its common
    git dir, the tree's `path` and `branch`, the `base` commit it started
    from, and the `subdir` of the checkout the subagent was spawned in."""

    repo: str
    common_dir: str
    path: str
    branch: str
    base: str
    subdir: str = ""

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
                       subdir=str(d.get("subdir") or ""))
        except KeyError:
            return None

    @property
    def cwd(self) -> str:
        """The tree's counterpart of the directory the subagent was spawned in."""
        return str(Path(self.path, self.subdir)) if self.subdir else self.path


def plan(cwd: Path, path: Path, branch: str) -> Receipt:
    """The receipt for a new tree of the repository around `cwd`, based on its
    current HEAD (one git call, at spawn time). Raises UsageError when `cwd`
    is not in a repository with at least one commit."""
    try:
        proc = git(["rev-parse", "--show-toplevel", "--git-common-dir", "--show-prefix", "HEAD"],
                   cwd, check=False)
    except GitError as exc:  # git missing or not runnable
        raise UsageError(f"{param('worktree')}: {exc.message}") from None
    lines = proc.stdout.split("\n")
    if proc.returncode != 0 or len(lines) < 4:
        stderr = (proc.stderr or "").strip()
        # git names the missing HEAD first, then prints a usage hint: look at all of it
        if lines[0].strip() and ("unknown revision" in stderr or "ambiguous argument 'HEAD'" in stderr):
            raise UsageError(f"{param('worktree')}: the repository at {lines[0].strip()} has no "
                             "commit yet, and a tree starts from a commit; make the first one "
                             "(e.g. git add -A && git commit -m 'first commit'), then spawn again")
        why = stderr.split("\n")[0]
        raise UsageError(f"{param('worktree')} needs a git repository, and {cwd} is not in one "
                         f"({why or 'git rev-parse failed'})")
    top, common, prefix, head = lines[0], lines[1], lines[2], lines[3]
    common_dir = str((Path(cwd) / common).resolve()) if not os.path.isabs(common) else common
    return Receipt(repo=top, common_dir=common_dir, path=str(path), branch=branch,
                   base=head.strip(), subdir=prefix.strip().rstrip("/"))


def head_of(repo: str) -> str | None:
    """The commit HEAD of the checkout at `repo` names now (None if unreadable)."""
    try:
        return git(["rev-parse", "HEAD"], repo, timeout=10).stdout.strip() or None
    except GitError:
        return None


def branch_exists(repo: str, branch: str) -> bool:
    return git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], repo,
               check=False).returncode == 0


def registered(repo: str) -> dict[str, str]:
    """Worktrees git knows for `repo`: resolved path -> branch ref ('' when detached)."""
    out: dict[str, str] = {}
    proc = git(["worktree", "list", "--porcelain"], repo, check=False)
    current = None
    for line in proc.stdout.split("\n"):
        if line.startswith("worktree "):
            current = str(Path(line[9:]).resolve())
            out[current] = ""
        elif line.startswith("branch ") and current:
            out[current] = line[7:]
    return out
