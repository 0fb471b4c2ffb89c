"""`zapcli trust` / `untrust`: what a trust covers (each file and its hash),
the list, revoke, `--trust` on the commands that read a workspace, the one
line they print when they ignored something, and clear errors for bad input."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DEFINITION = "name: helper\ndescription: the repository's helper\ntools: [read]\nprompt: help\n"


@pytest.fixture
def repo(zap) -> Path:
    subprocess.run(["git", "init", "-q", str(zap.cwd)], check=True)
    (zap.cwd / ".zapcli" / "subagents").mkdir(parents=True)
    (zap.cwd / ".zapcli" / "config.yaml").write_text("timeout_s: 77\n")
    (zap.cwd / ".zapcli" / "subagents" / "helper.yml").write_text(DEFINITION)
    skill = zap.cwd / ".claude" / "skills" / "lint"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: lint\ndescription: lint it\n---\nrun the linter\n")
    return zap.cwd


def _sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _records(zap) -> list[Path]:
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "trust"
    return sorted(folder.glob("*.json")) if folder.exists() else []


def test_trust_records_each_file_and_its_hash_privately(zap, repo):
    doc = zap.json("trust", check=True)
    assert doc["outcome"] == "trusted" and doc["workspace"] == str(repo.resolve()) and doc["trusted"]
    files = {f["path"]: f for f in doc["files"]}
    assert set(files) == {".zapcli/config.yaml", ".zapcli/subagents/helper.yml", ".claude/skills/lint"}
    assert files[".zapcli/config.yaml"]["digest"] == _sha(repo / ".zapcli" / "config.yaml")
    assert all(f["state"] == "trusted" for f in files.values())
    (record,) = _records(zap)
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    assert oct(record.parent.stat().st_mode & 0o777) == "0o700"
    assert json.loads(record.read_text())["files"][".zapcli/subagents/helper.yml"] == \
        _sha(repo / ".zapcli" / "subagents" / "helper.yml")
    text = zap("trust").out  # a person reads the same: each file, its (short) hash, its state
    assert "trusted " + str(repo.resolve()) in text and ".claude/skills/lint" in text
    assert _sha(repo / ".zapcli" / "config.yaml")[7:23] in text


def test_trust_says_what_is_wrong_in_the_files_it_trusts(zap, repo):
    """new user: a config.yaml with an invalid key was trusted without a word;
    only the next spawn failed. Trust still records it (the person decides),
    and says each problem with its file:line, as the commands that read it do."""
    config = repo / ".zapcli" / "config.yaml"
    config.write_text("timeout_s: 77\nmax_paralel: 3\n")
    (repo / ".zapcli" / "subagents" / "typo.yml").write_text("name: typo\ndescription: x\ntool: [read]\n")
    proc = zap("trust")
    assert proc.returncode == 0 and f"{config}:2: unknown key 'max_paralel'" in proc.out
    assert f"{repo / '.zapcli' / 'subagents' / 'typo.yml'}:3:1: unknown key 'tool'" in proc.out
    doc = zap.json("trust", check=True)
    assert doc["trusted"] and len(doc["problems"]) == 2
    spawn = zap("spawn", "--cli", "sh", "--", "true")  # what trust said is what spawn says
    assert spawn.returncode != 0 and f"{config}:2: unknown key 'max_paralel'" in spawn.err
    config.write_text("timeout_s: 77\n")
    (repo / ".zapcli" / "subagents" / "typo.yml").unlink()
    assert zap.json("trust", check=True)["problems"] == []
    assert "problems" not in zap("trust").out


def test_show_changes_nothing_and_names_each_files_state(zap, repo):
    doc = zap.json("trust", "--show", check=True)
    assert not doc["trusted"] and {f["state"] for f in doc["files"]} == {"new"}
    assert not _records(zap)
    assert "to use them: zapcli trust " + str(repo.resolve()) in zap("trust", "--show").out
    zap("trust", check=True)
    (repo / ".zapcli" / "config.yaml").write_text("timeout_s: 78\n")
    (repo / ".zapcli" / "subagents" / "new.yml").write_text(DEFINITION.replace("helper", "new"))
    states = {f["path"]: f["state"] for f in zap.json("trust", "--show")["files"]}
    assert states == {".zapcli/config.yaml": "changed", ".zapcli/subagents/helper.yml": "trusted",
                      ".zapcli/subagents/new.yml": "new", ".claude/skills/lint": "trusted"}


def test_a_folder_trusted_without_zapcli_files_shows_as_trusted(zap, tmp_path):
    """A new user: `trust` said "trusted ... nothing to trust", then
    `trust --show` said "not trusted" and `--list` "(as trusted)"."""
    empty = tmp_path / "empty"
    empty.mkdir()
    zap.cwd = empty
    zap("trust", check=True)
    doc = zap.json("trust", "--show", check=True)
    assert doc["how"] == "trusted" and doc["trusted"], doc
    assert "trusted since" in zap("trust", "--show").out
    assert "(unchanged since)" in zap("trust", "--list").out


def test_a_subfolder_trusts_its_workspace_and_says_so(zap, repo):
    (repo / "src" / "pkg").mkdir(parents=True)
    doc = zap.json("trust", "src/pkg", check=True)
    assert doc["workspace"] == str(repo.resolve()) and doc["given"] == "src/pkg"
    assert "the workspace of src/pkg" in zap("trust", "--show", "src/pkg").out


def test_list_and_revoke(zap, repo, tmp_path):
    assert zap.json("trust", "--list", check=True) == {"schema": "zapcli/trust-list@1", "trusted": []}
    assert "no folder is trusted" in zap("trust", "--list").out
    other = tmp_path / "other"
    (other / ".zapcli").mkdir(parents=True)
    (other / ".zapcli" / "mcp.json").write_text('{"mcpServers": {}}')
    zap("trust", check=True)
    zap("trust", str(other), check=True)
    (other / ".zapcli" / "mcp.json").write_text('{"mcpServers": {"x": {"command": "true"}}}')
    listed = {f["workspace"]: f for f in zap.json("trust", "--list")["trusted"]}
    assert listed[str(repo.resolve())]["differs"] == [] and listed[str(repo.resolve())]["files"] == 3
    assert listed[str(other.resolve())]["differs"] == [{"path": ".zapcli/mcp.json", "state": "changed"}]
    assert "1 file(s) differ" in zap("trust", "--list").out

    revoked = zap.json("trust", "--revoke", str(other), check=True)
    assert revoked["outcome"] == "revoked" and len(_records(zap)) == 1
    again = zap("untrust", str(other))  # idempotent, and says so
    assert again.returncode == 0 and "was not trusted; nothing changed" in again.out
    gone = tmp_path / "gone"
    (gone / ".zapcli").mkdir(parents=True)
    (gone / ".zapcli" / "config.yaml").write_text("timeout_s: 5\n")
    zap("trust", str(gone), check=True)
    subprocess.run(["rm", "-rf", str(gone)], check=True)
    assert "(folder gone)" in zap("trust", "--list").out
    assert zap.json("untrust", str(gone))["outcome"] == "revoked"  # a folder that is gone too
    zap("untrust", check=True)
    assert not _records(zap)


@pytest.mark.parametrize("args,needle", [
    (("trust", "/no/such/folder"), "no such folder: /no/such/folder"),
    (("trust", "README"), "README is a file, not a folder"),
    (("trust", ""), "PATH is empty"),
    (("trust", "--list", "."), "--list lists every trusted folder and takes no PATH"),
    (("trust", "--list", "--revoke"), "--list and --revoke contradict each other"),
    (("trust", "--show", "/no/such/folder"), "no such folder"),
    (("untrust", "README"), "README is a file, not a folder"),
])
def test_bad_input_is_one_clear_line_and_changes_nothing(zap, repo, args, needle):
    (repo / "README").write_text("hi")
    proc = zap(*args)
    assert proc.returncode == 2 and needle in proc.err, proc.err
    assert "Traceback" not in proc.err and not _records(zap)


def test_a_fifo_or_a_huge_file_never_hangs_and_stays_untrusted(zap, repo):
    os.mkfifo(repo / ".zapcli" / "subagents" / "pipe.yml")
    doc = zap.json("trust", timeout=30)
    assert {f["path"]: f["state"] for f in doc["files"]}[".zapcli/subagents/pipe.yml"] == "unreadable"
    assert not doc["trusted"]


def test_a_subagents_work_never_trusts_a_folder(zap, repo):
    inside = {"ZAPCLI_SUBAGENT_ID": "sa_20260101_00000000"}
    for args in (("trust",), ("spawn", "--trust", "--cli", "sh", "--", "true"), ("doctor", "--trust")):
        proc = zap(*args, env=inside)
        assert proc.returncode == 2 and "refused inside a subagent's work" in proc.err, (args, proc.err)
    assert not _records(zap)
    assert zap("untrust", env=inside).returncode == 0  # taking trust away is always allowed


def test_the_commands_that_read_a_workspace_say_in_one_line_what_they_ignored(zap, repo):
    line = f"zapcli trust {repo.resolve()}"
    spawn = zap("spawn", "--cli", "sh", "--", "true")
    assert spawn.returncode == 0
    said = [x for x in spawn.err.splitlines() if line in x]
    assert len(said) == 1 and ".zapcli/config.yaml" in said[0] and "not trusted" in said[0]
    assert zap.json("poll", "--no-wait", spawn.out.strip())  # it ran all the same
    agents = zap("agents", "list")  # said as spawn says it: one stderr line, not in the listing
    full = [x for x in agents.err.splitlines() if line in x]  # its own agents use the skills too
    assert len(full) == 1 and full[0].startswith("zapcli: warning: ") and \
        ".zapcli/config.yaml" in full[0] and ".claude/skills/lint" in full[0], full
    assert ".claude/skills" not in said[0]  # a shell command uses none
    assert line not in agents.out and "helper" not in agents.out
    assert zap.json("agents", "list")["untrusted"]["ignored"][0]["path"] == ".zapcli/config.yaml"
    unknown = zap("agents", "show", "helper")  # the name is there, but in a file not trusted
    assert unknown.returncode == 1 and "its folder is not trusted" in unknown.err
    doctor = zap.json("doctor", timeout=120)
    (check,) = [c for c in doctor["checks"] if c["name"] == "workspace trust"]
    assert check["warning"] and line in check["detail"]
    assert [x for x in zap("doctor", timeout=120).err.splitlines() if line in x] == full
    zap("trust", check=True)
    assert line not in zap("spawn", "--cli", "sh", "--", "true").err
    shown = zap.json("agents", "show", "helper")
    assert shown["agent"]["layer"] == "workspace" and shown["untrusted"] is None


def test_a_shell_or_cli_spawn_is_not_told_of_skills_it_never_uses(zap):
    """A new user with Claude Code's `.claude/skills/` saw zapcli's trust
    warning at every spawn, `--cli sh -- true` included: zapcli's skills go
    to its own agent only (Claude reads its own folder itself)."""
    skill = zap.cwd / ".claude" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: deploy it\n---\nship\n")
    quiet = zap("spawn", "--cli", "sh", "--", "true")
    assert quiet.returncode == 0 and "zapcli trust" not in quiet.err, quiet.err
    told = zap("spawn", "--no-sandbox", "--model", "none-needed", "--", "hello")
    assert ".claude/skills/deploy" in told.err, (told.returncode, told.err)


def test_spawn_trust_records_the_folder_first(zap, repo):
    proc = zap("spawn", "--trust", "--cli", "sh", "--", "true")
    assert proc.returncode == 0 and "zapcli trust" not in proc.err
    assert zap.json("trust", "--show")["trusted"]
    record = json.loads(zap.trail(proc.out.strip()).read_text().splitlines()[0])
    assert set(record["trust"]["files"]) == {".zapcli/config.yaml", ".zapcli/subagents/helper.yml",
                                             ".claude/skills/lint"}
    assert record["timeout_s"] == 77  # the trusted config.yaml took effect


def test_a_definition_saved_into_the_workspace_is_trusted_by_that_save(zap, repo, tmp_path):
    """`agents save` is the person's approval of that file; the rest of the
    folder stays as untrusted as it was."""
    mine = tmp_path / "mine.yml"
    mine.write_text(DEFINITION.replace("helper", "mine"))
    zap("agents", "save", str(mine), "--scope", "workspace", check=True)
    states = {f["path"]: f["state"] for f in zap.json("trust", "--show")["files"]}
    assert states[".zapcli/subagents/mine.yml"] == "trusted"
    assert states[".zapcli/subagents/helper.yml"] == "new" and states[".zapcli/config.yaml"] == "new"
    assert zap.json("agents", "show", "mine")["agent"]["layer"] == "workspace"
    mine.write_text(DEFINITION.replace("helper", "mine").replace("help\n", "help more\n"))
    saved = zap("agents", "save", str(mine), "--scope", "workspace", env={
        "ZAPCLI_SUBAGENT_ID": "sa_20260101_00000000"})  # a subagent's work saves: not trusted
    assert saved.returncode == 0
    states = {f["path"]: f["state"] for f in zap.json("trust", "--show")["files"]}
    assert states[".zapcli/subagents/mine.yml"] == "changed"


def test_a_subagents_work_spawns_with_the_decision_its_spawner_recorded(zap, repo):
    """Its children use what was trusted when it was spawned, as it was then:
    a file changed mid-run is ignored, even in a trusted folder."""
    zap("trust", check=True)
    ids = repo / "children.ids"
    spawn = f"{sys.executable} -m zapcli spawn --cli sh -- true >> {ids}"
    sid = zap.spawn_sh(f"{spawn} && echo 'timeout_s: 99' > .zapcli/config.yaml && {spawn}",
                       "--no-sandbox")
    assert zap("wait", sid, "--timeout", "60").returncode == 0, zap("output", sid, "--stderr").out
    first, second = (json.loads(zap.trail(i).read_text().splitlines()[0])
                     for i in ids.read_text().split())
    assert first["timeout_s"] == 77 and len(first["trust"]["files"]) == 3
    assert second["timeout_s"] == 300 and ".zapcli/config.yaml" not in second["trust"]["files"]
    parent = json.loads(zap.trail(sid).read_text().splitlines()[0])
    assert parent["trust"] == first["trust"]  # what it was spawned with, handed down


def test_a_worktree_subagent_keeps_the_trust_of_the_folder_it_was_made_from(zap, model):
    """Its tree is a checkout zapcli made of the trusted workspace: the
    trusted files, unchanged there, still count (here: the provider its
    model goes through, read again by the runner in the tree)."""
    srv = model([{"match": "hello", "turns": [{"text": "hi through the trusted provider"}]}])
    zap.env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # only the trusted provider reaches it
    subprocess.run(["git", "init", "-q", "-b", "main", str(zap.cwd)], check=True)
    (zap.cwd / ".zapcli" / "subagents").mkdir(parents=True)
    (zap.cwd / ".zapcli" / "config.yaml").write_text(
        f"providers:\n  local: {{base_url: '{srv.base_url}', api_key_env: OPENAI_API_KEY}}\n")
    (zap.cwd / ".zapcli" / "subagents" / "worker.yml").write_text(
        "name: worker\ndescription: works\ntools: [read]\nmodel: local/scripted\n")
    git = ["git", "-C", str(zap.cwd), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "ours"], check=True)
    zap("trust", check=True)
    proc = zap("spawn", "--worktree", "--agent", "worker", "--", "hello")
    assert proc.returncode == 0, proc.err
    sid = proc.out.strip()
    assert zap("wait", sid, "--timeout", "60").returncode == 0, zap("poll", sid).out
    assert "hi through the trusted provider" in zap("output", sid).out
