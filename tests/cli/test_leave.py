"""The hot commands end their process without the interpreter's tear-down
(#32: about a sixth of `spawn`'s time), and only when nothing is left for
the tear-down to do: output flushed whole, exit codes kept, an `atexit`
callback, a thread that is not a daemon, a profiler still honoured."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

RUN = """
import sys
sys.path.insert(0, sys.argv[1])
{setup}
from zapcli.cli.entry import main
sys.argv = ["zapcli", *sys.argv[2:]]
raise SystemExit(main())
"""

# An object freed by the tear-down says so: silent when the process left at once.
TEAR_DOWN = """
class Said:
    def __del__(self):
        sys.stderr.write("TORN DOWN\\n")
said = Said()
"""


def _run(zap, setup: str, *argv: str) -> subprocess.CompletedProcess:
    """The command run by a program file named `zapcli`, as the installed
    script is (main() called from other code never leaves at once)."""
    program = zap.cwd / "bin" / "zapcli"
    program.parent.mkdir(exist_ok=True)
    program.write_text(RUN.format(setup=setup), encoding="utf-8")
    return subprocess.run([sys.executable, str(program), str(REPO), *argv],
                          env=zap.env, cwd=zap.cwd, capture_output=True, text=True, timeout=60)


def test_main_called_by_other_code_returns(zap):
    """main() called from other Python code (a test, an embedding) goes on
    after the command: what follows it still runs."""
    sid = zap.spawn_sh("true")
    assert zap.wait_status(sid) == "completed"
    code = (f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
            "from zapcli.cli.entry import main\n"
            f"sys.argv = ['zapcli', 'poll', '--no-wait', {sid!r}]\n"
            "try: main()\nexcept SystemExit: pass\nprint('WENT ON')\n")
    res = subprocess.run([sys.executable, "-c", code], env=zap.env, cwd=zap.cwd,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "WENT ON" in res.stdout, res.stderr


def test_a_hot_command_leaves_at_once_with_its_output_and_exit_code(zap):
    ok, bad = zap.spawn_sh("seq 1 20000"), zap.spawn_sh("exit 5")
    res = _run(zap, TEAR_DOWN, "wait", ok, bad)
    assert res.returncode == 3, res.stderr  # one ended otherwise
    assert "TORN DOWN" not in res.stderr
    assert f"{ok}: completed" in res.stdout and f"{bad}: failed" in res.stdout
    out = _run(zap, TEAR_DOWN, "output", ok)  # not a hot command: the ordinary ending
    assert out.stdout.split() == [str(n) for n in range(1, 20001)] and "TORN DOWN" in out.stderr
    listed = _run(zap, TEAR_DOWN, "list", "--json")
    assert listed.returncode == 0 and listed.stdout.rstrip().endswith("}"), listed.stderr
    assert "TORN DOWN" not in listed.stderr


def test_a_merge_leaves_at_once_once_it_said_the_result(zap):
    """`merge` (issue 32: held to git's own merge time) is one of them: its
    result said, the work in the checkout, no tear-down."""
    from tests.parallel.conftest import git

    git(zap.cwd, "init", "-q", "-b", "main")
    (zap.cwd / "README").write_text("base\n")
    git(zap.cwd, "add", "README")
    git(zap.cwd, "commit", "-q", "-m", "base")
    sid = zap.spawn_sh("echo work > work.txt && git add work.txt && "
                       "git -c user.email=s@s -c user.name=s commit -qm work", "--worktree")
    assert zap.wait_status(sid) == "completed"
    res = _run(zap, TEAR_DOWN, "merge", sid)
    assert res.returncode == 0 and "merged" in res.stdout, res.stderr
    assert "TORN DOWN" not in res.stderr
    assert (zap.cwd / "work.txt").read_text() == "work\n"
    assert git(zap.cwd, "show", "HEAD:work.txt") == "work"
    left = zap.spawn_sh("echo left > left.txt", "--worktree")  # its work made a commit by zapcli
    assert zap.wait_status(left) == "completed"
    res = _run(zap, TEAR_DOWN, "merge", left)
    assert res.returncode == 0 and "merged" in res.stdout, res.stderr
    assert "TORN DOWN" not in res.stderr
    assert git(zap.cwd, "show", "HEAD:left.txt") == "left"


def test_an_atexit_callback_a_thread_or_a_profiler_keeps_the_ordinary_ending(zap):
    sid = zap.spawn_sh("true")
    assert zap.wait_status(sid) == "completed"
    hook = TEAR_DOWN + "import atexit; atexit.register(lambda: print('AT EXIT'))"
    res = _run(zap, hook, "poll", "--no-wait", sid)
    assert res.returncode == 0 and "AT EXIT" in res.stdout and "TORN DOWN" in res.stderr
    thread = TEAR_DOWN + ("import threading, time\n"
                          "threading.Thread(target=lambda: (time.sleep(0.3), print('JOINED'))).start()")
    res = _run(zap, thread, "poll", "--no-wait", sid)
    assert res.returncode == 0 and "JOINED" in res.stdout
    profile = zap.cwd / "poll.prof"
    res = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "zapcli",
                          "poll", "--no-wait", sid], env=zap.env, cwd=zap.cwd, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0 and profile.stat().st_size > 0, res.stderr
