"""What a new user met following the README and the docs alone: a script's
wait that hides a failed check, a trust warning on the wrong stream, two
commands that disagree on an agent's model, a doctor that does not name the
workspace's definitions nor say Ray is missing, a fast-forwarded tree that
`worktree list` calls clean."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys

import pytest


@pytest.mark.timeout(90)
def test_a_script_that_names_its_ids_sees_a_check_that_already_failed(zap):
    ok = zap.spawn_sh("echo checking api")
    bad = zap.spawn_sh("echo checking web; exit 1")
    assert zap.wait_status(ok) == "completed" and zap.wait_status(bad) == "failed"
    # without ids: only those still running or queued — the ended failure is not counted
    unnamed = zap("wait")
    assert unnamed.returncode == 0 and "nothing to wait for" in unnamed.out
    # the README's way: the ids spawn printed, named
    named = zap("wait", ok, bad, "--json")
    assert named.returncode == 3, named.err
    assert "not ones already ended" in zap("wait", "--help").out


def _untrusted_notes(zap) -> str:
    notes = zap.cwd / ".zapcli" / "subagents" / "notes.yml"
    notes.parent.mkdir(parents=True)
    notes.write_text("name: notes\ndescription: Reads the notes.\ntools: [read]\n")
    return f"zapcli: warning: this folder is not trusted, so its own zapcli files were ignored: " \
           f".zapcli/subagents/notes.yml; to use it: zapcli trust {zap.cwd.resolve()}"


@pytest.mark.timeout(120)
def test_every_command_says_the_untrusted_warning_alike_on_stderr(zap):
    line = _untrusted_notes(zap)
    listed = zap("agents", "list")
    assert listed.returncode == 0
    assert "notes" not in listed.out  # not listed as usable, and the warning is not in the listing
    assert listed.err.splitlines() == [line]
    shown = zap("agents", "show", "general")
    assert shown.returncode == 0 and "notes" not in shown.out and shown.err.splitlines() == [line]
    assert zap("agents", "list", "--json").err.splitlines() == [line]
    spawned = zap("spawn", "--cli", "sh", "--", "true")
    assert spawned.returncode == 0 and line in spawned.err.splitlines()
    doctor = zap("doctor", timeout=120)
    assert line in doctor.err.splitlines()


@pytest.mark.timeout(60)
def test_list_and_show_resolve_the_model_alike_and_say_where_it_is_set(zap, tmp_path):
    env = {"ZAPCLI_MODEL": "scripted"}
    listed = [x for x in zap("agents", "list", env=env).out.splitlines() if x.startswith("general ")]
    assert listed and listed[0].endswith("model: scripted (env ZAPCLI_MODEL)")
    shown = zap("agents", "show", "general", env=env).out.splitlines()[1]
    assert shown.endswith("model: scripted (env ZAPCLI_MODEL)")
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.yaml").write_text("model: from-config\n")
    shown = zap("agents", "show", "general").out.splitlines()[1]
    assert shown.endswith(f"model: from-config (config {config / 'config.yaml'}:1)")
    assert zap.json("agents", "show", "general", env=env)["agent"]["model"] == "scripted"


@pytest.mark.timeout(120)
def test_doctor_names_the_workspaces_definitions(zap):
    from tests.conftest import trust_workspace

    reader = zap.cwd / ".zapcli" / "subagents" / "reader.yml"
    reader.parent.mkdir(parents=True)
    reader.write_text("name: reader\ndescription: Reads notes.\ntools: [read, grep]\n")
    trust_workspace(zap.cwd)
    (check,) = [c for c in zap.json("doctor", timeout=120)["checks"] if c["name"] == "definitions"]
    assert check["detail"].endswith("definitions load; this workspace's: reader"), check


def _without_ray(zap, *args: str) -> subprocess.CompletedProcess:
    """zapcli in a Python where `import ray` fails, as without the `ray` extra
    (this environment has it installed: the one stand-in here)."""
    program = ("import runpy, sys; sys.modules['ray'] = None; sys.argv[0] = 'zapcli'; "
               "runpy.run_module('zapcli', run_name='__main__')")
    return subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True,
                          env={k: v for k, v in zap.env.items() if k != "RAY_ADDRESS"},
                          cwd=zap.cwd, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.timeout(180)
def test_doctor_and_spawn_say_whether_rays_package_is_installed(zap):
    def ray_line(doc: str) -> str:
        (check,) = [c for c in json.loads(doc)["checks"] if c["name"] == "executors"]
        return next(x for x in check["problems"] if x.startswith("ray: "))

    assert ray_line(zap("doctor", "--json", timeout=120).stdout.decode()).startswith("ray: Ray 2.")
    missing = ray_line(_without_ray(zap, "doctor", "--json").stdout)
    assert "not installed here" in missing and "pip install 'zapcli[ray]'" in missing
    spawned = _without_ray(zap, "spawn", "--executor", "ray", "--cli", "sh", "--", "true")
    assert spawned.returncode != 0 and "no Ray cluster given" in spawned.stderr
    assert "pip install 'zapcli[ray]'" in spawned.stderr and "Traceback" not in spawned.stderr


@pytest.mark.timeout(120)
def test_worktree_list_calls_a_fast_forwarded_tree_merged_as_a_squashed_one(zap):
    git = ["git", "-c", "user.email=t@zapcli", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=zap.cwd, check=True)
    (zap.cwd / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], cwd=zap.cwd, check=True)
    subprocess.run([*git, "commit", "-qm", "a"], cwd=zap.cwd, check=True)
    commit = "git -c user.email=t@zapcli -c user.name=t commit -qam"
    ff = zap.spawn_sh(f"echo b >> a.txt && {commit} ff", "--worktree")
    squash = zap.spawn_sh(f"echo c > c.txt && git add c.txt && {commit} squash", "--worktree")
    assert zap.wait_status(ff) == zap.wait_status(squash) == "completed"
    assert zap("merge", ff).returncode == 0
    assert zap("merge", "--squash", squash).returncode == 0
    states = {t["id"]: t["state"]["state"] for t in zap.json("worktree", "list")["worktrees"]}
    assert states == {ff: "merged", squash: "merged"}, states
    assert f"{ff}: merged" in zap("worktree", "list").out
    for sid in (ff, squash):  # `poll` agrees: before, "still merges cleanly (zapcli merge ID)"
        said = zap("poll", sid).out
        assert "nothing left to merge" in said and f"zapcli merge {sid}" not in said, said
    assert "Worktree state: merged" in zap("poll", squash).out  # not "1 unpushed commit"


def test_help_is_a_command_and_completion_takes_the_shell_first(zap):
    """`zapcli help` and `zapcli completion bash`, as git and gh take them,
    failed with "No such command" for a new user."""
    whole = zap("help")
    assert whole.returncode == 0 and whole.out == zap("--help").out
    one = zap("help", "worktree", "list")
    assert one.returncode == 0 and "zapcli worktree list" in one.out, one.err
    wrong = zap("help", "bogus")
    assert wrong.returncode == 2 and "No such command 'bogus'" in wrong.err and not wrong.out
    for shell in ("bash", "zsh", "fish"):
        got = zap("completion", shell)
        assert got.returncode == 0 and got.out == zap("completion", "show", shell).out, got.err


@pytest.mark.skipif(shutil.which("man") is None, reason="no man program here (then it prints the page's path, and says so)")
def test_man_into_a_pipe_gives_the_page_not_its_path(zap):
    """`zapcli man | grep kill` found nothing: into a pipe it printed the path."""
    page = zap("man")
    assert page.returncode == 0 and "zapcli kill" in page.out.replace("\u2010", "-"), page.out[:300]
    assert zap("man", "--path").out.strip().endswith("zapcli.1")


@pytest.mark.skipif(shutil.which("man") is None, reason="no man program here (then it prints the page's path, and says so)")
def test_man_into_a_pipe_closed_early_says_nothing(zap):
    """`zapcli man | head` printed col's and grotty's "write failed: Broken
    pipe" (man inherited Python's ignored SIGPIPE); `man ls | head` does not."""
    done = subprocess.run(f"{shlex.quote(sys.executable)} -m zapcli man | head -1", shell=True, env=zap.env,
                          cwd=zap.cwd, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() and done.stderr == "", done.stderr
