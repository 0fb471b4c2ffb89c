"""Git that runs no agent's code (issue 27 item 4; cases C31, C38), tested as an
attacker would: real git, real bubblewrap, real `--worktree` subagents.

C31: a `--worktree` agent makes zapcli's own git (poll, diff, worktree list,
merge, gc, worktree rm) run a command of its choosing: a fake common dir
whose config sets `core.fsmonitor` (or hooks, a filter, textconv,
`diff.external`, `core.sshCommand`), pointed at by its admin folder's
`commondir`; its tree's `.git` file pointed at a fake git dir; its admin
folder's `gitdir` pointed at a fake tree; `config.worktree` in a repository
that reads it. Each is planted twice: by a sandboxed agent (the sandbox must
stop the write) and by a writer outside any sandbox (zapcli's git must not
follow it). Won when a file appears in `outside`.

C38: a sandboxed agent moves a sibling's branch (one made before it started,
and one made while it runs); `merge` carries a committed `.zapcli/mcp.json`
into the checkout without the person's yes.

Each attack also runs as a second local user (a sandbox without root: a user
namespace) where it applies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.parallel.conftest import git
from tests.redteam.harness import Keys, as_root, needs_setpriv
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap

COMMIT = "git -c user.email=a@a -c user.name=a commit -qm"

# A fake common dir that git accepts for the tree: its objects are the real
# ones, its branch ref a copy; `config` is the attack.
FAKE_COMMON = r'''
ADMIN=$(git rev-parse --absolute-git-dir)
COMMON=$(git rev-parse --path-format=absolute --git-common-dir)
BRANCH=$(git symbolic-ref HEAD)
F=$(pwd)/.fake
mkdir -p "$F/$(dirname "$BRANCH")" "$F/hooks"
git rev-parse HEAD > "$F/$BRANCH"
ln -s "$COMMON/objects" "$F/objects"
'''

# Hooks that any of zapcli's git commands could run.
HOOKS = ("pre-commit", "post-commit", "post-checkout", "post-merge", "pre-rebase", "post-rewrite",
         "reference-transaction", "post-index-change", "pre-auto-gc", "pre-merge-commit")


def _config(variant: str, out: Path, fake: str) -> str:
    """The config text that runs `id >> out/PWNED-<variant>` through `variant`."""
    run = f"id >> {out}/PWNED-{variant}"
    return {
        "fsmonitor": f'[core]\n\tfsmonitor = "{run}; false"\n',
        "hooks": f"[core]\n\thooksPath = {fake}/hooks\n",
        "filter": (f'[filter "x"]\n\tclean = "{run}; cat"\n\tsmudge = "{run}; cat"\n'
                   f'[filter "p"]\n\tprocess = "{run}"\n\trequired = false\n'),
        "textconv": f'[diff "x"]\n\ttextconv = "{run}; cat"\n\tcommand = "{run}"\n',
        "external": f'[diff]\n\texternal = "{run}"\n',
        "ssh": f'[core]\n\tsshCommand = "{run}"\n\tpager = "{run}"\n\teditor = "{run}"\n'
               f'[gpg]\n\tprogram = "{run}"\n[commit]\n\tgpgSign = true\n',
    }[variant]


def _plant(variant: str, out: Path) -> str:
    """A shell script that, run in the tree, points git at the attack."""
    run = f"id >> {out}/PWNED-{variant}"
    hooks = "".join(f"printf '#!/bin/sh\\n{run}\\n' > \"$F/hooks/{h}\"; chmod +x \"$F/hooks/{h}\"\n"
                    for h in HOOKS)
    attrs = "printf '* filter=x diff=x\\n*.txt filter=p\\n' > .gitattributes\n"
    work = "echo more >> README; echo new > work.txt\n"  # uncommitted work for merge to commit
    if variant == "config.worktree":  # the repository reads config.worktree (sparse checkouts do)
        return (FAKE_COMMON + work +
                f"printf '[core]\\n\\tfsmonitor = \"{run}; false\"\\n' > \"$ADMIN/config.worktree\"\n")
    if variant == "dotgit":  # the tree's own .git file, at a whole fake git dir
        return (FAKE_COMMON + work + "cp \"$ADMIN/HEAD\" \"$F/HEAD\"\n"
                + f"printf '[core]\\n\\tfsmonitor = \"{run}; false\"\\n' > \"$F/config\"\n"
                + "printf 'gitdir: %s\\n' \"$F\" > .git\n")
    if variant == "gitdir":  # the admin folder's gitdir, at a fake tree whose .git is the attack
        return (FAKE_COMMON + work + "cp \"$ADMIN/HEAD\" \"$F/HEAD\"\n"
                + f"printf '[core]\\n\\tfsmonitor = \"{run}; false\"\\n' > \"$F/config\"\n"
                + "mkdir -p .faketree && printf 'gitdir: %s\\n' \"$F\" > .faketree/.git\n"
                + "echo \"$(pwd)/.faketree/.git\" > \"$ADMIN/gitdir\"\n")
    config = _config(variant, out, "$F")
    return (FAKE_COMMON + hooks + attrs + work + f"cat > \"$F/config\" <<EOF\n{config}EOF\n"
            + "echo \"$F\" > \"$ADMIN/commondir\"\n")


VARIANTS = ("fsmonitor", "hooks", "filter", "textconv", "external", "ssh", "config.worktree",
            "dotgit", "gitdir")


def _repo(work: Path, *, worktree_config: bool = False) -> Path:
    git(work, "init", "-q", "-b", "main")
    (work / "README").write_text("base\n")
    git(work, "add", "README")
    git(work, "commit", "-q", "-m", "base")
    if worktree_config:
        git(work, "config", "extensions.worktreeConfig", "true")
    return work


def _tree_of(zap, sid: str) -> Path:
    return Path(zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"])


def _every_command(zap, sid: str) -> list[tuple[str, int]]:
    """What a user runs after a worktree subagent: each zapcli command that
    runs git in its tree or its repository (the exit codes, for the report)."""
    ran = []
    for argv in (["poll", "--no-wait", sid], ["poll", "--no-wait", "--json", sid], ["list"],
                 ["diff", sid], ["diff", "--stat", sid], ["diff", "--json", sid],
                 ["worktree", "list"], ["worktree", "list", "--json"], ["merge", sid],
                 ["merge", "--squash", sid], ["merge", "--rebase", sid], ["gc", "--dry-run"],
                 ["gc"], ["worktree", "rm", sid], ["worktree", "rm", "--force", sid]):
        ran.append((" ".join(argv), zap(*argv, timeout=120).returncode))
    return ran


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("where", ["sandboxed agent", "writer outside the sandbox"])
def test_c31_zapcli_git_runs_nothing_the_tree_chose(zap, outside, variant, where):
    _repo(zap.cwd, worktree_config=variant == "config.worktree")
    script = _plant(variant, outside)
    if where == "sandboxed agent":
        sid = zap.spawn_sh(f"set -e\n{script}\necho planted", "--worktree", "--sandbox")
    else:  # a tree written by something zapcli did not sandbox (an agent CLI, a person)
        sid = zap.spawn_sh("echo started", "--worktree")
    assert zap("wait", "--timeout", "60", sid).returncode in (0, 3)
    tree = _tree_of(zap, sid)
    if where != "sandboxed agent":
        subprocess.run(["sh", "-ec", script], cwd=tree, check=True, capture_output=True)
    ran = _every_command(zap, sid)
    pwned = sorted(p.name for p in outside.iterdir())
    # what the planting agent printed, read only for the report of a failure
    assert pwned == [], (ran, zap("output", sid).out, zap("output", "--stderr", sid).out)


def test_c31_a_scripted_model_through_the_real_tools(zap, model, outside):
    """The built-in agent's bash (sandboxed by default) plants the fake common dir."""
    _repo(zap.cwd)
    script = _plant("fsmonitor", outside) + "\necho planted"
    model([{"match": "plant", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": script}}]},
        {"text": "done"}]}])
    sid = zap("spawn", "--worktree", "--approval", "full", "plant the config").out.strip()
    assert sid.startswith("sa_"), sid
    assert zap("wait", "--timeout", "60", sid).returncode in (0, 3)
    ran = _every_command(zap, sid)
    assert sorted(p.name for p in outside.iterdir()) == [], ran


