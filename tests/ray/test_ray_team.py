"""A team on a Ray cluster (new user, round 6): a session's board and
messages are in the state folder of the machine that spawned its subagents,
and a runner on a node has only the node's. Before, a `team: true` worker
sent there was answered from the node's own, empty board ("nothing left to
claim: the board has no tasks" while the session had tasks), and a task a
remote shell added with `zapcli board add` went to the node's board, never
seen by the session. Now the spawn is refused, nothing created, and a call
from a node is refused saying why — nothing is answered from a board that
is not the session's."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import Zap
from tests.ray.helpers import remote

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]'")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(240)]


def _trails(zap: Zap) -> list[str]:
    folder = zap.home / "subagents"
    return sorted(p.name for p in folder.glob("*.jsonl")) if folder.exists() else []


def test_a_team_definition_is_not_sent_where_its_board_is_not(zap: Zap, shared_cluster, model) -> None:
    model([{"match": "work the board", "turns": [
        {"tool_calls": [{"name": "board", "arguments": {"action": "claim"}}]},
        {"tool_calls": [{"name": "board", "arguments": {"action": "done", "result": "did it"}}]},
        {"text": "done"}]}])
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True)
    (folder / "worker.yml").write_text("name: worker\ndescription: Works the board.\n"
                                       "tools: [read]\nteam: true\n")
    zap("trust", check=True)
    zap("board", "add", "the one task", check=True)
    zap = remote(zap, shared_cluster)
    res = zap("spawn", "--agent", "worker", "work the board")
    assert res.returncode == 2, (res.returncode, res.out, res.err)
    assert _trails(zap) == []  # nothing was created
    assert "--executor local" in res.err and "Traceback" not in res.err
    # The same definition where its board is works the session's task.
    sid = zap("spawn", "--executor", "local", "--agent", "worker", "work the board", check=True).out.strip()
    assert zap.wait_status(sid, 60) == "completed"
    (task,) = zap.json("board", "list")["tasks"]
    assert (task["state"], task["holder"], task["result"]) == ("done", sid, "did it")


def test_a_board_call_from_a_node_never_lands_on_the_nodes_own_board(zap: Zap, shared_cluster) -> None:
    zap = remote(zap, shared_cluster)
    me = f"{sys.executable} -m zapcli"
    sid = zap.spawn_sh(f'{me} board add "added on the node" 2>&1; echo "exit $?"')
    zap.wait_status(sid, 90)
    out = zap("output", sid).out
    added = [t["text"] for t in zap.json("board", "list")["tasks"]]
    # Either the session's board has it, or the node's call failed: never
    # "t1" printed by a board nobody in the session reads.
    assert "added on the node" in added or ("exit 0" not in out and "other machine" in out), out
