"""`zapcli.sandbox.placeholders`: what is made where a control file does not
exist yet (an empty folder, or for a name a program reads as a file a file
that reads as "nothing configured"), held by every sandbox that mounts it and
removed by the last one to end — never under a sandbox that still mounts
one, never when it holds something of the user's now, and swept when a
runner was killed; and git inside the sandbox neither lists nor commits the
held files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.conftest import REPO, wait_until
from tests.sandbox.conftest import boxed, needs_bwrap
from zapcli.plain import replace
from zapcli.sandbox import placeholders
from zapcli.sandbox.policy import GitAccess, resolve

NAMES = (".git", ".zapcli", ".envrc", ".vscode/tasks.json")


def _policy(tmp: Path):
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    (tmp / "scratch").mkdir(exist_ok=True)
    return ws, resolve("workspace", workspace=str(ws), scratch=str(tmp / "scratch"),
                       control=NAMES)[0]


def test_made_before_held_and_gone_after(tmp_path):
    ws, policy = _policy(tmp_path)
    records = str(tmp_path / "records")
    assert sorted(policy.placeholders) == sorted(str(ws / n) for n in (".git", ".zapcli", ".envrc",
                                                                        ".vscode"))
    held = placeholders.hold(policy, records)
    assert [n for n in NAMES if (ws / n).is_file()] == [".envrc"] and not held.notes  # the rest: folders
    assert all(os.listdir(ws / n) == [] for n in (".git", ".zapcli", ".vscode"))
    assert len(os.listdir(records)) == 1  # one record for this start
    held.release()
    assert os.listdir(ws) == [] and os.listdir(records) == []
    held.release()  # twice is harmless


def test_the_last_of_two_sandboxes_removes_them(tmp_path):
    ws, policy = _policy(tmp_path)
    records = str(tmp_path / "records")
    first = placeholders.hold(policy, records)
    _, seen = _policy(tmp_path)  # the second sees them existing (and `.vscode/tasks.json` missing)
    assert seen.placeholders == (str(ws / ".vscode" / "tasks.json"),)
    second = placeholders.hold(seen, records)
    first.release()
    assert sorted(os.listdir(ws)) == [".envrc", ".git", ".vscode", ".zapcli"]  # still mounted
    assert os.listdir(ws / ".vscode") == ["tasks.json"]
    second.release()
    assert os.listdir(ws) == []


def test_one_that_holds_something_now_is_kept(tmp_path):
    ws, policy = _policy(tmp_path)
    records = str(tmp_path / "records")
    held = placeholders.hold(policy, records)
    (ws / ".zapcli" / "agent-memory").mkdir()  # the memory tool wrote its folder meanwhile
    held.release()
    assert os.listdir(ws) == [".zapcli"] and os.listdir(records) == []


def test_one_that_cannot_be_made_is_left_out_and_said(tmp_path):
    ws, policy = _policy(tmp_path)
    (ws / ".vscode").write_text("")  # made a file since the policy was resolved
    (ws / ".envrc").symlink_to(tmp_path / "nowhere")
    blocked = replace(policy, placeholders=(*policy.placeholders, str(ws / "file" / "x")))
    (ws / "file").write_text("")
    held = placeholders.hold(blocked, str(tmp_path / "records"))
    assert str(ws / "file" / "x") not in held.policy.placeholders and held.notes
    held.release()


KILLED = textwrap.dedent("""\
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from zapcli.sandbox import placeholders
    from zapcli.sandbox.policy import resolve
    policy = resolve("workspace", workspace=sys.argv[2], scratch=sys.argv[2],
                     control=(".zapcli", ".envrc"))[0]
    placeholders.hold(policy, sys.argv[3])
    print("held", flush=True)
    time.sleep(60)
