"""`zapcli.sandbox.execonly`: the program an agent CLI runs from an
execute-only copy, so the commands it starts in the same sandbox (same user,
no capability) cannot reach into it. Real bubblewrap, real processes: a
sibling in the sandbox reads the copy's `/proc/<pid>/fd` — refused — and the
same program run from its readable original — allowed."""

from __future__ import annotations

import os
import platform
import shutil
import stat
import subprocess

import pytest

from tests.sandbox.conftest import FOUND, needs_bwrap
from zapcli.sandbox import execonly


def test_a_copy_is_execute_only_made_once_and_runs():
    sleep = os.path.realpath(shutil.which("sleep") or "/bin/sleep")
    first = execonly.copy(sleep)
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o111
    assert execonly.copy(sleep) == first  # one per version, made once
    assert subprocess.run([first, "0"], timeout=10).returncode == 0


def test_a_node_script_runs_under_a_copy_of_node(tmp_path):
    node = shutil.which("node")
    script = tmp_path / "cli.js"
    script.write_text("#!/usr/bin/env node\nconsole.log('hi')\n")
    out = execonly.argv([str(script), "--x"], os.environ.get("PATH"))
    argv, why = out.argv, out.why
    if node is None:
        assert why is not None and argv == [str(script), "--x"]
        return
    assert why is None and argv[1:] == [str(script), "--x"], (argv, why)
    assert os.path.dirname(argv[0]) == execonly.folder()
    assert subprocess.run(argv[:2], capture_output=True, timeout=30).stdout == b"hi\n"


@needs_bwrap
def test_a_sibling_in_the_sandbox_cannot_reach_into_the_copy_but_could_the_original():
    sleep = os.path.realpath(shutil.which("sleep") or "/bin/sleep")
    copy = execonly.copy(sleep)
    look = ('"$1" 5 & a=$!; "$2" 5 & b=$!; sleep 0.3; '
            'readlink /proc/$a/fd/0 >/dev/null 2>&1 && echo copy-reached; '
            'readlink /proc/$b/fd/0 >/dev/null 2>&1 && echo original-reached; kill $a $b')
    done = subprocess.run([FOUND.program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                           "--unshare-pid", "--cap-drop", "ALL", "sh", "-c", look, "sh", copy, sleep],
                          capture_output=True, text=True, timeout=30)
    assert "original-reached" in done.stdout, done  # the check itself sees what it should
    assert "copy-reached" not in done.stdout, done


LAUNCHER = execonly.Launcher(
    package="@acme/cli", script="bin/cli.js", entry="bin/cli",
    beside=("manifest.json", "resources", "bin/helper", "absent"),
    platforms={platform.machine(): ("@acme/cli-native", "triple")},
    env={"ACME_ROOT": "{package}", "ACME_BY_NPM": "1"}, unset=("ACME_BY_BUN",))


@pytest.fixture
def made():
    """Copies a test made of a program of its own, removed after it."""
    paths: list[str] = []
    yield paths
    for path in paths:
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def _package(top, native: bool = True):
    """node_modules as npm lays out a launcher and its platform package: the
    native program (a copy of `sleep`) beside the files it looks for."""
    own = top / "node_modules" / "@acme" / "cli"
    (own / "bin").mkdir(parents=True)
    (own / "package.json").write_text('{"name": "@acme/cli"}')
    (own / "bin" / "cli.js").write_text("#!/usr/bin/env node\nconsole.log('launcher')\n")
    vendor = top / "node_modules" / "@acme" / "cli-native" / "vendor" / "triple"
    if native:
        (vendor / "bin").mkdir(parents=True)
        (vendor.parent.parent / "package.json").write_text('{"name": "@acme/cli"}')
        shutil.copy(os.path.realpath(shutil.which("sleep") or "/bin/sleep"), vendor / "bin" / "cli")
        (vendor / "bin" / "helper").write_text("beside")
        (vendor / "resources").mkdir()
        (vendor / "manifest.json").write_text("{}")
        (vendor / "other").write_text("not declared")
    bin_ = top / "node_modules" / ".bin"
    bin_.mkdir()
    (bin_ / "cli").symlink_to("../@acme/cli/bin/cli.js")
    return own, vendor, bin_ / "cli"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_launcher_runs_as_its_native_program_copied_beside_what_it_finds(tmp_path, made):
    own, vendor, cli = _package(tmp_path)
    out = execonly.argv([str(cli), "0"], os.environ.get("PATH"), LAUNCHER)
    made.append(os.path.dirname(os.path.dirname(out.argv[0])))
    assert out.why is None and out.copied, out
    program = out.argv[0]
    assert out.argv[1:] == ["0"] and program.endswith(os.path.join("bin", "cli"))
    assert stat.S_IMODE(os.stat(program).st_mode) == 0o111
    mirror = os.path.dirname(os.path.dirname(program))
    assert os.path.dirname(mirror) == execonly.folder()
    assert sorted(os.listdir(mirror)) == ["bin", "manifest.json", "resources"]  # as declared
    assert os.path.realpath(os.path.join(mirror, "resources")) == str(vendor / "resources")
    assert open(os.path.join(mirror, "bin", "helper")).read() == "beside"
    assert out.env == {"ACME_ROOT": str(own), "ACME_BY_NPM": "1", "ACME_BY_BUN": None}
    assert out.sees == [str(vendor)]
    assert subprocess.run(out.argv, timeout=10).returncode == 0  # the copy runs
    again = execonly.argv([str(cli), "0"], os.environ.get("PATH"), LAUNCHER)
    assert again.argv[0] == program  # made once per version


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_launcher_without_its_native_program_runs_as_a_node_script_and_says_so(tmp_path):
    _, _, cli = _package(tmp_path, native=False)
    out = execonly.argv([str(cli)], os.environ.get("PATH"), LAUNCHER)
    assert out.copied and out.argv[1:] == [os.path.realpath(cli)]  # node's copy, as before
    assert out.why and "within reach" in out.why, out


def test_the_native_program_named_itself_is_copied_beside_what_it_finds(tmp_path, made):
    _, vendor, _ = _package(tmp_path)
    out = execonly.argv([str(vendor / "bin" / "cli"), "0"], None, LAUNCHER)
    made.append(os.path.dirname(os.path.dirname(out.argv[0])))
    assert out.why is None and out.sees == [str(vendor)]
    assert os.path.islink(os.path.join(os.path.dirname(out.argv[0]), "helper"))
    alone = tmp_path / "usr" / "bin" / "cli"  # a program of that name elsewhere: a copy alone,
    alone.parent.mkdir(parents=True)  # its folder's folder neither mirrored nor put in view
    shutil.copy(vendor / "bin" / "cli", alone)
    out = execonly.argv([str(alone)], None, LAUNCHER)
    made.append(out.argv[0])
    assert out.why is None and out.sees == [] and os.path.dirname(out.argv[0]) == execonly.folder()
