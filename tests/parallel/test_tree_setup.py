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


def _agent_made_sub(zap, repo: Path, target: str) -> Path:
    """A sandboxed subagent in `repo` made `sub/` a repository of its own
    whose Makefile's `setup` target runs `target` (adversary round 4)."""
    from tests.redteam.repos import COMMIT, agent

    agent(zap, "mkdir -p sub && cd sub && git init -q && "
               f"printf 'setup:\\n\\t@{target}\\n' > Makefile && git add Makefile && {COMMIT} base")
    return repo / "sub"


@needs_bwrap
def test_a_sandboxed_setup_still_prepares_a_tree_of_a_repository_agent_work_made(zap, repo):
    """In a repository agent work may have made, `worktree.setup` runs in the
    sandbox and still does its job: what it writes in the tree is there for
    the task; no key reaches it."""
    _config(zap, "worktree:\n  setup: 'make -s setup && test -z \"$OPENAI_API_KEY\" && echo keyless'\n")
    zap.cwd = _agent_made_sub(zap, repo, "echo prepared > made.txt")
    spawned = zap("spawn", "--cli", "sh", "--worktree", "--sandbox", "--", "cat made.txt > saw.txt",
                  env={"OPENAI_API_KEY": "sk-not-for-it"}, check=True)
    sid = spawned.out.strip()
    assert zap.wait_status(sid) == "completed", _doc(zap, sid)["reason"]
    tree = Path(_doc(zap, sid)["worktree"]["path"])
    assert (tree / "saw.txt").read_text() == "prepared\n"
    ran = record_of(zap, sid, "worktree_setup")
    assert ran["ok"] and ran["output"] == "keyless\n", ran


def test_no_sandbox_no_setup_of_a_repository_agent_work_made(zap, repo, tmp_path):
    """Where no sandbox can be had, such a setup does not run, nor the task;
    the subagent fails saying why."""
    setup_ran, task_ran = tmp_path / "setup-ran", tmp_path / "task-ran"
    _config(zap, "worktree:\n  setup: make -s setup\n")
    (repo / "sub").mkdir()  # made by agent work: a workspace's folder noted, then `sub/.git`
    zap.cwd = repo
    zap.spawn_sh("true", "--no-sandbox")  # notes the folder it is given to write in
    zap.cwd = repo / "sub"
    git(zap.cwd, "init", "-q")
    (zap.cwd / "Makefile").write_text(f"setup:\n\t@touch {setup_ran}\n")
    git(zap.cwd, "add", "Makefile")
    git(zap.cwd, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    missing = {"ZAPCLI_BWRAP": "/nonexistent/bwrap"}
    sid = zap("spawn", "--cli", "sh", "--worktree", "--", f"touch {task_ran}", env=missing,
              check=True).out.strip()
    assert zap("wait", "--timeout", "60", sid, env=missing).returncode != 0
    doc = _doc(zap, sid)
    assert doc["status"] == "failed", doc
    assert doc["reason"].startswith("worktree.setup was not run: "), doc["reason"]
    assert f"lies below {repo}, a folder agent work was given to write in" in doc["reason"]
    assert not setup_ran.exists() and not task_ran.exists()


@needs_bwrap
def test_the_persons_checkout_still_sets_up_as_the_person_after_agent_work_in_it(zap, repo,
                                                                                  tmp_path):
    """A checkout agent work was given (its top `.git` held) holds the
    person's commits: its setup runs as the person, as before — it writes
    outside the tree, which no sandbox would let it."""
    from tests.redteam.repos import agent

    agent(zap, "echo draft > notes.txt")  # sandboxed work in the checkout itself
    (repo / "src").mkdir()
    zap.cwd = repo / "src"
    _config(zap, f"worktree:\n  setup: 'touch {tmp_path}/as-person'\n")
    sid = zap.spawn_sh("true", "--worktree", "--sandbox")
    assert zap.wait_status(sid) == "completed", _doc(zap, sid)["reason"]
    assert (tmp_path / "as-person").exists()


def _included_env(repo: Path) -> None:
    """The person's `.env`, ignored, which their `.worktreeinclude` copies into each tree."""
    (repo / ".gitignore").write_text(".env\n")
    (repo / ".worktreeinclude").write_text(".env\n")
    git(repo, "add", ".gitignore", ".worktreeinclude")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "local env")
    (repo / ".env").write_text("MODE=dev\n")


@needs_bwrap
def test_included_files_of_a_checkout_only_worktree_work_came_from_set_up_as_the_person(
        zap, repo, tmp_path):
    """`--worktree` subagents spawned from the checkout note their trees,
    not the checkout (their work never runs there): a later tree's setup,
    with the person's `.env` copied in, still runs as the person."""
    _included_env(repo)
    for n in (1, 2):
        _config(zap, f"worktree:\n  setup: 'touch {tmp_path}/as-person-{n}'\n")
        sid = zap.spawn_sh("true", "--worktree", "--sandbox")
        assert zap.wait_status(sid) == "completed", _doc(zap, sid)["reason"]
        assert record_of(zap, sid, "worktree")["included_paths"] == [".env"]
        assert (tmp_path / f"as-person-{n}").exists()


@needs_bwrap
def test_included_files_of_a_checkout_agent_work_was_given_set_up_sandboxed(zap, repo, tmp_path):
    """Once a subagent worked in the checkout itself, an included file may
    be its work: the setup runs sandboxed — it still prepares the tree, and
    cannot write outside it."""
    from tests.redteam.repos import agent

    _included_env(repo)
    agent(zap, "echo draft > notes.txt")  # sandboxed work in the checkout itself
    _config(zap, f"worktree:\n  setup: 'cp .env prepared.env; touch {tmp_path}/as-person || true'\n")
    sid = zap.spawn_sh("cat prepared.env", "--worktree", "--sandbox")
    assert zap.wait_status(sid) == "completed", _doc(zap, sid)["reason"]
    assert zap("output", sid).out == "MODE=dev\n"
    assert not (tmp_path / "as-person").exists()


@needs_bwrap
def test_a_worktree_spawns_relative_writable_root_is_its_trees(zap, repo):
    """A relative `writable_roots` entry is the workspace's; for a
    `--worktree` subagent, its tree's (before: pinned as the checkout's at
    spawn, so its sandbox refused to start, saying it "now leads" elsewhere)."""
    _config(zap, "writable_roots: [out]\n")
    sid = zap.spawn_sh("mkdir -p out && echo hi > out/x && echo ok", "--worktree", "--sandbox")
    assert zap.wait_status(sid) == "completed", _doc(zap, sid)["reason"]
    assert (Path(_doc(zap, sid)["worktree"]["path"]) / "out" / "x").read_text() == "hi\n"