# ------------------------------------------------------------------ C38


def _ref(repo: Path, branch: str) -> str:
    return git(repo, "rev-parse", f"refs/heads/{branch}")


MOVE = r'''
COMMON=$(git rev-parse --path-format=absolute --git-common-dir)
echo mine > mine.txt && git add mine.txt && {commit} mine
H=$(git rev-parse HEAD)
for victim in {victims}; do
  git update-ref "refs/heads/zapcli/$victim" HEAD || true
  git branch -f "zapcli/$victim" HEAD || true
  echo "$H" > "$COMMON/refs/heads/zapcli/$victim" || true
  rm -f "$COMMON/refs/heads/zapcli/$victim" "$COMMON/logs/refs/heads/zapcli/$victim" || true
  echo junk > "$COMMON/refs/heads/zapcli/$victim.junk" || true
done
for f in "$COMMON"/refs/heads/zapcli/*; do echo "$H" > "$f" || true; done
git update-ref refs/heads/main HEAD || true
'''


def test_c38_a_sandboxed_agent_cannot_move_a_sibling_branch(zap):
    repo = _repo(zap.cwd)
    before = zap.spawn_sh(f"echo b > b.txt && git add b.txt && {COMMIT} b", "--worktree")
    assert zap("wait", "--timeout", "60", before).returncode == 0
    b_tip, main = _ref(repo, f"zapcli/{before}"), _ref(repo, "main")
    # the attacker starts first, and waits for a sibling made after it started: its id
    # comes through a file the test writes into the attacker's own tree
    attack = ("set +e\n" + "while [ ! -s go ]; do sleep 0.1; done\n" +
              MOVE.replace("{commit}", COMMIT).replace("{victims}", f"{before} $(cat go)"))
    attacker = zap.spawn_sh(attack, "--worktree", "--sandbox")
    wait_until(lambda: zap.status(attacker) == "running", 30, 0.2)
    later = zap.spawn_sh(f"echo l > l.txt && git add l.txt && {COMMIT} l", "--worktree")
    assert zap("wait", "--timeout", "60", later).returncode == 0
    l_tip = _ref(repo, f"zapcli/{later}")
    (_tree_of(zap, attacker) / "go").write_text(later)
    assert zap("wait", "--timeout", "60", attacker).returncode in (0, 3)
    assert _ref(repo, f"zapcli/{before}") == b_tip and _ref(repo, f"zapcli/{later}") == l_tip
    assert _ref(repo, "main") == main
    mine = git(repo, "log", "--format=%s", f"zapcli/{attacker}").split("\n")
    assert mine[0] == "mine"  # its own branch did move: a commit on its own branch works
    assert not (repo / ".git" / "refs" / "heads" / "zapcli" / attacker).is_symlink()  # plain again
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads").split("\n")
    assert not [r for r in refs if r.endswith(".junk")], refs
    for sid in (before, later):
        assert zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["state"] != "unknown"