""")


def test_a_killed_holders_placeholders_are_swept(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    records = tmp_path / "records"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(REPO), str(ws), str(records)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    assert placeholders.sweep(str(records)) == []  # it still holds them
    assert sorted(os.listdir(ws)) == [".envrc", ".zapcli"]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sorted(placeholders.sweep(str(records))) == [str(ws / ".envrc"), str(ws / ".zapcli")]
    assert os.listdir(ws) == [] and os.listdir(records) == []


@needs_bwrap
def test_bwrap_mounts_them_read_only_and_refuses_to_start_without_them(tmp_path):
    ws, policy = _policy(tmp_path)
    held = placeholders.hold(policy, str(tmp_path / "records"))
    try:
        done = boxed(held.policy, ["sh", "-c", "mkdir -p .zapcli/subagents; echo x > .envrc; "
                                   "git init -q .; touch made; ls -A"], cwd=ws, capture_output=True,
                     text=True)
        assert "Read-only file system" in done.stderr and "made" in done.stdout, done
        assert sorted(os.listdir(ws)) == [".envrc", ".git", ".vscode", ".zapcli", "made"]
        assert all(os.listdir(ws / n) == [] for n in (".git", ".vscode", ".zapcli"))
        assert (ws / ".envrc").read_text() == ""
    finally:
        held.release()
    assert os.listdir(ws) == ["made"]
    bare = boxed(policy, ["true"], cwd=ws, capture_output=True)
    assert bare.returncode != 0  # never the names left writable
    wait_until(lambda: os.listdir(ws) == ["made"], 5)


def test_an_approved_write_to_a_held_name_says_why_and_works_after(tmp_path, monkeypatch):
    """A person approved writing `.envrc`, which did not exist when the
    sandbox started: the tool says it is held, writes nothing through it,
    and writes it once the run's sandbox has ended."""
    from zapcli.agent.types import ToolContext
    from zapcli.paths import placeholders_dir
    from zapcli.tools.files import WriteTool

    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))
    ws, policy = _policy(tmp_path)
    held = placeholders.hold(policy, str(placeholders_dir()))
    ctx = ToolContext(str(ws), str(ws))
    said = WriteTool().run({"path": ".envrc", "content": "use nix\n"}, ctx)
    assert not said.ok and "control file" in said.content and (ws / ".envrc").read_text() == ""
    held.release()
    assert WriteTool().run({"path": ".envrc", "content": "use nix\n"}, ctx).ok
    assert (ws / ".envrc").read_text() == "use nix\n"


# ---------------------------------------------------------------- file-kind names

FILES = ("opencode.json", "opencode.jsonc", ".mcp.json", ".envrc", ".env.local", "mise.toml",
         ".pre-commit-config.yaml", ".vscode/tasks.json", ".vscode/settings.json",
         ".npmrc", ".yarnrc", ".tool-versions", "bunfig.toml", ".pnpmfile.cjs", ".env", ".pdbrc",
         "gradle.properties")


def _files(tmp: Path, names: tuple[str, ...] = (".git", *FILES)):
    """A workspace whose `.vscode/` exists (so its json files are held one by one)."""
    ws = tmp / "ws"
    (ws / ".vscode").mkdir(parents=True, exist_ok=True)
    (tmp / "scratch").mkdir(exist_ok=True)
    return ws, resolve("workspace", workspace=str(ws), scratch=str(tmp / "scratch"),
                       control=names)[0]


READ = textwrap.dedent("""\
    import json, os, sys, tomllib
    import yaml
    out = {}
    for name in sys.argv[1:]:
        if name.endswith((".json", ".jsonc")):
            out[name] = json.load(open(name))
        elif name.endswith(".toml"):
            out[name] = tomllib.load(open(name, "rb"))
        elif name.endswith(".yaml"):
            out[name] = yaml.safe_load(open(name))
        else:
            out[name] = open(name).read()
    print(json.dumps(out, sort_keys=True))
""")
NEUTRAL = {"opencode.json": {}, "opencode.jsonc": {}, ".mcp.json": {}, ".envrc": "",
           ".env.local": "", "mise.toml": {}, ".pre-commit-config.yaml": {"repos": []},
           ".vscode/tasks.json": {"version": "2.0.0", "tasks": []}, ".vscode/settings.json": {},
           ".npmrc": "", ".yarnrc": "", ".tool-versions": "", "bunfig.toml": {}, ".pnpmfile.cjs": "",
           ".env": "", ".pdbrc": "", "gradle.properties": ""}


