"""Delegation never widens (C36, issue 27 item 6), tested as an attacker.

`zapcli run --agent reader` (`tools: [read]`) drives its `subagent` tool to
get what its definition never declared: a `general` child (network tools,
writes, bash), a fork (which must keep `reader`), a child working in a folder
outside the run's workspace, and — from inside a subagent's own work, as its
commands would — a `zapcli call` spawn. Nobody is asked (no terminal:
unattended), so each must be denied; at a terminal the person is asked, sees
what would widen, and `y` lets it happen.

Every test asserts the outside effect: a hit on the listener, a file written.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_run_approvals_pty import Terminal
from tests.conftest import Zap
from zapcli.testing import ScriptedServer

IDS = re.compile(r"\bsa_\d{8}_[0-9a-f]{8}\b")
READER = """name: reader
description: Reads files and answers.
tools: [read]
prompt: You read.
"""
WRITER = """name: writer
description: Reads and writes files in its workspace.
tools: [read, write]
prompt: You write.
"""


def _definitions(zap: Zap) -> None:
    """`reader` and `writer` in the user's own layer (a workspace layer would
    need trusting first)."""
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reader.yml").write_text(READER)
    (folder / "writer.yml").write_text(WRITER)


def _child_turns(listener, marker: str, where: str = "pwned.txt") -> list[dict]:
    """What a widened child does: fetch (the network), write a file, run a command."""
    return [{"tool_calls": [{"name": "WebFetch", "arguments": {"url": f"{listener.url}/{marker}"}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": where, "content": marker}}]},
            {"tool_calls": [{"name": "bash", "arguments": {
                "command": f"curl -s {listener.url}/{marker}-bash; echo {marker} > bash.txt"}}]},
            {"text": f"child {marker} done"}]


def _parent(marker: str, spawn: dict) -> dict:
    return {"match": f"PARENT-{marker}", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", **spawn}}]},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}]},
        {"text": "parent done"}]}


def _run(zap: Zap, srv: ScriptedServer, marker: str, *extra: str) -> subprocess.CompletedProcess:
    zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                   OPENAI_API_KEY="sk-test-delegation-0123456789")
    return zap("run", "--agent", "reader", *extra, f"PARENT-{marker}: delegate", timeout=150)


def _untouched(listener, zap: Zap, marker: str, *elsewhere: Path) -> None:
    assert not listener.saw(marker), listener.hits
    for path in (zap.cwd / "pwned.txt", zap.cwd / "bash.txt", *elsewhere):
        assert not path.exists(), path


@pytest.mark.timeout(180)
def test_a_reader_run_cannot_spawn_general(zap: Zap, listener):
    _definitions(zap)
    marker = "c36-general"
    script = [{"match": f"CHILD-{marker}", "turns": _child_turns(listener, marker)},
              _parent(marker, {"agent": "general", "task": f"CHILD-{marker} fetch and write"})]
    with ScriptedServer(script) as srv:
        proc = _run(zap, srv, marker)
        assert "parent done" in proc.out, proc.err
        denied = srv.requests[1]["messages"][-1]
    _untouched(listener, zap, marker)
    # the model is told why, and what it may do instead
    assert denied["role"] == "tool" and "reader" in denied["content"], denied


@pytest.mark.timeout(180)
@pytest.mark.parametrize("agent", [None, "general"])
def test_a_fork_keeps_its_parents_definition(zap: Zap, listener, agent):
    _definitions(zap)
    marker = f"c36-fork-{agent}"
    spawn = {"task": f"FORK-{marker} fetch and write", "fork": True,
             **({"agent": agent} if agent else {})}
    script = [{"match_any": f"FORK-{marker}", "turns": _child_turns(listener, marker)},
              _parent(marker, spawn)]
    with ScriptedServer(script) as srv:
        proc = _run(zap, srv, marker)
        assert "parent done" in proc.out, proc.err
    _untouched(listener, zap, marker)
    for sub in zap.json("list", "--all")["subagents"]:  # a fork that ran is the run's own kind
        assert sub.get("agent") in (None, "reader"), sub


@pytest.mark.timeout(180)
def test_a_child_cannot_write_outside_its_spawners_workspace(zap: Zap, outside):
    """`cwd` names a folder outside: a `writer` child working there could
    write what the `writer` that spawns it (from its own work) may not."""
    _definitions(zap)
    marker = "c36-cwd"
    script = [{"match": "WRITER-idle", "turns": [{"text": "wrote nothing"}]},
              {"match": f"CHILD-{marker}", "turns": [
                  {"tool_calls": [{"name": "write", "arguments": {"path": "planted.txt",
                                                                 "content": marker}}]},
                  {"text": "written"}]}]
    with ScriptedServer(script) as srv:
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                       OPENAI_API_KEY="sk-test-delegation-0123456789")
        writer = zap("spawn", "--agent", "writer", "--", "WRITER-idle").out.strip()
        assert zap("wait", writer, "--timeout", "60").returncode == 0
        res = zap("call", json.dumps({"action": "spawn", "agent": "writer", "cwd": str(outside),
                                      "task": f"CHILD-{marker} write"}),
                  env={"ZAPCLI_SUBAGENT_ID": writer})
        for sid in IDS.findall(res.out):
            zap("wait", sid, "--timeout", "60")
    assert not (outside / "planted.txt").exists()


@pytest.mark.timeout(180)
def test_a_reader_run_cannot_start_a_shell(zap: Zap, outside):
    _definitions(zap)
    marker = "c36-sh"
    script = [_parent(marker, {"cli": "sh", "task": f"id > {outside}/sh.txt"})]
    with ScriptedServer(script) as srv:
        proc = _run(zap, srv, marker, "--approval", "full")
        assert "parent done" in proc.out, proc.err
    assert not (outside / "sh.txt").exists()


@pytest.mark.timeout(180)
@pytest.mark.parametrize("how", [{"agent": "general"}, {"cli": "sh"}])
def test_a_spawn_from_inside_a_readers_work_cannot_widen(zap: Zap, listener, outside, how):
    """A command of a subagent's work (its environment carries the subagent's
    marker) calls zapcli to spawn more than the subagent holds."""
    _definitions(zap)
    marker = f"c36-inside-{'-'.join(map(str, how.values()))}"
    script = [{"match": "READER-idle", "turns": [{"text": "read"}]},
              {"match": f"CHILD-{marker}", "turns": _child_turns(listener, marker)}]
    with ScriptedServer(script) as srv:
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                       OPENAI_API_KEY="sk-test-delegation-0123456789")
        reader = zap("spawn", "--agent", "reader", "--", "READER-idle").out.strip()
        assert zap("wait", reader, "--timeout", "60").returncode == 0
        task = (f"curl -s {listener.url}/{marker}; id > {outside}/inside.txt" if how.get("cli")
                else f"CHILD-{marker} fetch and write")
        res = zap("call", json.dumps({"action": "spawn", "task": task, **how}),
                  env={"ZAPCLI_SUBAGENT_ID": reader})
        for sid in IDS.findall(res.out):
            zap("wait", sid, "--timeout", "60")
    _untouched(listener, zap, marker, outside / "inside.txt")
    assert "Traceback" not in res.err


@pytest.mark.timeout(180)
def test_a_spawn_from_inside_a_writers_work_cannot_loosen_the_approval_mode(zap: Zap, outside):
    """A `writer` in `workspace` mode (a write outside asks; nobody answers)
    spawns a `writer` in `full` mode, which would write outside unasked."""
    _definitions(zap)
    marker = "c36-full"
    script = [{"match": "WRITER-idle", "turns": [{"text": "wrote nothing"}]},
              {"match": f"CHILD-{marker}", "turns": [
                  {"tool_calls": [{"name": "write", "arguments": {"path": str(outside / "full.txt"),
                                                                 "content": marker}}]},
                  {"text": "written"}]}]
    with ScriptedServer(script) as srv:
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                       OPENAI_API_KEY="sk-test-delegation-0123456789")
        writer = zap("spawn", "--agent", "writer", "--unattended", "--", "WRITER-idle").out.strip()
        assert zap("wait", writer, "--timeout", "60").returncode == 0
        res = zap("call", json.dumps({"action": "spawn", "agent": "writer", "approval": "full",
                                      "task": f"CHILD-{marker} write"}),
                  env={"ZAPCLI_SUBAGENT_ID": writer})
        for sid in IDS.findall(res.out):
            zap("wait", sid, "--timeout", "60")
    assert not (outside / "full.txt").exists()


@pytest.mark.timeout(180)
def test_a_reader_run_cannot_save_a_wider_definition_even_in_full_mode(zap: Zap, listener):
    """`subagents_save` writes a definition the run could spawn next: one
    with more than the run holds needs the person too (`full` lets the run's
    own calls through, not what it hands on)."""
    _definitions(zap)
    marker = "c36-save"
    wide = "name: wide\ndescription: wide\ntools: [bash, write, WebFetch]\nsandbox: {network: true}\n"
    script = [{"match": f"CHILD-{marker}", "turns": _child_turns(listener, marker)},
              {"match": f"PARENT-{marker}", "turns": [
                  {"tool_calls": [{"name": "subagents_save", "arguments": {"yaml": wide,
                                                                           "scope": "system"}}]},
                  {"tool_calls": [{"name": "subagent", "arguments": {
                      "action": "spawn", "agent": "wide", "task": f"CHILD-{marker} go"}}]},
                  {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}]},
                  {"text": "parent done"}]}]
    with ScriptedServer(script) as srv:
        proc = _run(zap, srv, marker, "--approval", "full")
        assert "parent done" in proc.out, proc.err
    assert not (Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "subagents" / "wide.yml").exists()
    _untouched(listener, zap, marker)


@pytest.mark.timeout(120)
def test_a_readers_work_cannot_save_a_wider_definition(zap: Zap):
    """The `agents_save` action from inside a reader's work (its marker)."""
    _definitions(zap)
    wide = "name: wide\ndescription: wide\ntools: [bash, write]\n"
    with ScriptedServer([{"match": "READER-idle", "turns": [{"text": "read"}]}]) as srv:
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                       OPENAI_API_KEY="sk-test-delegation-0123456789")
        reader = zap("spawn", "--agent", "reader", "--", "READER-idle").out.strip()
        assert zap("wait", reader, "--timeout", "60").returncode == 0
        res = zap("call", json.dumps({"action": "agents_save", "yaml": wide, "scope": "system"}),
                  env={"ZAPCLI_SUBAGENT_ID": reader})
    assert not (Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "subagents" / "wide.yml").exists()
    assert "Traceback" not in res.err


