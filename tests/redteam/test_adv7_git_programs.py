"""A program the person's git config runs from the work tree, named in a way
`zapcli.gitruns.programs` (then `zapcli.control._programs`) did not read (adversary round 7, on 3d3f288).

Round 6's fix holds every path the words of a command-running setting name
(`core.fsmonitor`, `alias.*` with `!`, filters, the pager, ...), each word
taken relative to the work tree's top. A shell command names files in
other ways too: after a `cd` (`!cd tools && ./fmt.sh`: git's alias runs
tools/fmt.sh, the fix held `./fmt.sh` at the top), behind an expansion
(`"$(git rev-parse --show-toplevel)"/tools/st.sh`, the usual way to name a
script from an alias), or as a Python module (`python3 -m tools.fsmonitor`,
cwd on the path). And a named script runs what it imports or sources: the
fix holds `tools/fsmonitor.py`, not the `tools/watch.py` beside it that the
script imports (Python puts the script's folder first on its path).

And settings that run a command were missing from `_RUNS` altogether:
`difftool.<tool>.cmd` and `mergetool.<tool>.cmd` (the person's next `git
difftool` / `git mergetool`), `submodule.<name>.update = !cmd`,
`gpg.ssh.defaultKeyCommand`, `sendemail.sendmailCmd`, `trailer.*.command`, ...

Each time sandboxed work rewrites the file git will run, and the person's
next `git status` / `git st` runs it — as the person, outside every sandbox.

The outside effect: the file the rewritten program writes in `outside` at
the person's git command.

Status against 3d3f288: SUCCEEDED for all six. Fixed (h-adv): `programs`
reads each word from the top and from every folder of the tree the command
names, with its expansions left out, and a `-m` module's files; `_RUNS`
names the difftool/mergetool commands and the other settings git runs.
Open: the imported sibling (xfail, strict).
"""

from __future__ import annotations

import subprocess

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import agent, make_repo, repo_with_scripts
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]

SH = "#!/bin/sh\nexit 1\n"
PY = "import sys\nsys.exit(1)\n"
EVIL_SH = "#!/bin/sh\\nid > {out}/PWNED\\nexit 1\\n"
EVIL_PY = "import os\\nos.system(\"id > {out}/PWNED\")\\n"

ROUTES = {
    # (setting, value, the person's committed files, the file the agent rewrites, git command)
    "cd-then-relative": ("alias.st", "!cd tools && ./st.sh", {"tools/st.sh": SH},
                         "tools/st.sh", ["st"]),
    "toplevel-expansion": ("alias.st", '!"$(git rev-parse --show-toplevel)"/tools/st.sh',
                           {"tools/st.sh": SH}, "tools/st.sh", ["st"]),
    "python-module": ("core.fsmonitor", "python3 -m tools.fsmonitor",
                      {"tools/__init__.py": "", "tools/fsmonitor.py": PY},
                      "tools/fsmonitor.py", ["status", "--short"]),
    # a setting `_RUNS` did not name: git difftool runs the tool's command from the top
    "difftool-cmd": ("difftool.mine.cmd", 'tools/st.sh "$LOCAL" "$REMOTE"', {"tools/st.sh": SH},
                     "tools/st.sh", ["-c", "diff.tool=mine", "difftool", "-y"]),
    "mergetool-cmd": ("mergetool.mine.cmd", "tools/st.sh \"$MERGED\"", {"tools/st.sh": SH},
                       "tools/st.sh", None),
    "imported-sibling": ("core.fsmonitor", "python3 tools/fsmonitor.py",
                         {"tools/fsmonitor.py": "import watch\nwatch.main()\n",
                          "tools/watch.py": "import sys\ndef main():\n    sys.exit(1)\n"},
                         "tools/watch.py", ["status", "--short"]),
}


@pytest.mark.parametrize("route", [
    pytest.param(r, marks=pytest.mark.xfail(strict=True, reason=(
        "open: what a named script imports or sources is not read; holding the named "
        "script's folder would cover its siblings only"))) if r == "imported-sibling" else r
    for r in ROUTES])
def test_a_program_the_persons_git_config_runs_cannot_be_rewritten(zap, outside, route):
    key, value, files, target, run = ROUTES[route]
    repo = repo_with_scripts(zap.cwd, files)
    git(repo, "config", key, value)
    evil = (EVIL_PY if target.endswith(".py") else EVIL_SH).format(out=outside)
    agent(zap, f"printf '{evil}' > {target} || true")
    assert not list(outside.iterdir())  # nothing ran inside
    env = {k: v for k, v in zap.env.items() if k != "GIT_PAGER"}
    if run is None:  # git mergetool: a conflict first
        _conflict(repo, env)
        run = ["-c", "merge.tool=mine", "mergetool", "--no-prompt"]
    subprocess.run(["git", *run], cwd=repo, env={**env, "PAGER": "cat"}, capture_output=True,
                   timeout=30, stdin=subprocess.DEVNULL)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran



@pytest.mark.parametrize("route", ["hooks-folder-link", "program-link", "folder-link-on-the-way"])
def test_a_program_named_through_a_link_holds_where_the_link_leads(zap, outside, route):
    """Held (coverage): the hooks folder, or the program, is a committed link
    into `scripts/hooks`; the sandbox holds the link's target."""
    repo = make_repo(zap.cwd)
    (repo / "scripts" / "hooks").mkdir(parents=True)
    hook = repo / "scripts" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    link, target, key, value = {
        "hooks-folder-link": (".githooks", "scripts/hooks", "core.hooksPath", ".githooks"),
        "program-link": ("fsmon", "scripts/hooks/pre-commit", "core.fsmonitor", "./fsmon"),
        "folder-link-on-the-way": ("tools", "scripts/hooks", "core.fsmonitor", "tools/pre-commit"),
    }[route]
    (repo / link).symlink_to(target)
    git(repo, "config", key, value)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hooks")
    agent(zap, f"printf '#!/bin/sh\\nid > {outside}/PWNED\\n' > scripts/hooks/pre-commit || true")
    (repo / "x").write_text("x")
    for argv in (["status"], ["add", "x"], ["commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=repo, capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert sorted(p.name for p in outside.iterdir()) == []


def _conflict(repo, env) -> None:
    """A merge conflict in README in the person's checkout (their next `git mergetool`)."""
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "README").write_text("theirs\n")
    git(repo, "commit", "-qm", "theirs", "README")
    git(repo, "checkout", "-q", "main")
    (repo / "README").write_text("ours\n")
    git(repo, "commit", "-qm", "ours", "README")
    subprocess.run(["git", "merge", "-q", "other"], cwd=repo, env=env, capture_output=True,
                   timeout=30, stdin=subprocess.DEVNULL)