CONTROL = (".zapcli/mcp.json", ".envrc", "sub/.vscode/tasks.json")


def _control_change(zap, repo: Path, name: str) -> str:
    body = json.dumps({"mcpServers": {"x": {"command": "sh", "args": ["-c", "id"]}}})
    folder = str(Path(name).parent)
    sid = zap.spawn_sh(f"mkdir -p {folder} && printf '%s' '{body}' > {name} && echo ok > plain.txt"
                       f" && git add -A && {COMMIT} control", "--worktree")
    assert zap("wait", "--timeout", "60", sid).returncode == 0
    return sid


@pytest.mark.parametrize("name", CONTROL)
def test_c38_merge_never_carries_a_control_file_in_silently(zap, name):
    repo = _repo(zap.cwd)
    head = git(repo, "rev-parse", "HEAD")
    sid = _control_change(zap, repo, name)
    for argv in (["merge", sid], ["merge", "--json", sid], ["merge", "--squash", sid],
                 ["merge", "--rebase", sid]):
        refused = zap(*argv)
        assert refused.returncode != 0, (argv, refused.out)
        assert not (repo / name).exists() and git(repo, "rev-parse", "HEAD") == head, argv
        assert name in refused.err and "--allow-control-files" in refused.err, refused.err
    # a tool caller (a model) the merge itself is allowed to, with nobody to ask about the files
    call = zap("call", json.dumps({"action": "merge", "id": sid}), env={"ZAPCLI_APPROVAL": "full"})
    assert call.returncode != 0 and not (repo / name).exists(), call.out
    assert "--allow-control-files" in call.out + call.err
    done = zap.json("merge", "--allow-control-files", sid)
    assert (repo / name).exists() and name in done["control_files"], done


