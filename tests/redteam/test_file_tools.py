"""Every path an agent names resolves beneath its root (issue 27 item 3,
C33, C35), tested as an attacker would through the real tools:

- C33: `read`, `glob`, `grep`, `kb_search` and `use_skill` run in the runner,
  outside the sandbox; they must see no more than a sandboxed command does —
  nothing of zapcli's state folder (the MCP server's token, another
  session's queued `.env`) or config folder, by name or through a link.
- C35: an approved background command swaps a folder and a link to a folder
  outside with renameat2(RENAME_EXCHANGE) while the model writes 96 files
  into the folder; `memory_write` into a memory folder the repository ships
  as a link. Nothing may land outside.

Each asserts the outside effect: a secret in a model request or a trail, a
file in OUT. Real bwrap, real processes, as root and as another local user.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import trail_records
from tests.redteam.actors import Actor
from tests.redteam.harness import ROOT, SETPRIV, Keys
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing import ScriptedServer

pytestmark = needs_bwrap


@pytest.fixture(params=["root", "another user"])
def attacker(request, zap, other_user):
    def make(keys: Keys, base_url: str) -> Actor:
        env = {"OPENAI_BASE_URL": base_url, "ZAPCLI_MODEL": "scripted",
               "OPENAI_API_KEY": keys.model, "MY_TOKEN": keys.token}
        if request.param == "root":
            return Actor.root(zap, **env)
        if not (ROOT and SETPRIV):
            pytest.skip("playing another user needs root and setpriv")
        return Actor.user(other_user(keys, base_url))
    return make


# ----------------------------------------------------------------- C33


def _snoop_script() -> list[dict]:
    """Links in the workspace into the hidden folders (bash: a sandboxed
    command may make a link, its target is only text), then every file tool
    on the hidden folders by name and through the links."""
    links = ("ln -s {STATE}/mcp/http-4242.token tok; ln -s {STATE}/subagents subs; "
             "ln -s {CONFIG} conf; "
             "ln -sf {STATE}/mcp/http-4242.token docs/notes.md; "
             "ln -sf {STATE}/mcp/http-4242.token .agents/skills/helper/SKILL.md; echo linked")
    snoop = [("glob", {"pattern": "*.token", "path": "{STATE}/mcp"}),
             ("glob", {"pattern": "**/*.env", "path": "{STATE}"}),
             ("glob", {"pattern": "subs/*.env"}),
             ("read", {"path": "{STATE}/mcp/http-4242.token"}),
             ("read", {"path": "{STATE}/subagents/sa_0ther000.env"}),
             ("read", {"path": "{CONFIG}/secrets.yaml"}),
             ("read", {"path": "tok"}),
             ("read", {"path": "subs/sa_0ther000.env"}),
             ("read", {"path": "conf/secrets.yaml"}),
             ("grep", {"pattern": "zaptest", "path": "{STATE}"}),
             ("grep", {"pattern": "zaptest", "path": "{CONFIG}"}),
             ("grep", {"pattern": "zaptest"}),
             ("grep", {"pattern": "zaptest", "path": "subs"}),
             ("kb_search", {"query": "zaptest canary"}),
             ("use_skill", {"name": "helper"})]
    calls = [{"name": n, "arguments": a} for n, a in snoop]
    return [{"match": "look around", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": links}}]},
        {"tool_calls": calls}, {"text": "looked"}]}]


def test_file_tools_see_nothing_the_sandbox_hides(attacker):
    keys = Keys()
    token, queued, config = (keys.canary.replace("canary", w) for w in ("token", "queued", "config"))
    with ScriptedServer(_snoop_script()) as srv:
        actor = attacker(keys, srv.base_url)
        srv.variables.update(STATE=str(actor.home), CONFIG=str(actor.config))
        for folder in (actor.home / "mcp", actor.home / "subagents", actor.config / "subagents",
                       actor.work / ".agents" / "skills" / "helper", actor.work / "docs"):
            folder.mkdir(parents=True, exist_ok=True)
        (actor.home / "mcp" / "http-4242.token").write_text(token + "\n")
        (actor.home / "subagents" / "sa_0ther000.env").write_text(f"OTHER_KEY={queued}\n")
        (actor.config / "secrets.yaml").write_text(f"key: {config}\n")
        (actor.config / "subagents" / "snoop.yml").write_text(
            "name: snoop\ndescription: looks around\n"
            "tools: [bash, read, glob, grep]\nskills: [helper]\n"
            "knowledge: [{name: docs, path: docs}]\n")
        (actor.work / ".agents" / "skills" / "helper" / "SKILL.md").write_text(
            "---\nname: helper\ndescription: helps\n---\nbe helpful\n")
        (actor.work / "docs" / "notes.md").write_text("zaptest notes, harmless\n")
        actor.own(actor.home, actor.config, actor.work / ".agents", actor.work / "docs")
        sid = actor.spawn("--agent", "snoop", "--approval", "full", "look around")
        assert actor.wait(sid) == "completed", actor("output", sid).out
        seen = json.dumps(srv.requests)
        results = [str(m.get("content")) for m in srv.requests[-1]["messages"]
                   if m.get("role") == "tool"]
    assert len(results) == 16, results  # the links, then every snooping call got its answer
    trails = "".join(p.read_text(errors="replace") for p in actor.home.glob("subagents/*.jsonl"))
    for secret, where in ((token, "the MCP server's token"), (queued, "a queued .env"),
                          (config, "the config folder")):
        assert secret not in seen, f"{actor.name}: {where} reached the model"
        assert secret not in trails, f"{actor.name}: {where} was stored in a trail"
    globs = results[1:4]
    assert not any("http-4242.token" in g or "sa_0ther000.env" in g for g in globs), \
        f"{actor.name}: glob listed a hidden folder: {globs}"


# ----------------------------------------------------------------- C35

SWAP = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
end = time.monotonic() + 90
for _ in range(2000):
    libc.renameat2(AT_FDCWD, b"d", AT_FDCWD, b"l", RENAME_EXCHANGE)
open("swapping", "w").close()  # the writes wait for this: on a loaded machine the start is slow
while time.monotonic() < end:
    libc.renameat2(AT_FDCWD, b"d", AT_FDCWD, b"l", RENAME_EXCHANGE)
"""
UNTIL_SWAPPING = "for i in $(seq 900); do [ -e swapping ] && exit 0; sleep 0.1; done; exit 1"