def _read(cwd: Path, policy: Any = None) -> subprocess.CompletedProcess[str]:
    """The held files as a program reads them: outside, or in a sandbox under `policy`."""
    command = [sys.executable, "-c", READ, *FILES]
    if policy is not None:
        return boxed(policy, command, cwd=cwd, capture_output=True, text=True, timeout=60)
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_a_file_name_is_held_by_a_file_its_program_reads_as_no_configuration(tmp_path):
    """`opencode.json` held by an empty folder killed opencode: a name a
    program reads as a file is held by a file, whose content its format reads
    as "nothing configured" — outside (the user's own tools during a run) as
    inside."""
    ws, policy = _files(tmp_path)
    held = placeholders.hold(policy, str(tmp_path / "records"))
    try:
        assert all(os.path.isfile(ws / n) for n in FILES), sorted(os.listdir(ws))
        assert (ws / ".git").is_dir() and os.listdir(ws / ".git") == []  # git: no repository
        done = _read(ws)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == NEUTRAL
    finally:
        held.release()
    assert os.listdir(ws) == [".vscode"] and os.listdir(ws / ".vscode") == []


@needs_bwrap
def test_inside_the_sandbox_a_held_file_reads_as_no_configuration_and_stays_unwritable(tmp_path):
    ws, policy = _files(tmp_path)
    held = placeholders.hold(policy, str(tmp_path / "records"))
    try:
        done = _read(ws, held.policy)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == NEUTRAL
        tries = boxed(held.policy, ["sh", "-c", "for n in " + " ".join(FILES) + "; do "
                                    "echo '{\"mcp\": 1}' > $n; echo x >> $n; rm -f $n; mv $n moved; "
                                    "ln -sf /etc/passwd $n; mkdir -p $n/x; done; ls -A; true"],
                      cwd=ws, capture_output=True, text=True, timeout=60)
        assert "Read-only file system" in tries.stderr, tries
        assert json.loads(_read(ws).stdout) == NEUTRAL  # nothing of it reached them
        assert not (ws / "moved").exists()
    finally:
        held.release()
    assert os.listdir(ws) == [".vscode"] and os.listdir(ws / ".vscode") == []


def test_two_sandboxes_share_a_file_placeholder_and_the_last_removes_it(tmp_path):
    ws, policy = _files(tmp_path, ("opencode.json", ".envrc"))
    records = str(tmp_path / "records")
    first = placeholders.hold(policy, records)
    _, seen = _files(tmp_path, ("opencode.json", ".envrc"))  # the second finds them made
    assert seen.placeholders == () and str(ws / "opencode.json") in seen.readonly
    second = placeholders.hold(seen, records)
    first.release()
    assert (ws / "opencode.json").is_file() and (ws / ".envrc").is_file()  # the second mounts them
    assert placeholders.sweep(records) == []  # nor does a sweep take them from under it
    second.release()
    assert os.listdir(ws) == [".vscode"] and os.listdir(records) == []


def test_a_file_placeholder_that_holds_the_users_content_is_kept(tmp_path):
    """The user writes one in place (an editor), replaces another (a new file
    renamed over it), and writes the third's very content again: all three
    are theirs now, and stay."""
    import time

    ws, policy = _files(tmp_path, ("opencode.json", ".envrc", "mise.toml"))
    records = str(tmp_path / "records")
    held = placeholders.hold(policy, records)
    time.sleep(0.05)  # past the file system's clock tick: the rewrite below is told apart
    with open(ws / ".envrc", "w") as fh:  # in place: the sandbox sees it too, read-only
        fh.write("use nix\n")
    (ws / "new.toml").write_text("[tools]\nnode = '20'\n")
    os.replace(ws / "new.toml", ws / "mise.toml")
    (ws / "opencode.json").write_text((ws / "opencode.json").read_text())
    held.release()
    assert (ws / ".envrc").read_text() == "use nix\n"
    assert (ws / "mise.toml").read_text() == "[tools]\nnode = '20'\n"
    assert (ws / "opencode.json").read_text() == "{}\n"
    assert placeholders.sweep(records) == [] and os.listdir(records) == []  # forgotten, kept