def test_c38_merge_asks_at_a_terminal(zap):
    from tests.cli.test_run_approvals_pty import Terminal

    repo = _repo(zap.cwd)
    sid = _control_change(zap, repo, ".zapcli/mcp.json")
    env = dict(zap.env, TERM="dumb")
    for answer, merged in ((b"n\n", False), (b"y\n", True)):
        term = Terminal([sys.executable, "-m", "zapcli", "merge", sid], env, str(repo))
        try:
            term.expect(b".zapcli/mcp.json")
            term.expect(b"?")
            term.send(answer)
            code = term.proc.wait(60)
        finally:
            if term.proc.poll() is None:
                term.proc.kill()
            os.close(term.master)
        assert (code == 0) == merged and (repo / ".zapcli" / "mcp.json").exists() == merged


def test_c38_pick_asks_too(zap):
    repo = _repo(zap.cwd)
    body = '{"mcpServers": {}}'
    spawned = zap("spawn", "--cli", "sh", "--attempts", "2", "--",
                  f"mkdir -p .zapcli && echo '{body}' > .zapcli/mcp.json && git add -A && "
                  f"{COMMIT} c")
    assert spawned.returncode == 0, spawned.err
    ids = spawned.out.split()
    assert zap("wait", "--timeout", "60", *ids).returncode == 0
    refused = zap("pick", ids[0])
    assert refused.returncode != 0 and ".zapcli/mcp.json" in refused.err
    assert not (repo / ".zapcli").exists()
    assert all(_tree_of(zap, i).exists() for i in ids)  # nothing removed either
    assert zap("pick", "--allow-control-files", ids[0]).returncode == 0
    assert (repo / ".zapcli" / "mcp.json").exists()


# ---------------------------------------------------------- another local user


