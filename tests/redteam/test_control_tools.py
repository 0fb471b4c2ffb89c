"""Control files the one list (zapcli/control.py) did not hold, as the last
closing note reported them: an agent's sandboxed command writes them at the
top of the workspace, and the person's next ordinary command there runs what
they say, as the person, outside every sandbox.

- `.pdbrc`: pdb runs its lines as debugger commands (Python statements
  too) at the person's next `python -m pdb` (or `breakpoint()`) in that folder;
- `.mvn/`: Maven's launcher puts `.mvn/jvm.config` on java's command line
  (a `Foo.java` there is compiled and run as the main class: `mvn -v` runs
  it), `maven.config` adds Maven's options, `extensions.xml` loads
  extensions; the folder holds them all;
- an existing `pnpm-workspace.yaml` (pnpm 10 reads its settings there:
  `scriptShell`, `pnpmfile`, ...): held as it is where it exists;
- the file `.yarnrc.yml`'s `yarnPath` (`.yarnrc`'s `yarn-path`) names inside
  the workspace: every `yarn` there runs it.

Each of the person's tools also works as before during the run (the
placeholders configure nothing, `.python-version`'s too: `python3` is
pyenv's shim here).
"""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import wait_until
from tests.redteam.actors import Actor
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap


def _planted_while(actor: Actor, plant: str) -> str:
    """A sandboxed `sh` subagent runs `plant`, then stays (its placeholders
    up); its id once it said so."""
    sid = actor.spawn("--cli", "sh", "--sandbox", "--", f"{plant}; echo planted; sleep 30")
    wait_until(lambda: "planted" in actor("output", sid).out, 30)
    return sid


def _ended(actor: Actor, sid: str) -> None:
    actor("kill", sid)
    actor.wait(sid)


def test_a_planted_pdbrc_runs_nothing_at_the_users_next_pdb(zap, outside):
    actor = Actor.root(zap)
    (actor.work / "t.py").write_text("x = 1\n")
    sid = _planted_while(actor, f"echo 'import os; os.system(\"id > {outside}/PDB\")' > .pdbrc")
    pdb = ["python3", "-m", "pdb", "t.py"]
    during = actor.run(pdb, input="c\nq\n")
    _ended(actor, sid)
    after = actor.run(pdb, input="c\nq\n")
    assert not (outside / "PDB").exists(), "the user's pdb ran the agent's .pdbrc"
    assert during.returncode == 0 and after.returncode == 0, during.stderr + after.stderr


MVN = shutil.which("mvn")


@pytest.mark.skipif(MVN is None, reason="needs mvn")
@pytest.mark.parametrize("held", ["missing", "exists"])
def test_a_planted_maven_jvm_config_runs_nothing_at_the_users_next_mvn(zap, outside, held):
    """`.mvn/jvm.config` naming a Java source file: java compiles and runs it
    as the main class of the person's `mvn -v` (offline, nothing fetched).
    The project's `.mvn/` may not exist yet or hold a `maven.config`."""
    actor = Actor.root(zap)
    w = actor.work
    if held == "exists":
        (w / ".mvn").mkdir()
        (w / ".mvn" / "maven.config").write_text("-o\n")
    java = ('public class E { public static void main(String[] a) throws Exception { '
            f'new ProcessBuilder("sh", "-c", "id > {outside}/MVN").start().waitFor(); }} }}')
    sid = _planted_while(actor, f"echo '{java}' > E.java; mkdir -p .mvn; echo {w}/E.java > .mvn/jvm.config")
    during = actor.run(["mvn", "-o", "-v"])
    _ended(actor, sid)
    after = actor.run(["mvn", "-o", "-v"])
    assert not (outside / "MVN").exists(), "the user's mvn ran the agent's code"
    assert during.returncode == 0 and "Apache Maven" in during.stdout, during.stdout + during.stderr
    assert after.returncode == 0, after.stderr


def test_an_existing_pnpm_workspace_yaml_is_held_and_a_missing_one_is_not_made(zap):
    """pnpm 10 reads its settings from `pnpm-workspace.yaml`; a placeholder
    one would make the folder a pnpm workspace root for the person's pnpm
    while the run lasts, so only one that exists is held."""
    actor = Actor.root(zap)
    w = actor.work
    sid = _planted_while(actor, "true")
    assert not (w / "pnpm-workspace.yaml").exists(), "a placeholder pnpm-workspace.yaml was made"
    _ended(actor, sid)
    (w / "pnpm-workspace.yaml").write_text("packages: ['pkgs/*']\n")
    sid = _planted_while(actor, "echo 'scriptShell: ./x.sh' >> pnpm-workspace.yaml; "
                                "rm -f pnpm-workspace.yaml; echo 'scriptShell: ./x.sh' > pnpm-workspace.yaml")
    _ended(actor, sid)
    assert (w / "pnpm-workspace.yaml").read_text() == "packages: ['pkgs/*']\n"


@pytest.mark.parametrize("rc,path", [(".yarnrc.yml", ".yarn/releases/yarn-4.1.0.cjs"),
                                     (".yarnrc", "tools/yarn.js")])
def test_the_yarn_a_yarnrc_names_cannot_be_rewritten(zap, rc, path):
    """`.yarnrc.yml`'s `yarnPath` (yarn 1's `.yarnrc` `yarn-path`): every
    `yarn` in the folder runs that file, so it is held as the rc is."""
    actor = Actor.root(zap)
    w = actor.work
    (w / path).parent.mkdir(parents=True)
    (w / path).write_text("// the team's yarn\n")
    (w / rc).write_text(f'yarnPath: "{path}"\n' if rc == ".yarnrc.yml" else f'yarn-path "./{path}"\n')
    sid = _planted_while(actor, f"echo 'require(\"child_process\").execSync(\"id\")' > {path}")
    _ended(actor, sid)
    assert (w / path).read_text() == "// the team's yarn\n", "the agent rewrote the yarn yarn runs"