WRITES = 96  # a write meets the link at its decision only now and then: 24 missed it in 1 run of ~6


def test_a_swapped_link_never_takes_a_write_outside(attacker):
    """C35: WRITES writes into `d/` while an approved background command swaps
    `d` with a link to OUT; the person says no to every write that asks."""
    keys = Keys()
    writes = [{"name": "write", "arguments": {"path": f"d/f{i:02}.txt", "content": f"{i}\n"}}
              for i in range(WRITES)]
    script = [{"match": "race", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "swap.py", "content": SWAP}}]},
        {"tool_calls": [{"name": "bash", "arguments": {
            "command": "{PYTHON} swap.py", "background": True}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": UNTIL_SWAPPING}}]},
        *({"tool_calls": [w]} for w in writes),
        {"text": "raced"}]}]
    with ScriptedServer(script) as srv:
        actor = attacker(keys, srv.base_url)
        out = actor.outside()
        srv.variables.update(PYTHON=actor.python)
        (actor.work / "d").mkdir()
        os.symlink(out, actor.work / "l")
        actor.own(actor.work / "d", actor.work / "l")
        sid = actor.spawn("--approval", "workspace", "race the writes")
        answering = actor.approve_while(sid)
        try:
            actor.wait(sid, 300)
        finally:
            answering.set()
        asked = [r for r in trail_records(actor.trail(sid))
                 if r.get("type") == "approval_request" and r.get("tool") == "write"]
    landed = sorted(os.listdir(out))
    assert not landed, f"{actor.name}: {len(landed)} of {WRITES} writes landed outside: {landed}"
    assert asked, "the swap never showed the link to a write decision: the race did not run"


def test_memory_write_never_follows_a_shipped_link(attacker):
    """C35: the repository ships `.zapcli/agent-memory` as a link to OUT."""
    keys = Keys()
    script = [{"match": "remember", "turns": [
        {"tool_calls": [{"name": "memory_write", "arguments": {"text": "noted"}}]},
        {"tool_calls": [{"name": "memory_write", "arguments": {"text": "daily", "daily": True}}]},
        {"tool_calls": [{"name": "memory_write", "arguments": {"text": "all", "replace": True}}]},
        {"text": "remembered"}]}]
    with ScriptedServer(script) as srv:
        actor = attacker(keys, srv.base_url)
        out = actor.outside()
        (actor.work / ".zapcli").mkdir()
        os.symlink(out, actor.work / ".zapcli" / "agent-memory")
        (actor.config / "subagents").mkdir(parents=True, exist_ok=True)
        (actor.config / "subagents" / "keeper.yml").write_text(
            "name: keeper\ndescription: remembers\ntools: [read]\nmemory: private\n")
        actor.own(actor.work / ".zapcli", actor.config)
        sid = actor.spawn("--agent", "keeper", "remember this")
        actor.wait(sid)
    landed = [str(p.relative_to(out)) for p in out.rglob("*")]
    assert not landed, f"{actor.name}: memory_write wrote outside: {landed}"


def test_memory_still_works_where_zapcli_had_no_folder(zap, model):
    """The memory folder is written by design, with the sandbox up, when
    `.zapcli/` did not exist before: the placeholder zapcli made for it then
    holds the memory, and a sandboxed command reads it."""
    actor = Actor.root(zap)
    (actor.config / "subagents").mkdir(parents=True, exist_ok=True)
    (actor.config / "subagents" / "keeper.yml").write_text(
        "name: keeper\ndescription: remembers\ntools: [read, bash]\nmemory: private\n")
    model([{"match": "remember", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "ls -a"}}]},
        {"tool_calls": [{"name": "memory_write", "arguments": {"text": "the answer is 42"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {
            "command": "cat .zapcli/agent-memory/keeper/MEMORY.md"}}]},
        {"text": "remembered"}]}])
    sid = actor.spawn("--agent", "keeper", "--approval", "workspace", "remember this")
    answering = actor.approve_while(sid)
    try:
        assert actor.wait(sid) == "completed", actor("output", sid).out
    finally:
        answering.set()
    memory = zap.cwd / ".zapcli" / "agent-memory" / "keeper" / "MEMORY.md"
    assert memory.read_text() == "the answer is 42\n"
    results = [json.dumps(r) for r in trail_records(actor.trail(sid)) if r.get("type") == "tool_result"]
    assert "the answer is 42" in results[-1], results
