"""`zapcli continue` of an agent-CLI subagent (docs/explanation/rules.md#agent-clis, docs/explanation/rules.md#parallel-coding): the real pinned
claude against the scripted Anthropic server, in a real git repository. What
carries over for the built-in agent carries over for a CLI too: the tree
(the resumed CLI works in it, never in the checkout), the approval mode,
the output schema, the on-finish command and the token limit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.backends import clitest as ct
from tests.conftest import wait_until
from zapcli.testing.server import ScriptedServer

SCHEMA = {"type": "object", "properties": {"where": {"type": "string"}}, "required": ["where"]}
# Each run (the first, then the continuation) writes where it runs and
# answers through claude's structured-output tool, which ends claude's turn.
NOTE = {"text": "Noting where I am.", "tool_calls": [{"name": "Bash", "arguments": {
    "command": "pwd >> where.txt", "description": "note the directory"}}]}
ANSWER = {"tool_calls": [{"name": "StructuredOutput", "arguments": {"where": "noted"}}]}
SCRIPT = [{"match": "CLAUDE-TREE", "turns": [NOTE, ANSWER, NOTE, ANSWER]}]


@pytest.fixture
def claude_server():
    with ScriptedServer(SCRIPT, protocol="anthropic") as srv:
        yield srv


def _spawned(zap, sid: str) -> dict:
    return ct.records(zap, sid, "spawn")[0]


def test_claude_continued_in_its_tree_with_schema_hook_and_limit(zap, repo, claude_server,
                                                                 tmp_path: Path):
    ct.configure(zap, "claude")
    env = ct.cli_env("claude", claude_server, tmp_path / "home")
    schema = tmp_path / "where.schema.json"
    schema.write_text(json.dumps(SCHEMA))
    finished = tmp_path / "finished.txt"
    hook = f'echo "$ZAPCLI_ID $ZAPCLI_STATUS $ZAPCLI_WORKTREE" >> {finished}'
    old = ct.spawn(zap, "claude", "CLAUDE-TREE note it", env, "--worktree", "--approval", "full",
                   "--output-schema", str(schema), "--on-finish", hook,
                   "--max-tokens", "5000000")
    assert zap("wait", old, "--timeout", "120").returncode == 0, ct.dump(zap, old)
    old_tree = zap.json("poll", "--no-wait", old)["subagents"][0]["worktree"]
    tree = Path(old_tree["path"])
    assert old_tree["branch"] == f"zapcli/{old}" and tree.is_dir()
    assert (tree / "where.txt").read_text().split() == [os.path.realpath(tree)]
    wait_until(lambda: old in finished.read_text() if finished.exists() else None, 30, 0.1)

    proc = zap("continue", old, "and once more", env=env)
    assert proc.returncode == 0, proc.err
    new = proc.out.strip()
    assert zap("wait", new, "--timeout", "120").returncode == 0, ct.dump(zap, new)

    # the same tree, carried (reused, not made anew)
    doc = zap.json("poll", "--no-wait", new)["subagents"][0]
    assert doc["continue_of"] == old and doc["status"] == "completed", doc
    tree_doc = doc["worktree"] or {}
    assert (tree_doc.get("path"), tree_doc.get("branch")) == (str(tree), f"zapcli/{old}"), doc
    assert tree_doc.get("carried") is True, doc
    made = ct.records(zap, new, "worktree")
    assert made and made[0]["ok"] and made[0]["how"] == "reused", made
    # the resumed CLI ran in the tree, not in the checkout
    assert (tree / "where.txt").read_text().split() == [os.path.realpath(tree)] * 2
    assert not (repo / "where.txt").exists()
    assert ct.records(zap, new, "session")[-1]["session_id"] == \
        ct.records(zap, old, "session")[-1]["session_id"]
    # the output schema, the on-finish command and the token limit carried over
    spawned = _spawned(zap, new)
    assert spawned.get("output_schema") == SCHEMA
    assert doc["structured"] == {"where": "noted"}, doc
    assert spawned.get("on_finish") == hook and spawned.get("max_tokens") == 5000000
    assert spawned.get("approval") == "full"
    wait_until(lambda: new in finished.read_text(), 30, 0.1)
    line = next(x for x in finished.read_text().splitlines() if x.startswith(new))
    assert line == f"{new} completed {tree}", line
