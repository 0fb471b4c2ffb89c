"""Tasks for the claimers that can do them (issue 30 item 4, C45): a task may
carry a label and name the tools it needs (`board add --label impl --needs
write`); a definition declares the labels it serves (`board: {labels:
[...]}`). A claim — the next one, a named one, a waiting one, from the
built-in agent's `board` tool as from `zapcli board` — never hands a task
to a claimer that does not serve its label or lacks a tool it needs; the
claimer is told why, and the task waits for one that can.

A read-only reviewer and a coder work one board with the built-in agent
(the real runner, a scripted model): the reviewer is handed only what it
can do, is refused the implementation task and the one that needs `write`
when it names them, and gets the review once the implementation is done;
the coder never gets the review. The person serves every label.
"""

from __future__ import annotations

import json

from tests.conftest import trail_records, wait_until
from zapcli.definitions import parse_definition

REVIEWER = """name: reviewer
description: reviews changes; reads only
tools: [read, grep]
team: true
board: {labels: [review]}
"""
CODER = """name: coder
description: implements changes
tools: [read, write, edit, bash]
team: true
board:
  labels: [impl]
"""


def _define(zap, name: str, text: str) -> None:
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yml").write_text(text)
    zap("trust", check=True)  # a workspace's own definitions count once the person trusts them


def _board(zap):
    return {t["id"]: t for t in zap.json("board", "list")["tasks"]}


def _call(**args):
    return {"tool_calls": [{"name": "board", "arguments": args}]}


def _tool_answers(srv, marker: str) -> list[str]:
    """What the agent whose task holds `marker` read from its tools, in order."""
    mine = [r for r in srv.requests if marker in str(r["messages"][:2])]
    last = max(mine, key=lambda r: len(r["messages"]))
    return [m["content"] for m in last["messages"] if m["role"] == "tool"]


def _why(zap, sid: str) -> str:
    """How `sid` ended, for an assertion's message: its reason, what it said,
    its stderr and the last records of its trail."""
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    err = zap.home / "subagents" / f"{sid}.err"
    tail = [r for r in trail_records(zap.trail(sid)) if r["type"] not in ("text", "thinking")][-12:]
    return (f"{sid} {doc['status']}: {doc.get('reason')}\noutput: {zap('output', sid).out!r}\n"
            f"stderr: {err.read_text(errors='replace')[-2000:] if err.exists() else ''}\n"
            + "\n".join(json.dumps(r)[:400] for r in tail))


def test_a_claim_hands_each_task_only_to_a_claimer_that_serves_it(zap, model):
    _define(zap, "reviewer", REVIEWER)
    _define(zap, "coder", CODER)
    srv = model([
        {"match": "REVIEWER", "turns": [
            _call(action="claim"),
            _call(action="done", result="three open questions, in notes.md"),
            _call(action="claim", task="t1"),
            _call(action="claim", task="t3"),
            _call(action="claim", wait_secs=120),
            _call(action="done", result="review: looks right"),
            {"text": "reviewer finished"}]},
        {"match": "CODER", "turns": [
            _call(action="claim"),
            _call(action="done", result="parser in parse.py"),
            _call(action="claim"),
            _call(action="done", result="CHANGELOG.md updated"),
            _call(action="claim"),
            {"text": "coder finished"}]}])
    zap("board", "add", "--label", "impl", "--needs", "write", "implement the parser", check=True)
    zap("board", "add", "--label", "review", "--after", "t1", "review the parser", check=True)
    zap("board", "add", "--needs", "write", "write the changelog", check=True)
    zap("board", "add", "read the spec and list the open questions", check=True)

    reviewer = zap("spawn", "--agent", "reviewer", "--", "REVIEWER work the board",
                   check=True).out.strip()
    wait_until(lambda: _board(zap)["t4"]["state"] == "done", 60, 0.2)
    coder = zap("spawn", "--agent", "coder", "--", "CODER work the board", check=True).out.strip()
    assert zap.wait_status(coder, 120) == "completed", _why(zap, coder)
    assert zap.wait_status(reviewer, 120) == "completed", _why(zap, reviewer)

    board = _board(zap)
    assert {tid: t["done_by"].split()[0] for tid, t in board.items()} == {
        "t1": coder, "t2": reviewer, "t3": coder, "t4": reviewer}, board
    for tid, t in board.items():  # each claimed once, by the one that did it
        events = zap.json("board", "show", tid)["events"]
        assert [e["who"].split()[0] for e in events if e["what"] == "claimed"] == [
            t["done_by"].split()[0]], (tid, events)
    said = _tool_answers(srv, "REVIEWER")
    assert said[0].startswith("[Board] claimed t4"), said
    assert "t1 is labelled impl" in said[2] and "reviewer" in said[2] and "review" in said[2], said
    assert "t3 needs the tool write" in said[3] and "read, grep" in said[3], said
    assert said[4].startswith("[Board] claimed t2"), said
    coder_said = _tool_answers(srv, "CODER")
    assert coder_said[0].startswith("[Board] claimed t1") and coder_said[2].startswith(
        "[Board] claimed t3"), coder_said
    assert "claimed t2" not in coder_said[4], coder_said
    shown = zap.json("board", "show", "t1")["task"]
    assert shown["label"] == "impl" and shown["needs"] == ["write"]


def test_the_person_serves_every_label_and_needs_are_checked_when_added(zap):
    zap("board", "add", "--label", "impl", "--needs", "Write", "--needs", "BASH", "build it",
        check=True)
    task = zap.json("board", "show", "t1")["task"]
    assert task["needs"] == ["write", "bash"]  # the tools' own spelling
    assert "needs write, bash" in zap("board", "list").out
    assert json.loads(zap("board", "claim", "--json").out)["claimed"]["id"] == "t1"
    bad = zap("board", "add", "--needs", "writ", "x")
    assert bad.returncode == 2 and "writ" in bad.err and "'write'" in bad.err, bad.err
    never = zap("board", "add", "--needs", "subagent", "x")
    assert never.returncode == 2 and "subagent" in never.err, never.err
    assert len(_board(zap)) == 1


def test_board_labels_in_a_definition():
    ok, diags = parse_definition(REVIEWER, "r.yml")
    assert not diags and ok is not None and ok.board_labels == ("review",)
    assert ok.to_dict()["board"] == {"labels": ["review"]}
    for body, words in (("board: {labels: review}", "must be a list"),
                        ("board: {label: [x]}", "unknown key 'label'"),
                        ("board: [review]", "must be a mapping"),
                        ("board: {labels: [\"\"]}", "label")):
        _, diags = parse_definition(f"name: a\ndescription: b\n{body}\n", "a.yml")
        assert diags and words in diags[0].message, (body, [d.message for d in diags])
