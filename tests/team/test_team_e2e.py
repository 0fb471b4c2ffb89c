"""A team, end to end, offline (#22 item 5): the person's session puts six
tasks on its board (two of them waiting on others), and three workers of
one `worker` definition (`team: true`) work it — the built-in agent, Claude
Code and Codex, each the real program against its scripted server, the CLIs
reaching the board through zapcli's team MCP server in their private config
(approved in the default approval mode). The built-in worker finishes a
task, claims another and is SIGKILLed mid-task, runner and all; the board's
own look at its holder finds it `lost` and gives the task back, and another
worker takes it. The board ends with six tasks done, none done twice, each
result from the worker that claimed it.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.backends import clitest as ct
from tests.conftest import trail_records, wait_until
from zapcli.testing.server import ScriptedServer

pytestmark = pytest.mark.xdist_group("agent-clis")

WORKER = """name: worker
description: works the session's task board
team: true
tools: []
maxTurns: 40
prompt: |
  You are one worker of a team: claim a task from the board, do it, mark it done.
"""
WAIT = 120  # seconds a named claim waits for its task to be free (a holder gone, --after done)


def _worker(call: dict, who: str, tasks: list[str]) -> list[dict]:
    """The scripted turns of a CLI worker whose board tool is `call` ({name[,
    namespace]}): claim each of `tasks` by name (waiting while another holds
    it or its --after tasks are open), mark it done, then a closing text.
    Named claims make who does what independent of which CLI starts first."""
    turns = []
    for i, task in enumerate(tasks):
        turns.append({"tool_calls": [{**call, "arguments": {"action": "claim", "task": task,
                                                            "wait_secs": WAIT}}]})
        turns.append({"tool_calls": [{**call, "arguments": {"action": "done",
                                                            "result": f"{who} result {i}"}}]})
    return turns + [{"text": f"{who}: my part of the board is done."}]


def _scripts() -> dict[str, list[dict]]:
    board = {"name": "board"}
    return {
        "chat": [{"match": "TEAM-BUILTIN", "turns": [
            {"tool_calls": [{**board, "arguments": {"action": "claim", "wait_secs": 30}}]},
            {"tool_calls": [{**board, "arguments": {"action": "done", "result": "builtin result 0"}}]},
            {"tool_calls": [{**board, "arguments": {"action": "claim", "wait_secs": 30}}]},
            {"delay_s": 300, "text": "never: SIGKILLed while it holds its second task"}]}],
        # claude takes t3, then the killed worker's t2 once the board has given it back
        "anthropic": [{"match": "TEAM-CLAUDE", "turns": _worker(
            {"name": "mcp__zapcli_team__board"}, "claude", ["t3", "t2"])}],
        # codex takes t4, t5 (after t1) and t6 (after t2 and t4: it waits for claude's t2)
        "responses": [{"match": "TEAM-CODEX", "turns": _worker(
            {"name": "board", "namespace": "mcp__zapcli_team"}, "codex", ["t4", "t5", "t6"])}],
    }


@pytest.fixture
def team(zap, tmp_path):
    servers = {p: ScriptedServer(s, protocol=p) for p, s in _scripts().items()}
    for srv in servers.values():
        srv.start()
    ct.configure(zap, "claude", "codex", extra=(
        f"providers:\n  local: {{base_url: \"{servers['chat'].base_url}\"}}\n"))
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True)
    (folder / "worker.yml").write_text(WORKER)
    zap("trust", check=True)
    yield servers
    for srv in servers.values():
        srv.stop()


def _board(zap):
    return {t["id"]: t for t in zap.json("board", "list")["tasks"]}


def test_three_workers_on_three_backends_finish_the_board_one_killed_mid_task(zap, team, tmp_path):
    for text in ("parse", "lex", "type-check", "emit"):
        zap("board", "add", f"write the {text} stage", check=True)
    zap("board", "add", "--after", "t1", "test the parser", check=True)
    zap("board", "add", "--after", "t2", "--after", "t4", "test the lexer and emitter", check=True)

    env = {"OPENAI_API_KEY": "sk-scripted-0123456789"}
    builtin = _spawn_builtin(zap, env)

    def second_claim():
        board = _board(zap).values()
        held = [t for t in board if t["holder"] == builtin and t["state"] == "claimed"]
        return held if held and any(t["state"] == "done" for t in board) else None

    held = wait_until(second_claim, 90, 0.2)[0]  # type: ignore[index]
    assert held["id"] == "t2"  # t1 done; t2 the next open one
    claude = ct.spawn(zap, "claude", "TEAM-CLAUDE work the board", ct.cli_env(
        "claude", team["anthropic"], tmp_path / "h1"), "--agent", "worker")
    codex = ct.spawn(zap, "codex", "TEAM-CODEX work the board", ct.cli_env(
        "codex", team["responses"], tmp_path / "h2"), "--agent", "worker")
    runner = next(r for r in trail_records(zap.trail(builtin)) if r["type"] == "process")["pid"]
    os.killpg(runner, signal.SIGKILL)  # mid-task: it holds `held` and waits on its model

    for sid in (claude, codex):
        assert zap("wait", sid, "--timeout", "240").returncode == 0, ct.dump(zap, sid)
    assert zap.status(builtin) == "lost"
    board = _board(zap)
    assert [t["state"] for t in board.values()] == ["done"] * 6, board
    for tid in board:  # none done twice
        events = [e["what"] for e in zap.json("board", "show", tid)["events"]]
        assert events.count("done") == 1, (tid, events)
    # the killed worker's task went back, with a note, and another worker did it
    shown = zap.json("board", "show", held["id"])
    released = [e for e in shown["events"] if e["what"] == "released"]
    assert len(released) == 1 and f"{builtin} (worker, zapcli) held it and ended lost" in released[0]["note"], (held, shown, board)
    done_by = {tid: t["done_by"].split()[0] for tid, t in board.items()}
    assert done_by == {"t1": builtin, "t2": claude, "t3": claude, "t4": codex, "t5": codex,
                       "t6": codex}, (board, ct.dump(zap, claude), ct.dump(zap, codex))
    for t in board.values():  # each result is its finisher's own
        who = {builtin: "builtin", claude: "claude", codex: "codex"}[t["done_by"].split()[0]]
        assert t["result"].startswith(f"{who} result"), t
    # the CLIs reached the board as MCP tools, and nothing else of zapcli
    names = {r["name"] for sid in (claude, codex) for r in trail_records(zap.trail(sid))
             if r["type"] == "tool_call"}
    assert names <= {"mcp__zapcli_team__board"}, names


def _spawn_builtin(zap, env):
    proc = zap("spawn", "--agent", "worker", "--model", "local/scripted", "--",
               "TEAM-BUILTIN work the board", env=env)
    assert proc.returncode == 0, proc.err
    return proc.out.strip()
