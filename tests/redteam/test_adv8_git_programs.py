"""A program the person's git config runs from the work tree, named in a way
round 7's fix (`zapcli.gitruns.programs`, `zapcli.control._git_files`) does
not read (adversary round 8, on 779ac4c).

Round 7 reads each word of a command-running setting from the top and from
every folder the command names, with expansions left out. The shell finds
a program in other ways still:

- through a `PATH` the command sets itself (`PATH=tools:$PATH fsmon`: the
  program word is not the first word, and no word names `tools/fsmon`);
- by pathname expansion (`tool?/st.sh`, `t*/st.sh`: the glob is read as a
  literal name, which is no file);
- by a name built from an expansion and a literal (`d=to; ${d}ols/st.sh`:
  what is left once the expansion is stripped, `ols/st.sh`, is no file);
- in a folder the command moves to by an expansion (`cd "${GIT_PREFIX:-.}"
  && ./run.sh`, the idiom for an alias that works where the person
  stands: `git t` in `sub/` runs `sub/run.sh`).

And a config file git includes only under a condition (`includeIf
"onbranch:release/**"`, `hasconfig:remote.*.url:`) is held, but what it
says is not read while the condition is false (git does not list it): the
program its `core.fsmonitor` names stays writable, and runs once the person
checks out a release branch.

Each time sandboxed work rewrites the file git will run, and the person's
next `git status` runs it — as the person, outside every sandbox.

The outside effect: the file the rewritten program writes in `outside`.

Status against 779ac4c: SUCCEEDED for all five. Fixed (h-adv8): `words`
keeps the word after a `NAME=value` a program and gives a `PATH`-like
value's folders; `programs` matches a word with a glob, or with an
expansion read as `*`, against the tree (a folder's worth; an expansion
that stands for several folders, `${d}/st.sh` with d=a/b, is still not
read); `control._git_files` reads an included file git did not read (its
condition false now) with `git config --file`; a `cd`/`-C` to an expansion reads the
words from every folder of the tree (where the file exists).

h-git9: a glob that lists the top (`*/check.sh`, and `tool?/st.sh`, which a
new `toola/` sorting first wins) cannot be held: the sandbox refuses the
work's start in words (`zapcli.gitconfigs.unholdable`); after a `cd tools`
the glob lists tools, held whole; a folder a glob lists that is not made
yet (`tools/hooks.d/*`) is held there or not.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import agent, repo_with_scripts
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]

SH = "#!/bin/sh\nexit 1\n"
EVIL = "#!/bin/sh\\nid > {out}/PWNED\\nexit 1\\n"
STATUS = [["status", "--short"]]

ROUTES = {
    # (config entries, the person's committed files, the file the agent rewrites, git commands)
    "path-set-by-the-command": ({"core.fsmonitor": "PATH=tools:$PATH fsmon"},
                                {"tools/fsmon": SH}, "tools/fsmon", STATUS),
    "glob": ({"core.fsmonitor": "tool?/st.sh"}, {"tools/st.sh": SH}, "tools/st.sh", STATUS),
    "name-built-from-an-expansion": ({"core.fsmonitor": "d=to; ${d}ols/st.sh"},
                                     {"tools/st.sh": SH}, "tools/st.sh", STATUS),
    # `cd "${GIT_PREFIX:-.}"`: the alias runs ./run.sh in the folder the person stands in
    "cd-to-where-the-person-stands": ({"alias.t": '!cd "${GIT_PREFIX:-.}" && ./run.sh'},
                                      {"sub/run.sh": SH}, "sub/run.sh", [["-C", "sub", "t"]]),
    # a glob over a folder: a file the agent adds there matches it too
    "new-file-a-glob-matches": ({"core.fsmonitor": 'for f in tools/hooks.d/*; do "$f"; done; exit 1'},
                                {"tools/hooks.d/a.sh": SH}, "tools/hooks.d/b.sh", STATUS),
    # the same at the top: a new folder matches `*/check.sh` (the top cannot be held)
    "new-folder-a-glob-matches": ({"core.fsmonitor": 'for f in */check.sh; do "$f"; done; exit 1'},
                                  {"tools/check.sh": SH}, "evil/check.sh", STATUS),
    # the same class (h-git9): a new folder at the top that sorts before the one meant
    # (`tool?/st.sh` runs toola/st.sh, tools/st.sh its argument)
    "new-folder-sorting-first": ({"core.fsmonitor": "tool?/st.sh"}, {"tools/st.sh": SH},
                                 "toola/st.sh", STATUS),
    # a new folder in the folder a command moves to first: that folder is held whole
    "new-folder-after-a-cd": ({"core.fsmonitor": 'cd tools && for f in */check.sh; do "$f"; '
                                                 'done; exit 1'},
                              {"tools/a/check.sh": SH}, "tools/b/check.sh", STATUS),
    # the folder a glob lists, not made yet: made by the agent, its files match
    "new-folder-a-glob-lists": ({"core.fsmonitor": 'for f in tools/hooks.d/*; do "$f"; done; '
                                                   'exit 1'},
                                {"tools/st.sh": SH}, "tools/hooks.d/b.sh", STATUS),
    "include-on-a-branch": ({"includeIf.onbranch:release/**.path": "../tools/git.cfg"},
                            {"tools/st.sh": SH,
                             "tools/git.cfg": "[core]\n\tfsmonitor = tools/st.sh\n"},
                            "tools/st.sh", [["checkout", "-qb", "release/1"], *STATUS]),
}


@pytest.mark.parametrize("route", ROUTES)
def test_a_program_the_persons_git_config_runs_cannot_be_rewritten(zap, outside, route):
    config, files, target, runs = ROUTES[route]
    repo = repo_with_scripts(zap.cwd, files)
    for key, value in config.items():
        git(repo, "config", key, value)
    agent(zap, f"mkdir -p $(dirname {target}); printf '{EVIL.format(out=outside)}' > {target} "
               f"&& chmod +x {target} || true")
    assert not list(outside.iterdir())  # nothing ran inside
    env = {k: v for k, v in zap.env.items() if k != "GIT_PAGER"}
    for run in runs:
        subprocess.run(["git", *run], cwd=repo, env={**env, "PAGER": "cat"},
                       capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran


def test_a_root_whose_git_lists_its_top_is_refused_in_words(zap):
    """The top cannot be held: the work's start is refused, and says which
    setting, in which file, and what to do; nothing of the work runs. A
    pattern the shell does not expand (quoted: git reads it) lists nothing."""
    repo = repo_with_scripts(zap.cwd, {"tools/check.sh": SH})
    git(repo, "config", "alias.checks", '!for f in */check.sh; do "$f"; done')
    # doctor says so before any work is refused (a new user met it only at a start)
    checks = {c["name"]: c for c in zap.json("doctor")["checks"]}
    said = checks["git settings"]
    assert said["ok"] and said["warning"] and "refused at its start" in said["detail"], said
    assert said["problems"] == [f"alias.checks (in {repo}/.git/config) runs "
                                f"'!for f in */check.sh; do \"$f\"; done', and its pattern */check.sh matches what is "
                                f"made in {repo}"], said
    sid = zap.spawn_sh("touch ran", "--sandbox")
    assert zap.wait_status(sid) == "failed"
    reason = zap.json("poll", "--no-wait", sid)["subagents"][0]["reason"]
    assert "alias.checks" in reason and f"{repo}/.git/config" in reason, reason
    assert "*/check.sh" in reason and "--no-sandbox" in reason, reason
    assert "--approval full" not in reason, reason  # not for --cli sh
    assert not (repo / "ran").exists()
    git(repo, "config", "alias.checks", "!git diff -- '*.c'")
    assert "git settings" not in {c["name"] for c in zap.json("doctor")["checks"]}
    assert zap.wait_status(zap.spawn_sh("touch ran", "--sandbox")) == "completed"
    assert (repo / "ran").exists()


LOOKER = "name: looker\ndescription: looks\ntools: [read, glob, grep]\nprompt: look\n"
LIBWRITER = ("name: libwriter\ndescription: writes the library\ntools: [write]\n"
             "sandbox:\n  writable: [src/lib]\nprompt: write\n")


def test_work_that_cannot_make_what_the_glob_matches_is_not_refused(zap, model):
    """A new user's finding: in a repository whose git lists its top, a
    read-only definition (read, glob, grep) was refused, and so was one
    whose `sandbox.writable` leaves the top out — the way out the refusal
    itself names. Neither can make a folder the glob matches: each runs. A
    pattern deep enough to reach into that folder (`*/*/check.sh` matches
    `src/lib/check.sh`) still refuses the writer."""
    repo = repo_with_scripts(zap.cwd, {"tools/check.sh": SH, "src/lib/a.txt": "a\n"})
    git(repo, "config", "alias.checks", '!for f in */check.sh; do "$f"; done')
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "looker.yml").write_text(LOOKER)
    (folder / "libwriter.yml").write_text(LIBWRITER)
    made = str(repo / "src" / "lib" / "made.txt")
    model([{"match": "look", "turns": [{"text": "looked"}]},
           {"match": "write", "turns": [
               {"tool_calls": [{"name": "write", "arguments": {"path": made, "content": "x"}}]},
               {"text": "written"}]}])

    def ran(name: str, task: str) -> tuple[str, str]:
        spawned = zap("spawn", "--agent", name, "--sandbox", "--", task, timeout=90)
        assert spawned.returncode == 0, spawned.err
        sid = spawned.out.strip().splitlines()[-1]
        status = zap.wait_status(sid)
        return status, str(zap.json("poll", "--no-wait", sid)["subagents"][0].get("reason"))

    assert ran("looker", "look around") == ("completed", "None")
    assert ran("libwriter", "write the file")[0] == "completed"
    assert (repo / "src" / "lib" / "made.txt").read_text() == "x"
    git(repo, "config", "alias.checks", '!for f in */*/check.sh; do "$f"; done')
    status, reason = ran("libwriter", "write the file")
    assert status == "failed" and "alias.checks" in reason, reason


def test_a_run_refused_before_it_starts_still_gives_its_run_document(zap, model):
    """`run --json` promises the run document also when the run fails
    (docs/how-to/delegate.md): a run whose sandbox refused to start gave
    `zapcli/error@1` instead (a new user's `json.load(...)["status"]` then
    failed)."""
    repo = repo_with_scripts(zap.cwd, {"tools/check.sh": SH})
    git(repo, "config", "alias.checks", '!for f in */check.sh; do "$f"; done')
    model([{"match": "anything", "turns": [{"text": "never asked"}]}])
    proc = zap("run", "--json", "--sandbox", "--", "anything", timeout=90)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["schema"] == "zapcli/run@1", (proc.returncode, doc)
    assert doc["status"] == "failed" and "alias.checks" in doc["reason"], doc
