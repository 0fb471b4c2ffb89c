"""Issue 13: the parent agent of `zapcli run` authors definitions with
`subagents_list`, `subagents_save`, `subagents_delete` — the CLI's own code
path, approvals like a configuration change, never grantable to a subagent."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

TYPO = "name: doc-checker\ndescription: Checks docs. Read-only.\ntoolz: [read, grep]\nprompt: You check docs.\n"
FIXED = "name: doc-checker\ndescription: Checks docs. Read-only.\ntools: [read, grep]\nprompt: You check docs.\n"


def call(tool, **arguments):
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}




def run(zap, *args):
    return subprocess.run([sys.executable, "-m", "zapcli", "run", *args], env=zap.env, cwd=zap.cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def tool_results(srv, match):
    """The tool messages the parent conversation received, in order."""
    last = [r for r in srv.requests if match in json.dumps(r["messages"][1])][-1]
    return [m["content"] for m in last["messages"] if m["role"] == "tool"]


def test_the_parent_saves_fixes_and_spawns_a_definition_in_the_next_turn(zap, model):
    srv = model([
        {"match": "make a doc checker", "turns": [
            call("subagents_list"),
            call("subagents_save", yaml=TYPO),
            call("subagents_save", yaml=FIXED),
            call("subagent", action="spawn", agent="doc-checker", task="check-docs now"),
            call("subagent", action="wait", timeout=60),
            {"text": "made and used doc-checker"}]},
        {"match": "check-docs now", "turns": [{"text": "docs are fine"}]}])
    proc = run(zap, "--approval", "full", "make a doc checker")
    assert proc.returncode == 0, proc.stderr
    listed, typo, fixed, spawned, waited = tool_results(srv, "make a doc checker")
    doc = json.loads(listed)
    assert {a["name"] for a in doc["agents"]} >= {"explorer", "general"}
    assert set(doc["folders"]) == {"system", "workspace"}
    assert "Error:" in typo and "did you mean 'tools'" in typo and ":3:" in typo
    assert "saved 'doc-checker'" in fixed
    assert "docs are fine" in waited
    child = next(r for r in srv.requests
                 if "check-docs now" in next(m["content"] for m in r["messages"] if m["role"] == "user"))
    assert sorted(t["function"]["name"] for t in child["tools"]) == ["grep", "read"]
    # indistinguishable from a definition a person saved with the CLI
    saved = zap.cwd / ".zapcli" / "subagents" / "doc-checker.yml"
    by_agent = saved.read_bytes()
    saved.unlink()
    (zap.cwd / "by-hand.yml").write_text(FIXED)
    assert zap("agents", "save", "by-hand.yml").returncode == 0
    assert saved.read_bytes() == by_agent


def test_built_ins_are_refused_and_a_rename_removes_the_old_file(zap, model):
    srv = model([{"match": "touch built-ins", "turns": [
        call("subagents_save", fields={"name": "explorer", "description": "mine", "tools": ["read"]}),
        call("subagents_delete", name="explorer"),
        call("subagents_save", fields={"name": "old-name", "description": "d", "tools": ["read"]}),
        call("subagents_save", fields={"name": "new-name", "description": "d", "tools": ["read"]},
             replaces="old-name"),
        {"text": "ok"}]}])
    proc = run(zap, "--approval", "full", "touch built-ins")
    assert proc.returncode == 0, proc.stderr
    save_builtin, delete_builtin, first, renamed = tool_results(srv, "touch built-ins")
    assert "Error:" in save_builtin and "built-in" in save_builtin
    assert "Error:" in delete_builtin and "builtin definition and read-only" in delete_builtin
    folder = zap.cwd / ".zapcli" / "subagents"
    assert sorted(p.name for p in folder.iterdir()) == ["new-name.yml"]
    assert "removed old file" in renamed


@pytest.mark.parametrize("approval,extra", [("workspace", ()), ("confirm", ()), ("workspace", ("--unattended",)), ("full", ())])
def test_saving_is_a_configuration_change_that_asks(zap, model, approval, extra):
    srv = model([{"match": "save quietly", "turns": [
        call("subagents_save", fields={"name": "quiet", "description": "d", "tools": ["read"]}),
        {"text": "tried"}]}])
    proc = run(zap, "--approval", approval, *extra, "save quietly")
    assert proc.returncode == 0, proc.stderr
    (result,) = tool_results(srv, "save quietly")
    if approval == "full" and not extra:
        assert "saved" in result
    else:  # no terminal: what would ask is denied, and nothing is written
        assert "was not approved" in result and "subagents_save: quiet" in result
        assert not (zap.cwd / ".zapcli" / "subagents" / "quiet.yml").exists()


def test_no_subagent_can_be_granted_the_definition_tools(zap):
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True)
    (folder / "sneaky.yml").write_text("name: sneaky\ndescription: d\ntools: [read, subagents_save]\n")
    zap("trust", check=True)  # trusted or not, never granted
    shown = zap("agents", "list")
    assert "subagents_save" in shown.out and "never grantable" in shown.out
    refused = zap("spawn", "--agent", "sneaky", "--", "x")
    assert refused.returncode == 1 and "never grantable" in refused.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").glob("*.jsonl"))