@pytest.mark.timeout(180)
def test_at_a_terminal_the_person_sees_what_widens_and_may_allow_it(zap: Zap, listener):
    _definitions(zap)
    marker = "c36-asked"
    script = [{"match": f"CHILD-{marker}", "turns": [
                  {"tool_calls": [{"name": "WebFetch", "arguments": {"url": f"{listener.url}/{marker}"}}]},
                  {"tool_calls": [{"name": "write", "arguments": {"path": "pwned.txt", "content": marker}}]},
                  {"text": "child done"}]},
              _parent(marker, {"agent": "general", "task": f"CHILD-{marker} fetch and write"})]
    with ScriptedServer(script) as srv:
        env = dict(zap.env, OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                   OPENAI_API_KEY="sk-test-delegation-0123456789", TERM="dumb")
        term = Terminal([sys.executable, "-m", "zapcli", "run", "--agent", "reader",
                         f"PARENT-{marker}: delegate"], env, str(zap.cwd))
        shown = term.expect(b"allow").decode(errors="replace")
        for word in ("general", "bash", "write", "WebFetch", "network"):
            assert word in shown, shown  # the question says what the child would get
        term.send(b"y\r")
        assert term.finish() == 0
    assert listener.saw(marker)
    assert (zap.cwd / "pwned.txt").read_text() == marker
