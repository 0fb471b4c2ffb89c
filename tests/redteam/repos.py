"""A repository of the user's and a sandboxed subagent that plants in it:
the set-up the attacks on nested repositories share (`test_nested_trust`,
`test_nested_checkout`, `test_gitfile_link`, `test_forged_git_dir`); the
person's `worktree.setup` and their next `--worktree` spawn (the attacks on
a new tree's setup: `test_adv4_nested_setup`, `test_adv5_tree_setup`,
`test_adv_include_written`); another
repository of the user's elsewhere (`project`) and what the user would see
of it (`state`)."""

from __future__ import annotations

from pathlib import Path

from tests.parallel.conftest import git

COMMIT = "git -c user.email=a@a -c user.name=a commit -qm"
MAKEFILE = "all:\n\techo build\n"


def make_repo(work: Path) -> Path:
    """`work` made a repository on `main` with one commit."""
    git(work, "init", "-q", "-b", "main")
    (work / "README").write_text("base\n")
    git(work, "add", "README")
    git(work, "commit", "-q", "-m", "base")
    return work


def repo_with_scripts(work: Path, files: dict[str, str]) -> Path:
    """A repository (`make_repo`) with the team's `files` committed, executable."""
    repo = make_repo(work)
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
        (repo / rel).chmod(0o755)
    git(repo, "add", *files)
    git(repo, "commit", "-q", "-m", "the team's scripts")
    return repo


def setup_config(zap, extra: str = "") -> None:
    """The person's config: `worktree.setup: make -s setup`, then `extra`."""
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(f"worktree:\n  setup: make -s setup\n{extra}")


def repo_with_setup(zap) -> Path:
    """`zap.cwd` made the person's repository (`make_repo`) with a Makefile
    `setup` target committed, and their `worktree.setup` running it."""
    repo = make_repo(zap.cwd)
    (repo / "Makefile").write_text("setup:\n\t@echo setup\n")
    git(repo, "add", "Makefile")
    git(repo, "commit", "-q", "-m", "setup target")
    setup_config(zap)
    return repo


def new_tree(zap, outside: Path) -> list[str]:
    """The person's next `--worktree` (sandboxed) spawn from `zap.cwd`,
    waited for: the names of the files in `outside` after it."""
    ended(zap, zap.spawn_sh("true", "--worktree", "--sandbox", timeout=90))
    return sorted(p.name for p in outside.iterdir())


def ended(zap, sid: str) -> None:
    assert zap("wait", "--timeout", "90", sid, timeout=120).returncode in (0, 3)


def agent(zap, script: str) -> None:
    """A sandboxed subagent in the user's repository runs `script` (the injection)."""
    ended(zap, zap.spawn_sh(f"set -e\n{script}\necho planted", "--sandbox", timeout=90))


def spawn_and_merge(zap, task: str):
    """A `--worktree` subagent started from `zap.cwd` runs `task`; if it
    started, every way of taking its work follows (`diff`, the three merges,
    `worktree rm`). Returns the spawn's answer."""
    spawned = zap("spawn", "--worktree", "--cli", "sh", "--sandbox", "--", task)
    if spawned.returncode == 0:
        sid = spawned.out.strip()
        ended(zap, sid)
        for argv in (["diff", sid], ["merge", sid], ["merge", "--squash", sid],
                     ["merge", "--rebase", sid], ["worktree", "rm", sid]):
            zap(*argv, timeout=120)
    return spawned


def project(folder: Path) -> Path:
    """Another repository of the user's at `folder`: a Makefile on `main`."""
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    (folder / "Makefile").write_text(MAKEFILE)
    git(folder, "add", "Makefile")
    git(folder, "-c", "user.email=u@u", "-c", "user.name=u", "commit", "-q", "-m", "other-base")
    return folder


def state(git_dir: Path, work: Path | None) -> tuple:
    """What the user would see in the other repository: every branch's
    commit, the index's bytes, and its work tree's files."""
    refs = git(git_dir, "--git-dir", str(git_dir), "for-each-ref",
               "--format=%(refname) %(objectname)")
    index = (git_dir / "index").read_bytes() if (git_dir / "index").exists() else b""
    files = sorted((str(p.relative_to(work)), p.read_bytes()) for p in work.rglob("*")
                   if p.is_file() and ".git" not in p.relative_to(work).parts) if work else []
    return refs, index, files


def trusted(zap, folder: Path) -> None:
    """The person's own config names `folder` in `trusted:`."""
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(f"trusted: [{folder}]\n")


def writes(path: Path, content: str) -> list[dict]:
    """A scripted model's turns: its `write` tool writes `content` to `path`, then it is done."""
    return [{"tool_calls": [{"name": "write", "arguments": {"path": str(path),
                                                           "content": content}}]},
            {"text": "done"}]


def spawn_agent(zap, *args: str) -> None:
    """A built-in agent spawned with `args`, waited for."""
    done = zap("spawn", *args, timeout=90)
    assert done.returncode == 0, done.err
    sid = done.out.strip().splitlines()[-1]
    zap("wait", "--timeout", "90", sid, timeout=120)