def test_a_killed_holders_file_placeholders_are_swept(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    records = tmp_path / "records"
    script = KILLED.replace('(".zapcli", ".envrc")', '("opencode.json", ".mcp.json", ".zapcli")')
    proc = subprocess.Popen([sys.executable, "-c", script, str(REPO), str(ws), str(records)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    assert (ws / "opencode.json").is_file() and placeholders.sweep(str(records)) == []
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sorted(placeholders.sweep(str(records))) == [str(ws / n) for n in (
        ".mcp.json", ".zapcli", "opencode.json")]
    assert os.listdir(ws) == [] and os.listdir(records) == []


def test_an_approved_write_to_a_held_file_name_says_why_and_works_after(tmp_path, monkeypatch):
    from zapcli.agent.types import ToolContext
    from zapcli.paths import placeholders_dir
    from zapcli.tools.files import EditTool, WriteTool

    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))
    ws, policy = _files(tmp_path, ("opencode.json",))
    held = placeholders.hold(policy, str(placeholders_dir()))
    ctx = ToolContext(str(ws), str(ws))
    wrote = WriteTool().run({"path": "opencode.json", "content": '{"mcp": {}}'}, ctx)
    edited = EditTool().run({"path": "opencode.json", "old_string": "{}",
                             "new_string": '{"mcp": {}}'}, ctx)
    assert not wrote.ok and "control file" in wrote.content, wrote.content
    assert not edited.ok and "control file" in edited.content, edited.content
    assert (ws / "opencode.json").read_text() == "{}\n"
    held.release()
    assert WriteTool().run({"path": "opencode.json", "content": '{"mcp": {}}'}, ctx).ok
    assert (ws / "opencode.json").read_text() == '{"mcp": {}}'


# ---------------------------------------------------------------- git and the held files

def _git(cwd: Path, *args: str, policy: Any = None) -> subprocess.CompletedProcess[str]:
    """git, outside or in a sandbox under `policy`."""
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    if policy is not None:
        return boxed(policy, ["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                     timeout=60)
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)


def _worktree(tmp: Path) -> tuple[Path, Path]:
    """A repository with one commit, and a linked worktree of it (as --worktree makes)."""
    repo, tree = tmp / "repo", tmp / "tree"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hello\n")
    _git(repo, "add", "README")
    assert _git(repo, "commit", "-qm", "first").returncode == 0
    assert _git(repo, "worktree", "add", "-q", "-b", "work", str(tree)).returncode == 0
    return repo, tree


@needs_bwrap
def test_git_inside_neither_lists_nor_commits_a_held_file(tmp_path):
    """An agent's `git add -A && git commit` in its worktree takes its work
    and none of the held files; its `git status` lists none of them; and the
    repository's own exclude file is the same byte for byte afterwards."""
    repo, tree = _worktree(tmp_path)
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes()
    (tmp_path / "scratch").mkdir()
    common = repo / ".git"  # what a --worktree tree's fence grants (zapcli.worktrees.fence)
    access = GitAccess(str(tree), writable=tuple(str(p) for p in (
        common / "worktrees" / "tree", common / "objects", common / "refs" / "heads",
        common / "logs" / "refs" / "heads")))
    policy = resolve("workspace", workspace=str(tree), scratch=str(tmp_path / "scratch"),
                     control=(".git", *(n for n in FILES if not n.startswith(".vscode/"))),
                     git=[access])[0]
    held = placeholders.hold(policy, str(tmp_path / "records"))
    try:
        (tree / "work.txt").write_text("done\n")
        status = _git(tree, "status", "--porcelain", policy=held.policy)
        assert status.stdout.split() == ["??", "work.txt"], status
        _git(tree, "add", "-A", policy=held.policy)
        done = _git(tree, "commit", "-qm", "work", policy=held.policy)
        assert done.returncode == 0, done.stderr
        committed = _git(tree, "show", "--name-only", "--format=", "HEAD").stdout.split()
        assert committed == ["work.txt"], committed
    finally:
        held.release()
    assert exclude.read_bytes() == before
    assert os.listdir(tmp_path / "scratch") == []  # what git read inside is gone with it
    assert sorted(os.listdir(tree)) == [".git", "README", "work.txt"]


def test_every_control_name_is_held_as_the_kind_its_programs_read():
    """The one list, every backend's names included: a name read as a file
    gets a file (a new one of an unknown format would fall back to a folder
    and break its program, as `opencode.json` did), the rest folders."""
    from zapcli.backends.registry import control_files
    from zapcli.sandbox.neutral import content

    folders = {n for n in control_files() if content("/ws/" + n) is None}
    assert folders == {".git", ".zapcli", ".devcontainer", ".husky", ".idea", ".cursor", ".claude",
                       ".codex", ".gemini", ".qwen", ".pi", ".opencode", ".mise", ".config/mise",
                       ".cargo", "rust-toolchain.toml", "rust-toolchain", ".agents/skills", ".mvn",
                       ".python-version"}, folders
    assert content("/ws/.vscode") is None  # the missing folder of `.vscode/tasks.json`


def test_git_exclude_lines_match_the_held_path_alone(tmp_path):
    from zapcli.sandbox.git_exclude import pattern

    odd = "sub [1]/#x!*.json"
    (tmp_path / "sub [1]").mkdir()
    (tmp_path / odd).write_text("{}\n")
    (tmp_path / "sub [1]" / "other.json").write_text("{}\n")
    _git(tmp_path, "init", "-q")
    (tmp_path / ".git" / "info" / "exclude").write_bytes(pattern(odd))
    listed = _git(tmp_path, "status", "--porcelain", "-uall").stdout.splitlines()
    assert listed == ['?? "sub [1]/other.json"'], listed


def test_a_repository_without_an_exclude_file_is_said(tmp_path):
    repo = tmp_path / "ws"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".git" / "info" / "exclude").unlink()
    (tmp_path / "scratch").mkdir()
    policy = resolve("workspace", workspace=str(repo), scratch=str(tmp_path / "scratch"),
                     control=("opencode.json",))[0]
    held = placeholders.hold(policy, str(tmp_path / "records"))
    try:
        assert held.policy.covers == ()
        assert any("opencode.json as untracked" in n and "no exclude file" in n
                   for n in held.notes), held.notes
    finally:
        held.release()
    assert sorted(os.listdir(repo)) == [".git"]


def test_a_name_held_only_where_it_exists_gets_no_placeholder(tmp_path):
    """`pnpm-workspace.yaml` (`zapcli.control.PRESENT`): a placeholder would make
    the folder a pnpm workspace root for the person's pnpm during the run. One
    that exists is held; one removed between the policy and the hold is not
    made again."""
    name = ("pnpm-workspace.yaml",)
    ws, policy = _files(tmp_path, name)
    assert policy.placeholders == () and policy.readonly == ()
    (ws / name[0]).write_text("packages: []\n")
    ws, policy = _files(tmp_path, name)
    assert policy.readonly == (str(ws / name[0]),)
    (ws / name[0]).unlink()
    held = placeholders.hold(policy, str(tmp_path / "records"))
    try:
        assert not (ws / name[0]).exists()
        assert held.policy.readonly == () and held.policy.placeholders == ()
    finally:
        held.release()