@as_root
@needs_setpriv
def test_c31_and_c38_as_another_local_user(other_user, listener, tmp_path):
    """The same attacks from a sandbox without root (a user namespace)."""
    user = other_user(Keys(), listener.url)
    out = user.root / "OUT"
    out.mkdir()
    os.chown(out, user.uid, user.uid)

    def run(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(user.argv(*args), cwd=cwd or user.work, env=user.env,
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def as_user(*argv: str, cwd: Path) -> str:
        return subprocess.run([*_setpriv(user.uid), *argv], cwd=cwd, env=user.env, check=True,
                              capture_output=True, text=True).stdout.strip()

    g = ["git", "-c", "user.email=u@u", "-c", "user.name=u"]
    as_user(*g, "init", "-q", "-b", "main", cwd=user.work)
    (user.work / "README").write_text("base\n")
    os.chown(user.work / "README", user.uid, user.uid)
    as_user(*g, "add", "README", cwd=user.work)
    as_user(*g, "commit", "-qm", "base", cwd=user.work)

    sibling = run("spawn", "--cli", "sh", "--worktree", "--", f"echo s > s.txt && git add s.txt && {COMMIT} s").stdout.strip()
    assert run("wait", "--timeout", "60", sibling).returncode == 0
    tip = as_user("git", "rev-parse", f"zapcli/{sibling}", cwd=user.work)
    attack = (_plant("fsmonitor", out) + MOVE.replace("{commit}", COMMIT)
              .replace("{victims}", sibling))
    sid = run("spawn", "--cli", "sh", "--worktree", "--sandbox", "--", "set +e\n" + attack).stdout.strip()
    assert sid.startswith("sa_")
    assert run("wait", "--timeout", "60", sid).returncode in (0, 3)
    for argv in (["poll", "--no-wait", sid], ["diff", sid], ["worktree", "list"], ["merge", sid],
                 ["gc"], ["worktree", "rm", "--force", sid]):
        run(*argv)
    assert sorted(p.name for p in out.iterdir()) == []
    assert as_user("git", "rev-parse", f"zapcli/{sibling}", cwd=user.work) == tip


def _setpriv(uid: int) -> list[str]:
    from tests.redteam.harness import _as

    return _as(uid)


# ------------------------------------------------------------ the one runner


def test_a_tree_whose_admin_files_moved_is_refused_with_what_moved(zap):
    """Not an attack's outside effect: what the person is told, and that
    nothing is removed or merged."""
    repo = _repo(zap.cwd)
    sid = zap.spawn_sh("echo w > w.txt", "--worktree")
    assert zap("wait", "--timeout", "60", sid).returncode == 0
    tree = _tree_of(zap, sid)
    admin = repo / ".git" / "worktrees" / tree.name
    (admin / "commondir").write_text(f"{tree}/.fake\n")
    for argv in (["diff", sid], ["merge", sid]):
        res = zap(*argv)
        assert res.returncode == 1 and "commondir names" in res.err and "runs no git" in res.err, res.err
    listed = next(t for t in zap.json("worktree", "list")["worktrees"] if t["id"] == sid)
    assert listed["state"]["state"] == "unknown" and "commondir" in listed["state"]["error"]
    assert zap("gc").returncode == 0 and tree.is_dir()  # kept: git could not tell
    assert not (repo / "w.txt").exists()


def test_no_git_runs_but_through_the_one_runner():
    """Every git zapcli starts goes through `zapcli.worktrees.git.git` (the
    demo's own checkout aside, and `zapcli.gitenv.config_origins`, which reads
    the configuration as the person's git finds it, with the same lookups and
    dropped variables): no list starting with "git" anywhere else."""
    import ast

    pkg = Path(__file__).resolve().parents[2] / "zapcli"
    allowed = {"worktrees/git.py", "demo.py", "gitenv.py"}
    found = []
    for path in pkg.rglob("*.py"):
        rel = path.relative_to(pkg).as_posix()
        if rel in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant)
                    and node.elts[0].value == "git"):
                found.append(f"{rel}:{node.lineno}")
    assert not found, found


def test_c31_a_worktree_spawned_from_inside_a_planted_tree_is_refused(zap, outside, tmp_path):
    """A caller whose folder is a tree with a planted common dir (a model's
    `spawn --worktree --cwd` there) gets no tree of the planted repository."""
    repo = _repo(zap.cwd)
    sid = zap.spawn_sh("echo started", "--worktree")
    assert zap("wait", "--timeout", "60", sid).returncode == 0
    tree = _tree_of(zap, sid)
    subprocess.run(["sh", "-ec", _plant("fsmonitor", outside)], cwd=tree, check=True,
                   capture_output=True)
    res = zap("spawn", "--cli", "sh", "--worktree", "--cwd", str(tree), "--", "true")
    # refused by the .git link rule: the planted common dir no longer links back to the tree
    assert res.returncode == 2 and "is a link (a file or a symbolic link)" in res.err, res.err
    assert sorted(p.name for p in outside.iterdir()) == []
    # a linked tree of a person's own, whose files agree, is a repository like any other
    git(repo, "worktree", "add", "-q", "-b", "mine", str(tmp_path / "mine"))
    ok = zap.spawn_sh("echo from-linked > f.txt", "--worktree", "--cwd", str(tmp_path / "mine"))
    assert zap("wait", "--timeout", "60", ok).returncode == 0
    assert zap.json("diff", ok)["files"][0]["path"] == "f.txt"


