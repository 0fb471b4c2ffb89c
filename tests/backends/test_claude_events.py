"""The Claude Code stream-json parser on real captured streams (fixtures made
by `python -m tests.backends.claude_harness` from claude 2.1.328) and on the
hand-made streams of CASES-2 C18.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zapcli.backends.clis.base import Record
from zapcli.backends.clis.claude_events import ClaudeEventParser

FIXTURES = Path(__file__).parent / "fixtures" / "claude"
SID = "11111111-2222-4333-8444-555555555555"


def replay(events: list[Any]) -> tuple[ClaudeEventParser, list[Record], list[bool]]:
    parser = ClaudeEventParser()
    records: list[Record] = []
    terminal_after: list[bool] = []
    for event in events:
        records += parser.feed(event)
        terminal_after.append(parser.terminal)
    return parser, records, terminal_after


def fixture(name: str) -> list[Any]:
    lines = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(ln) for ln in lines if ln.strip()]


def of(records: list[Record], rtype: str) -> list[dict[str, Any]]:
    return [f for t, f in records if t == rtype]


def test_tool_turn_gives_paired_call_and_result_one_usage_and_the_report() -> None:
    parser, records, _ = replay(fixture("tool_turn"))
    assert parser.version == "2.1.328" and parser.session_id and parser.terminal
    assert [t for t, _ in records if t != "diagnostic"] == [
        "thinking", "text", "tool_call", "tool_result", "text", "usage"]
    call, result = of(records, "tool_call")[0], of(records, "tool_result")[0]
    assert call["name"] == "Bash" and call["arguments"]["command"] == "echo hi-from-bash"
    assert result == {"call_id": call["call_id"], "ok": True, "content": "hi-from-bash"}
    (usage,) = of(records, "usage")
    assert usage["input_tokens"] > 1000 and usage["output_tokens"] > 1 and usage["cost_usd"] > 0
    outcome = parser.finish(0, "")
    assert (outcome.status, outcome.report) == ("completed", "All done: hi-from-bash")


def test_api_error_is_failed_with_the_message_whatever_the_subtype() -> None:
    events = fixture("api_error")
    assert events[-2]["subtype"] == "success" and events[-2]["is_error"] is True
    parser, records, _ = replay(events)
    outcome = parser.finish(1, "")
    assert outcome.status == "failed" and "400 scripted bad request" in (outcome.reason or "")
    assert any(f["name"] == "api_error" for f in of(records, "diagnostic"))
    assert not of(records, "text")  # the synthetic error message is not model text


def test_background_bash_is_terminal_only_after_the_follow_up_turn() -> None:
    events = fixture("background_bash")
    parser, records, terminal = replay(events)
    results = [i for i, e in enumerate(events) if e.get("type") == "result"]
    assert len(results) == 2  # the notification started a second turn
    assert terminal[results[0]] is False and terminal[-1] is True
    assert parser.finish(0, "").report == "Background finished: bgdone"
    usages = of(records, "usage")
    assert len(usages) == 2  # one per result, and together the session total
    total = events[results[1]]["modelUsage"]
    (model,) = total
    assert sum(u["output_tokens"] for u in usages) == total[model]["outputTokens"]


def test_nested_agent_records_keep_their_parent_call_id() -> None:
    parser, records, _ = replay(fixture("nested_agent"))
    (agent_call,) = [c for c in of(records, "tool_call") if c["name"] == "Agent"]
    nested = [f for t, f in records if f.get("parent_call_id") == agent_call["call_id"]]
    kinds = [t for t, f in records if f.get("parent_call_id") == agent_call["call_id"]]
    assert kinds == ["text", "tool_call", "tool_result", "text"]
    assert nested[1]["call_id"] == nested[2]["call_id"] and nested[2]["content"] == "from-sub"
    assert "parent_call_id" not in agent_call
    outcome = parser.finish(0, "")
    assert (outcome.status, outcome.report) == ("completed", "Main done: from-sub")


# -- CASES-2 C18: the stand-in's streams ---------------------------------------

def c18(mode: str) -> list[Any]:
    text = "The suite is running in the background; I will be told when it finishes."
    events: list[Any] = [
        {"type": "system", "subtype": "init", "session_id": SID, "model": "stand-in",
         "tools": ["Bash"]},
        {"type": "system", "subtype": "task_started", "task_id": "bg7",
         "description": "full test suite", "task_type": "local_bash", "session_id": SID},
        {"type": "assistant", "session_id": SID, "parent_tool_use_id": None,
         "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                     "usage": {"input_tokens": 900, "output_tokens": 30}}}]
    if mode == "done":
        events.append({"type": "system", "subtype": "task_notification", "task_id": "bg7",
                       "status": "completed", "summary": "412 passed", "session_id": SID})
    events.append({"type": "result", "subtype": "success", "is_error": False,
                   "session_id": SID, "num_turns": 1, "result": text, "total_cost_usd": 0.004,
                   "usage": {"input_tokens": 900, "output_tokens": 30}})
    return events


def test_c18_pending_background_task_is_failed_naming_it_with_report_and_usage() -> None:
    parser, records, _ = replay(c18("pending"))
    assert parser.terminal is False  # the CLI's exit decides, not the result
    outcome = parser.finish(0, "")
    assert outcome.status == "failed"
    assert "1 background task still open" in (outcome.reason or "")
    assert "bg7: full test suite" in (outcome.reason or "")
    assert outcome.report and outcome.report.startswith("The suite is running")
    assert of(records, "usage") == [{"model": "stand-in", "input_tokens": 900,
                                     "output_tokens": 30, "cached_tokens": 0,
                                     "cost_usd": 0.004}]


def test_c18_ceiling_in_stderr_is_failed_naming_the_ceiling() -> None:
    parser, _, _ = replay(c18("ceiling"))
    outcome = parser.finish(0, "Background tasks still running after 600s; terminating.\n")
    assert outcome.status == "failed" and "ceiling" in (outcome.reason or "")
    assert "still running after 600s" in (outcome.reason or "")


def test_c18_done_is_completed_and_usage_settled_once() -> None:
    parser, records, terminal = replay(c18("done"))
    assert terminal[-1] is True
    assert parser.finish(0, "").status == "completed"
    assert len(of(records, "usage")) == 1


def test_no_result_is_failed_with_the_last_stderr_lines() -> None:
    parser, _, _ = replay([{"type": "system", "subtype": "init", "session_id": SID}])
    stderr = "".join(f"noise {i}\n" for i in range(30)) + "Error: Invalid API key\n"
    outcome = parser.finish(1, stderr)
    assert outcome.status == "failed" and "without a result" in (outcome.reason or "")
    assert "Invalid API key" in (outcome.reason or "") and "noise 5\n" not in (outcome.reason or "")


def test_denials_become_one_diagnostic_each() -> None:
    denied = {"type": "system", "subtype": "permission_denied", "tool_name": "Bash",
              "tool_use_id": "t1", "message": "needs approval"}
    result = {"type": "result", "subtype": "success", "is_error": False, "result": "ok",
              "permission_denials": [{"tool_name": "Bash", "tool_use_id": "t1"},
                                     {"tool_name": "Write", "tool_use_id": "t2"}]}
    _, records, _ = replay([denied, result])
    diags = [d for d in of(records, "diagnostic") if d["dimension"] == "approval"]
    assert [d["name"] for d in diags] == ["Bash", "Write"]
    assert "needs approval" in diags[0]["message"]


def test_odd_values_do_not_stop_the_parser() -> None:
    parser, records, _ = replay([[1, 2], "text", None, {"type": "unknown"},
                                 {"type": "assistant", "message": {"content": "not a list"}},
                                 {"type": "result", "is_error": False, "result": "fine"}])
    assert len(of(records, "diagnostic")) == 3
    assert parser.finish(0, "").status == "completed"
