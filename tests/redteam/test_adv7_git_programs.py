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
The imported sibling fixed (h-git9), with routes of the same class (a file
sourced by `$(dirname "$0")`, a standard module shadowed beside the script
or at the top, a `-m` module's package at the top, a computed import, a
node `require`, forged cached bytecode): `zapcli.gitscripts` reads what a
script imports or sources and holds it — the folder a name is looked up
in, whole, below the top; each spelling of the name and `__pycache__` at
the top. A hook (`.git/hooks`, `core.hooksPath`) is read the same way: what it
runs (`exec tools/lint.sh`) or imports (`sys.path.insert(0, 'tools')`).
"""

from __future__ import annotations

import shutil
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
EVIL_JS = "require(\"fs\").writeFileSync(\"{out}/PWNED\", \"x\")\\n"

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
    # the same class (h-git9): what a named script reads as code, other ways
    "sourced-sibling": ("core.fsmonitor", "sh tools/fsmon.sh",
                        {"tools/fsmon.sh": '. "$(dirname "$0")/lib.sh"\nmain\n',
                         "tools/lib.sh": "main() { exit 1; }\n"}, "tools/lib.sh", ["status"]),
    # a module the script imports from the standard library, shadowed beside it
    # (Python puts the script's folder first): a new file
    "shadowed-beside": ("core.fsmonitor", "python3 tools/fsmonitor.py",
                        {"tools/fsmonitor.py": "import sys\nimport csv\nsys.exit(1)\n"},
                        "tools/csv.py", ["status", "--short"]),
    # the same at the top, which cannot be held whole: each name the script imports is held
    "shadowed-at-the-top": ("core.fsmonitor", "python3 fsmon.py",
                            {"fsmon.py": "import sys\nimport csv\nsys.exit(1)\n"},
                            "csv.py", ["status", "--short"]),
    # `python3 -m`: the top first on the path, a package there that the module imports
    "module-imports-a-package": ("core.fsmonitor", "python3 -m tools.fsmonitor",
                                 {"tools/__init__.py": "", "lib/__init__.py": "",
                                  "tools/fsmonitor.py": "from lib import watch\nwatch.main()\n",
                                  "lib/watch.py": "import sys\ndef main():\n    sys.exit(1)\n"},
                                 "lib/watch.py", ["status", "--short"]),
    # an import the words do not name: the script's folder, held whole
    "computed-import": ("core.fsmonitor", "python3 tools/fsmonitor.py",
                        {"tools/fsmonitor.py": "import importlib\n"
                                               "importlib.import_module('wat' + 'ch').main()\n",
                         "tools/watch.py": "import sys\ndef main():\n    sys.exit(1)\n"},
                        "tools/watch.py", ["status", "--short"]),
    "required-sibling": ("core.fsmonitor", "node tools/fsmon.js",
                         {"tools/fsmon.js": "require('./lib').main()\n",
                          "tools/lib.js": "exports.main = () => process.exit(1)\n"},
                         "tools/lib.js", ["status", "--short"]),
}


@pytest.mark.parametrize("route", ROUTES)
def test_a_program_the_persons_git_config_runs_cannot_be_rewritten(zap, outside, route):
    key, value, files, target, run = ROUTES[route]
    repo = repo_with_scripts(zap.cwd, files)
    git(repo, "config", key, value)
    if target.endswith(".js") and not shutil.which("node"):
        pytest.skip("no node here")
    evil = (EVIL_PY if target.endswith(".py") else EVIL_JS if target.endswith(".js")
            else EVIL_SH).format(out=outside)
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



# the agent forges the bytecode Python caches for watch.py (its header: watch.py's
# change time and size), which Python runs in watch.py's place
FORGE = """python3 - <<'PY' || true
import importlib.util, marshal, os, struct
st = os.stat("watch.py")
code = compile('import os\\nos.system("id > {out}/PWNED")\\ndef main():\\n    raise SystemExit(1)\\n',
               "watch.py", "exec")
path = importlib.util.cache_from_source("watch.py")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "wb") as f:
    f.write(importlib.util.MAGIC_NUMBER + struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF,
                                                      st.st_size & 0xFFFFFFFF) + marshal.dumps(code))
PY"""


def test_bytecode_cached_for_an_imported_module_cannot_be_forged(zap, outside):
    """`python3 fsmon.py` at the top imports watch.py beside it: watch.py is
    held, and so is the `__pycache__` Python reads it from."""
    repo = repo_with_scripts(zap.cwd, {
        "fsmon.py": "import watch\nwatch.main()\n",
        "watch.py": "import sys\ndef main():\n    sys.exit(1)\n"})
    git(repo, "config", "core.fsmonitor", "python3 fsmon.py")
    agent(zap, FORGE.format(out=outside))
    assert not list(outside.iterdir())  # nothing ran inside
    env = {k: v for k, v in zap.env.items() if k != "GIT_PAGER"}
    subprocess.run(["git", "status", "--short"], cwd=repo, env=env, capture_output=True,
                   timeout=30, stdin=subprocess.DEVNULL)
    assert sorted(p.name for p in outside.iterdir()) == []


@pytest.mark.parametrize("hook,files,target", [
    ("#!/bin/sh\nexec tools/lint.sh\n", {"tools/lint.sh": SH}, "tools/lint.sh"),
    ("#!/usr/bin/env python3\nimport sys\nsys.path.insert(0, 'tools')\nimport lint\n",
     {"tools/lint.py": PY}, "tools/lint.py"),
])
def test_what_a_hook_runs_cannot_be_rewritten(zap, outside, hook, files, target):
    """A hook in `.git/hooks` (held with `.git`) runs a script of the tree,
    or imports one: that script is held too (h-git9)."""
    repo = repo_with_scripts(zap.cwd, files)
    (repo / ".git" / "hooks" / "pre-commit").write_text(hook)
    (repo / ".git" / "hooks" / "pre-commit").chmod(0o755)
    evil = (EVIL_PY if target.endswith(".py") else EVIL_SH).format(out=outside)
    agent(zap, f"printf '{evil}' > {target} || true")
    assert not list(outside.iterdir())
    (repo / "x").write_text("x")
    git(repo, "add", "x")
    subprocess.run(["git", "commit", "-qm", "x"], cwd=repo, capture_output=True, timeout=30,
                   stdin=subprocess.DEVNULL)
    assert sorted(p.name for p in outside.iterdir()) == []


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
