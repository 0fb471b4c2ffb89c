"""A new tree prepared for its task (#23): `.worktreeinclude` copies ignored
files in; `worktree.setup` (the user's config.yaml only) runs in it before
the task, and a failing one ends the subagent `failed` with its output and
nothing of the task run; `worktree.teardown` runs in it before removal —
in the sandbox its subagent had, when it had one."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import record_of
from tests.parallel.conftest import git
from tests.sandbox.conftest import needs_bwrap


def _config(zap, text: str) -> None:
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(text)


def _doc(zap, sid: str) -> dict:
    return zap.json("poll", "--no-wait", sid)["subagents"][0]


def test_worktreeinclude_copies_only_ignored_files_it_names(zap, repo):
    (repo / ".gitignore").write_text(".env\nlocal/\n*.log\n")
    (repo / ".worktreeinclude").write_text("# local settings\n.env\nlocal/\nnotes.txt\n")
    git(repo, "add", ".gitignore", ".worktreeinclude")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "ignores")
    (repo / ".env").write_text("TOKEN=local\n")
    (repo / "local").mkdir()
    (repo / "local" / "conf.yml").write_text("db: dev\n")
    (repo / "debug.log").write_text("ignored but not named\n")
    (repo / "notes.txt").write_text("named but not ignored: a draft, not local config\n")
    sid = zap.spawn_sh("cat .env local/conf.yml > seen.txt", "--worktree")
    assert zap.wait_status(sid) == "completed", zap("poll", sid).out
    tree = Path(_doc(zap, sid)["worktree"]["path"])
    assert (tree / "seen.txt").read_text() == "TOKEN=local\ndb: dev\n"  # there before the task
    assert not (tree / "debug.log").exists() and not (tree / "notes.txt").exists()
    made = record_of(zap, sid, "worktree")
    assert made["included"] == 2 and made["included_paths"] == [".env", "local/conf.yml"]
    assert git(tree, "status", "--porcelain") == "?? seen.txt"  # the copies stay ignored


def test_setup_runs_first_and_a_failing_one_runs_nothing_of_the_task(zap, repo, tmp_path):
    _config(zap, "worktree:\n  setup: 'echo \"set up $ZAPCLI_ID in $PWD\" > setup.txt'\n")
    sid = zap.spawn_sh("cat setup.txt > task-saw.txt", "--worktree")
    assert zap.wait_status(sid) == "completed", zap("poll", sid).out
    tree = Path(_doc(zap, sid)["worktree"]["path"])
    assert (tree / "task-saw.txt").read_text() == f"set up {sid} in {tree}\n"
    assert record_of(zap, sid, "worktree_setup")["ok"]

    marker = tmp_path / "task-ran"
    _config(zap, "worktree:\n  setup: 'echo installing; echo npm ERR! no lockfile >&2; exit 3'\n")
    sid = zap.spawn_sh(f"touch {marker}", "--worktree")
    assert zap.wait_status(sid) == "failed"
    doc = _doc(zap, sid)
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "config.yaml"
    assert doc["reason"] == (f"worktree.setup from {config}:1 exited with code 3: "
                             "npm ERR! no lockfile"), doc["reason"]
    assert not marker.exists()
    assert "installing" in zap("output", "--stderr", sid).out
    assert "npm ERR! no lockfile" in zap("poll", sid).out  # its output, where a failure shows


def test_a_workspace_config_cannot_set_setup_or_teardown(zap, repo, tmp_path):
    ran = tmp_path / "workspace-setup-ran"
    (repo / ".zapcli").mkdir()
    (repo / ".zapcli" / "config.yaml").write_text(
        f"worktree:\n  setup: 'touch {ran}'\n  teardown: 'touch {ran}'\n")
    zap("trust", check=True)  # even a trusted workspace file runs no command of its own
    proc = zap("spawn", "--cli", "sh", "--worktree", "--", "true")
    assert proc.returncode == 0 and "`worktree` (setup, teardown) runs commands" in proc.err
    sid = proc.out.strip()
    assert zap.wait_status(sid) == "completed"
    zap("worktree", "rm", sid, check=True)
    assert not ran.exists() and record_of(zap, sid, "worktree_setup") is None


def test_teardown_runs_in_the_tree_before_worktree_rm_and_gc(zap, repo, tmp_path):
    log = tmp_path / "teardown.log"
    _config(zap, f"worktree:\n  teardown: 'echo \"$ZAPCLI_ID $(ls)\" >> {log}'\n")
    by_rm = zap.spawn_sh("true", "--worktree")
    by_gc = zap.spawn_sh("true", "--worktree")
    assert zap("wait", "--timeout", "60", by_rm, by_gc).returncode == 0
    zap("worktree", "rm", by_rm, check=True)
    assert log.read_text() == f"{by_rm} README\n"  # in the tree, while it still existed
    zap("gc", check=True)
    assert log.read_text().splitlines() == [f"{by_rm} README", f"{by_gc} README"]
    removed = record_of(zap, by_gc, "worktree_removed")
    assert removed["by"] == "gc" and removed["teardown"]["ok"] and removed["branch_deleted"]


@needs_bwrap
def test_a_sandboxed_subagents_teardown_still_cleans_its_tree(zap, repo):
    """Sandboxed (its subagent ran `--sandbox`), the teardown still does its
    job in the tree: `make clean` removes what the work built, its output
    reaches the trail; and one that fails says why in `worktree rm`."""
    (repo / "Makefile").write_text("clean:\n\trm -f built.txt\n\techo cleaned\n")
    git(repo, "add", "Makefile")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "clean target")
    _config(zap, "worktree:\n  teardown: 'make -s clean && test ! -e built.txt && echo gone "
                 "&& test -z \"$OPENAI_API_KEY\"'\n")
    sid = zap.spawn_sh("echo object > built.txt", "--worktree", "--sandbox")
    assert zap.wait_status(sid) == "completed", zap("poll", sid).out
    tree = Path(_doc(zap, sid)["worktree"]["path"])
    assert (tree / "built.txt").exists()
    zap("worktree", "rm", "--force", sid, check=True, env={"OPENAI_API_KEY": "sk-not-for-it"})
    ran = record_of(zap, sid, "worktree_removed")["teardown"]
    assert ran["ok"] and ran["output"] == "cleaned\ngone\n", ran  # and no key
    assert not tree.exists()

    sid = zap.spawn_sh("rm Makefile", "--worktree", "--sandbox")
    assert zap.wait_status(sid) == "completed", zap("poll", sid).out
    removed = zap("worktree", "rm", "--force", sid)
    assert "worktree teardown exited with code 2: make: *** No rule to make target" in removed.out, removed


def test_the_guides_setup_runs_in_a_repository_with_or_without_a_env(zap, repo):
    """The `worktree.setup` the guide gives (docs/how-to/worktrees.md, "Set up
    each new tree") fails no spawn in a repository that has no `.env`. Before:
    `test -f .env && ...` exited 1 there, and every --worktree spawn failed."""
    guide = (Path(__file__).parents[2] / "docs" / "how-to" / "worktrees.md").read_text()
    block = guide.split('```yaml title="~/.config/zapcli/config.yaml"\n', 1)[1].split("```", 1)[0]
    assert "setup:" in block
    _config(zap, block)
    sid = zap.spawn_sh("true", "--worktree")
    assert zap.wait_status(sid) == "completed", _doc(zap, sid)["reason"]
    assert not (Path(_doc(zap, sid)["worktree"]["path"]) / ".setup.log").exists()
    (repo / ".gitignore").write_text(".env\n.setup.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "ignore .env")
    (repo / ".env").write_text("API_URL=http://localhost\n")
    (repo / ".worktreeinclude").write_text(".env\n")
    sid = zap.spawn_sh("cat .setup.log", "--worktree")
    assert zap.wait_status(sid) == "completed", _doc(zap, sid)["reason"]
    assert zap("output", sid).out == f"set up {sid}\n"