def test_no_filter_or_merge_driver_runs_from_any_config_file(zap, outside):
    """The drivers a repository's configuration defines — in an included file,
    added between two commands (zapcli keeps the list it asked git for) — are
    each turned off by name: attributes an agent commits choose none of them."""
    repo = _repo(zap.cwd)
    extra = repo / ".git" / "extra.cfg"
    extra.write_text(f'[filter "a"]\n\tclean = "id >> {outside}/A; cat"\n'
                     f'\tsmudge = "id >> {outside}/A; cat"\n')
    git(repo, "config", "include.path", "extra.cfg")
    # sandboxed agents: their own git may run the drivers, but nothing of it reaches `outside`
    first = zap.spawn_sh(f"printf '* filter=a\\n' > .gitattributes && echo 1 > one.txt && "
                         f"git add -A && {COMMIT} one && echo x >> one.txt",
                         "--worktree", "--sandbox")
    zap("wait", "--timeout", "60", first)
    for argv in (["poll", "--no-wait", first], ["diff", first], ["merge", first]):
        zap(*argv)
    with extra.open("a") as fh:  # a driver more, in the same included file
        fh.write(f'[merge "m"]\n\tdriver = "id >> {outside}/M; false"\n'
                 f'[filter "b"]\n\tprocess = "id >> {outside}/B"\n')
    second = zap.spawn_sh(f"printf '* merge=m\\n*.txt filter=b\\n' > .gitattributes && "
                          f"echo theirs > README && git -c filter.b.process= add -A && "
                          f"{COMMIT} two",
                          "--worktree", "--sandbox")
    zap("wait", "--timeout", "60", second)
    (repo / "README").write_text("ours\n")
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "filter.b.process=",
                    "-c", "filter.a.clean=cat", "-c", "filter.a.smudge=cat", "commit", "-qam",
                    "ours"], cwd=repo, check=True, capture_output=True)
    for argv in (["poll", "--no-wait", second], ["diff", second], ["merge", second],
                 ["merge", "--squash", second], ["gc"]):
        zap(*argv)
    assert sorted(p.name for p in outside.iterdir()) == []


def _git_version() -> tuple[int, ...]:
    said = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()
    return tuple(int(p) for p in (said[2] if len(said) > 2 else "0").split(".")[:2] if p.isdigit())


CONFIGURED = [f"[hook \"h{i}\"]\n\tevent = {h}\n\tcommand = id >> {{out}}/PWNED-{h}\n"
              for i, h in enumerate(HOOKS)]


def test_a_configured_hook_is_turned_off_by_name(zap, outside):
    """git 2.54 runs `hook.<name>.command` for `hook.<name>.event` whatever
    `core.hooksPath` says: zapcli's git turns each one off by name, from
    every config file (an included one too), as it does filters."""
    from zapcli.worktrees.git import Place, _base_env, _drivers

    repo = _repo(zap.cwd)
    (repo / ".git" / "extra.cfg").write_text("".join(CONFIGURED).replace("{out}", str(outside)))
    git(repo, "config", "include.path", "extra.cfg")
    git(repo, "config", "hook.My.Hook.event", "post-merge")
    place = Place(work_tree=str(repo), git_dir=str(repo / ".git"), common_dir=str(repo / ".git"))
    pairs = dict(_drivers(place, _base_env(place)))
    assert {k for k, v in pairs.items() if k.startswith("hook.") and v == "false"} == \
        {f"hook.h{i}.enabled" for i in range(len(HOOKS))} | {"hook.My.Hook.enabled"}


@pytest.mark.skipif(_git_version() < (2, 54), reason="configured hooks came with git 2.54")
def test_no_configured_hook_runs_from_a_nested_repository(zap, outside):
    """A sandboxed agent makes `sub/` a repository (only the top's `.git` is
    held) whose own config names a hook for every event zapcli's git meets;
    the user's `spawn --worktree` and merges from `sub/` run none of them."""
    from tests.redteam.repos import agent, make_repo, spawn_and_merge

    make_repo(zap.cwd)
    config = "".join(CONFIGURED).replace("{out}", str(outside))
    agent(zap, f"mkdir sub && cd sub && git init -q -b main && echo a > a && git add a && "
               f"{COMMIT} base && cat >> .git/config <<'EOF'\n{config}EOF")
    zap.cwd = zap.cwd / "sub"
    spawned = spawn_and_merge(zap, f"echo b > b && git add b && {COMMIT} b")
    assert spawned.returncode == 0, spawned.err
    assert sorted(p.name for p in outside.iterdir()) == []
