"""run_loop end to end over real HTTP: ChatClient → scripted server, with small
real tools. Asserts on the records emitted and on what the model received."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

import pytest

from zapcli.agent.loop import LoopResult as Outcome
from zapcli.agent.loop import run_loop
from zapcli.agent.types import Hooks, Limits, Muster, ToolContext, ToolResult, ToolSpec
from zapcli.providers.openai_chat import ChatClient
from zapcli.testing import ScriptedServer

OBJ = {"type": "object", "properties": {"path": {"type": "string"}}}


class ReadTool:
    spec = ToolSpec("read", "Read a text file.", OBJ)

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls.append(args)
        path = Path(ctx.workspace, args["path"])
        if not path.exists():
            return ToolResult(False, f"{args['path']}: no such file")
        return ToolResult(True, path.read_text(encoding="utf-8"))


class BoomTool:
    spec = ToolSpec("boom", "Always raises.", {"type": "object", "properties": {}})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise RuntimeError("kaboom")


class SubagentTool:
    """Meets its siblings at a barrier: only passes when run concurrently."""

    spec = ToolSpec("subagent", "Delegate.", {"type": "object", "properties": {}})

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=5)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.barrier.wait()
        return ToolResult(True, f"spawned {args.get('task')}")


class Recorder:
    def __init__(self) -> None:
        self.records: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, fields: dict[str, Any]) -> None:
        self.records.append((kind, fields))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for k, f in self.records if k == kind]

    def kinds(self) -> list[str]:
        return [k for k, _ in self.records if k not in ("text", "thinking")]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def run(script: Any, tmp_path: Path, tools: list[Any], **kw: Any
        ) -> tuple[Outcome, Recorder, list[dict[str, Any]]]:
    sink = Recorder()
    with ScriptedServer(script) as srv:
        client = ChatClient("scripted", base_url=srv.base_url, api_key="k", max_retries=2)
        task = kw.pop("task", "do it")
        limits = Limits(**{k: kw.pop(k) for k in ("max_turns", "max_tokens", "should_stop") if k in kw})
        outcome = run_loop(system_prompt="You are a test agent.", task=task,
                           client=client, tools=tools, sink=sink,
                           ctx=ToolContext(workspace=str(tmp_path), cwd=str(tmp_path)),
                           limits=limits, hooks=Hooks(**kw))
        requests = srv.requests
    return outcome, sink, requests


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_tool_round_trip(tmp_path):
    (tmp_path / "a.txt").write_text("alpha contents", encoding="utf-8")
    script = [{"turns": [call("read", path="a.txt"), {"text": "The file says alpha."}]}]
    read = ReadTool()
    outcome, sink, requests = run(script, tmp_path, [read])
    assert outcome == Outcome("completed", None, "The file says alpha.")
    assert read.calls == [{"path": "a.txt"}]
    assert sink.kinds() == ["usage", "tool_call", "tool_result", "usage", "report"]
    assert sink.of("tool_call")[0]["arguments"] == {"path": "a.txt"}
    result = sink.of("tool_result")[0]
    assert result["ok"] is True and result["content"] == "alpha contents"
    assert result["call_id"] == sink.of("tool_call")[0]["call_id"]
    assert isinstance(result["duration_ms"], int)
    assert tool_messages(requests[1]) == ["alpha contents"]
    assistant = requests[1]["messages"][2]
    assert assistant["tool_calls"][0]["id"] == result["call_id"]
    assert sink.of("report") == [{"text": "The file says alpha."}]
    assert "".join(f["delta"] for f in sink.of("text")) == "The file says alpha."


def test_model_receives_exactly_the_granted_tools(tmp_path):
    tools = [ReadTool(), BoomTool()]
    _, _, requests = run([{"turns": [{"text": "ok"}]}], tmp_path, tools)
    assert requests[0]["tools"] == [t.spec.to_openai() for t in tools]
    assert requests[0]["messages"] == [{"role": "system", "content": "You are a test agent."},
                                       {"role": "user", "content": "do it"}]


def test_tool_error_goes_back_to_the_model(tmp_path):
    script = [{"turns": [call("read", path="missing.txt"), {"text": "no file"}]}]
    outcome, sink, requests = run(script, tmp_path, [ReadTool()])
    assert outcome.status == "completed"
    assert sink.of("tool_result")[0]["ok"] is False
    assert tool_messages(requests[1]) == ["Error: missing.txt: no such file"]


def test_tool_exception_becomes_an_error_result(tmp_path):
    script = [{"turns": [call("boom"), {"text": "survived"}]}]
    outcome, sink, requests = run(script, tmp_path, [BoomTool()])
    assert outcome.report == "survived"
    assert "RuntimeError: kaboom" in sink.of("tool_result")[0]["content"]
    assert "kaboom" in tool_messages(requests[1])[0]


def test_tool_not_granted_is_refused_never_run(tmp_path):
    script = [{"turns": [call("bash", command="rm -rf /"), {"text": "ok"}]}]
    read = ReadTool()
    outcome, sink, requests = run(script, tmp_path, [read])
    assert outcome.status == "completed" and read.calls == []
    content = sink.of("tool_result")[0]["content"]
    assert content.startswith("`bash` is not available to this subagent") and "read" in content


def test_tool_names_match_case_insensitively(tmp_path):
    (tmp_path / "b.txt").write_text("beta", encoding="utf-8")
    script = [{"turns": [call("READ", path="b.txt"), {"text": "ok"}]}]
    _, sink, _ = run(script, tmp_path, [ReadTool()])
    assert sink.of("tool_call")[0]["name"] == "read"
    assert sink.of("tool_result")[0]["content"] == "beta"


def test_malformed_arguments_go_back_as_a_tool_error(tmp_path):
    script = [{"turns": [{"tool_calls": [{"name": "read", "arguments": '{"path": "a'}]},
                         {"text": "fixed"}]}]
    read = ReadTool()
    outcome, sink, requests = run(script, tmp_path, [read])
    assert outcome.status == "completed" and read.calls == []
    assert "not valid JSON" in sink.of("tool_result")[0]["content"]
    assert sink.of("tool_call")[0]["arguments"] == '{"path": "a'
    assert requests[1]["messages"][2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert "not valid JSON" in tool_messages(requests[1])[0]



class StrictTool:
    """A capability-style tool (not a BaseTool): relies on the loop for its schema."""

    spec = ToolSpec("strict", "Strict schema.", {
        "type": "object", "additionalProperties": False, "required": ["ids"],
        "properties": {"ids": {"type": "array", "items": {"type": "string"}},
                       "wait_secs": {"type": "integer", "minimum": 1, "maximum": 30}}})

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls.append(args)
        return ToolResult(True, "ran")


@pytest.mark.parametrize("arguments, needle", [
    ({"ids": ["a"], "bogus": 1}, "unknown argument(s) bogus"),
    ({"ids": "a"}, "`ids` must be a list"),
    ({"ids": [1]}, "list of strings"),
    ({"ids": ["a"], "wait_secs": 99}, "at most 30"),
    ({}, "missing required argument(s) ids"),
])
def test_every_tool_call_is_held_to_its_schema_before_it_runs(tmp_path, arguments, needle):
    """Tryout: the `subagent` tool ran a spawn with an argument its schema forbids."""
    strict = StrictTool()
    script = [{"turns": [{"tool_calls": [{"name": "strict", "arguments": arguments}]},
                         {"text": "ok"}]}]
    outcome, sink, requests = run(script, tmp_path, [strict])
    assert outcome.status == "completed" and strict.calls == []
    content = sink.of("tool_result")[0]["content"]
    assert content.startswith("invalid call to `strict`") and needle in content


def test_loose_values_are_normalized_before_the_tool_sees_them(tmp_path):
    strict = StrictTool()
    script = [{"turns": [call("strict", ids=["a"], wait_secs="5"), {"text": "ok"}]}]
    run(script, tmp_path, [strict])
    assert strict.calls == [{"ids": ["a"], "wait_secs": 5}]


def test_max_turns(tmp_path):
    script = [{"turns": [call("read", path="x")], "loop": True}]
    outcome, _, requests = run(script, tmp_path, [ReadTool()], max_turns=3)
    assert (outcome.status, outcome.reason) == ("failed", "max turns reached (3 model calls)")
    assert len(requests) == 3


def test_token_budget_stops_before_a_call_that_would_pass_it(tmp_path):
    """Issue 19: the budget is a hard edge — the loop predicts the next call
    (the last one's size, plus what the conversation grew) and stops before
    a call that would pass it, never after."""
    step = {**call("read", path="x"), "usage": {"prompt_tokens": 100, "completion_tokens": 50}}
    read = ReadTool()
    outcome, sink, requests = run([{"turns": [step], "loop": True}], tmp_path, [read],
                                  max_tokens=400)
    assert outcome.status == "failed"
    assert outcome.reason.startswith("token budget: 300 of 400 tokens used, and the next model "
                                     "call (about "), outcome.reason
    assert len(requests) == 2 and len(read.calls) == 2
    assert [u["input_tokens"] for u in sink.of("usage")] == [100, 100]


def test_a_rate_limit_parks_the_loop_then_it_goes_on(tmp_path):
    """A 429 is not a failure: a `rate_limit` record, a wait as the server asked, again."""
    script = [{"turns": [{"http_error": {"status": 429, "retry_after_ms": 300}}, {"text": "after"}]}]
    outcome, sink, requests = run(script, tmp_path, [])
    assert (outcome.status, outcome.report) == ("completed", "after")
    (parked,) = sink.of("rate_limit")
    assert parked["status"] == 429 and 0.3 <= parked["retry_in_s"] <= 0.36 and parked["attempt"] == 1
    assert len(requests) == 2


def test_steering_is_delivered_before_the_next_call(tmp_path):
    pending: list[str] = []

    class Slow(ReadTool):
        def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            pending.append("focus on the tests")  # `zapcli send` arriving mid-step
            return ToolResult(True, "done")

    def steer() -> list[tuple[str, str]]:
        out = [("s1", text) for text in pending]
        pending.clear()
        return out

    script = [{"turns": [call("read", path="x"), {"text": "ok"}]}]
    outcome, sink, requests = run(script, tmp_path, [Slow()], steer=steer)
    assert outcome.status == "completed"
    assert sink.of("steer") == [{"steer_id": "s1", "text": "focus on the tests", "delivered": True}]
    assert requests[1]["messages"][-1] == {"role": "user", "content": "focus on the tests"}
    assert all(m["content"] != "focus on the tests" for m in requests[0]["messages"])
    kinds = sink.kinds()
    assert kinds.index("steer") > kinds.index("tool_result")


def test_notices_before_model_call(tmp_path):
    notes = [["sa_1: completed — found it"], []]
    script = [{"turns": [{"text": "thanks"}]}]
    _, _, requests = run(script, tmp_path, [], before_model_call=lambda: notes.pop(0))
    assert requests[0]["messages"][-1] == {"role": "user", "content": "sa_1: completed — found it"}


def test_should_stop_ends_with_timeout(tmp_path):
    # before the call (its limits, then once more as it is made), before the tool; then the deadline
    checks = itertools.chain([None, None, None], itertools.repeat("deadline reached"))
    script = [{"turns": [call("read", path="x")], "loop": True}]
    outcome, _, requests = run(script, tmp_path, [ReadTool()], should_stop=lambda: next(checks))
    assert (outcome.status, outcome.reason) == ("timeout", "deadline reached")
    assert len(requests) == 1


def test_model_error_fails_with_its_reason(tmp_path):
    script = [{"turns": [{"text": "working on it"}, ], "match": "never"},
              {"turns": [call("read", path="x"), {"error_200": {"message": "model crashed"}}]}]
    outcome, sink, _ = run(script, tmp_path, [ReadTool()])
    assert outcome.status == "failed" and "model crashed" in outcome.reason
    assert sink.of("report") == []


def test_truncated_stream_fails_and_the_call_is_not_run(tmp_path):
    cut = {"raw": [{"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c", "function": {"name": "read", "arguments": '{"pa'}}]}}]}]}
    read = ReadTool()
    outcome, _, _ = run([{"turns": [cut]}], tmp_path, [read])
    assert outcome.status == "failed" and "`read`" in outcome.reason and read.calls == []


def test_transient_http_errors_are_retried(tmp_path):
    script = [{"turns": [{"http_error": {"status": 429}}, {"http_error": {"status": 500}},
                         {"text": "made it"}]}]
    outcome, _, requests = run(script, tmp_path, [])
    assert outcome.report == "made it" and len(requests) == 3


def test_reasoning_and_missing_usage(tmp_path):
    script = [{"turns": [{"reasoning": "pondering", "text": "answer", "usage": None,
                          "reasoning_field": "think_tags"}]}]
    outcome, sink, _ = run(script, tmp_path, [])
    assert outcome.report == "answer"
    assert "".join(f["delta"] for f in sink.of("thinking")) == "pondering"
    assert sink.of("usage") == [] and len(sink.of("diagnostic")) == 1


class Asks:
    """The policy half of an approver: every call needs a person."""

    def __init__(self, summary):
        self.summary = summary

    def check(self, tool: str, args: dict[str, Any], *, allowlisted: bool | None = None) -> Any:
        from zapcli.approvals import Decision

        return Decision("ask", self.summary(tool, args), "a person decides")


def test_approval_denied_is_not_run_and_the_model_is_told(tmp_path):
    class Deny(Asks):
        def ask(self, tool: str, verdict: Any, args: dict[str, Any]) -> tuple[bool, str]:
            return False, "not today"

    read = ReadTool()
    script = [{"turns": [call("read", path="x"), {"text": "ok"}]}]
    _, sink, _ = run(script, tmp_path, [read],
                     approver=Deny(lambda name, args: f"{name} {args['path']}"))
    assert read.calls == []
    assert "`read` was not approved (read x): not today" in sink.of("tool_result")[0]["content"]


def test_approval_needed_without_approver_is_denied(tmp_path):
    read = ReadTool()
    script = [{"turns": [call("read", path="x"), {"text": "ok"}]}]
    _, sink, _ = run(script, tmp_path, [read], approver=Asks(lambda n, a: "read x"))
    assert read.calls == [] and "needs approval" in sink.of("tool_result")[0]["content"]


def test_several_subagent_calls_run_concurrently(tmp_path):
    calls = [{"name": "subagent", "arguments": {"task": t}} for t in ("a", "b", "c")]
    script = [{"turns": [{"tool_calls": calls}, {"text": "all spawned"}]}]
    outcome, sink, requests = run(script, tmp_path, [SubagentTool(3)])
    assert outcome.status == "completed"
    assert [r["ok"] for r in sink.of("tool_result")] == [True, True, True]
    assert tool_messages(requests[1]) == ["spawned a", "spawned b", "spawned c"]
    assert sink.kinds()[1:4] == ["tool_call"] * 3


class Reserving:
    """Spawns as `zapcli.ops.spawn` does: reserve a share, then `ready`, then start."""

    spec = ToolSpec("subagent", "Delegate.", {"type": "object", "properties": {}})

    def __init__(self, slow: str = "") -> None:
        self.slow, self.steps, self.lock = slow, [], threading.Lock()

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        task = args["task"]
        if task == self.slow:
            threading.Event().wait(0.3)  # a sibling whose reservation comes late
        with self.lock:
            self.steps.append(("reserve", task))
        assert ctx.party is not None
        ctx.party.ready()
        with self.lock:
            self.steps.append(("start", task))
        return ToolResult(True, f"spawned {task}")


def test_the_spawns_of_one_message_all_reserve_before_any_starts(tmp_path, monkeypatch):
    """C41: a child that starts before a later sibling has reserved could spend
    that sibling's share; every share is carved before any child starts."""
    monkeypatch.setattr(Muster, "WAIT_S", 120.0)  # a muster that never formed would hang the test
    calls = [{"name": "subagent", "arguments": {"task": t}} for t in "abcd"]
    tool = Reserving(slow="d")
    outcome, _, _ = run([{"turns": [{"tool_calls": calls}, {"text": "ok"}]}], tmp_path, [tool])
    assert outcome.status == "completed"
    kinds = [k for k, _ in tool.steps]
    assert kinds == ["reserve"] * 4 + ["start"] * 4, tool.steps


def test_a_call_that_never_reaches_the_tool_does_not_hold_its_siblings(tmp_path, monkeypatch):
    """A sibling denied by the person (or refused, or stopped) counts as
    arrived: the others start (the test's timeout is the check: WAIT_S is
    longer than it)."""
    monkeypatch.setattr(Muster, "WAIT_S", 600.0)

    class DenyB(Asks):
        def ask(self, tool: str, verdict: Any, args: dict[str, Any]) -> tuple[bool, str]:
            return args["task"] != "b", "not b"

    calls = [{"name": "subagent", "arguments": {"task": t}} for t in "abc"]
    tool = Reserving()
    _, sink, _ = run([{"turns": [{"tool_calls": calls}, {"text": "ok"}]}], tmp_path, [tool],
                     approver=DenyB(lambda name, args: f"spawn {args['task']}"))
    assert sorted(t for k, t in tool.steps if k == "start") == ["a", "c"]
    results = sorted(sink.of("tool_result"), key=lambda r: r["call_id"])
    assert [r["ok"] for r in results] == [True, False, True], results


def test_subagent_mixed_with_other_tools_runs_in_order(tmp_path):
    calls = [{"name": "subagent", "arguments": {"task": "a"}},
             {"name": "read", "arguments": {"path": "x"}}]
    script = [{"turns": [{"tool_calls": calls}, {"text": "ok"}]}]
    sub = SubagentTool(2)
    sub.barrier = threading.Barrier(2, timeout=0.2)  # sequential: nobody else arrives
    _, sink, _ = run(script, tmp_path, [sub, ReadTool()])
    assert sink.kinds()[1:5] == ["tool_call", "tool_result", "tool_call", "tool_result"]
    assert "BrokenBarrierError" in sink.of("tool_result")[0]["content"]


@pytest.mark.parametrize("task", ["a task with {braces} and \u00e9"])
def test_task_text_is_sent_verbatim(tmp_path, task):
    _, _, requests = run([{"turns": [{"text": "ok"}]}], tmp_path, [], task=task)
    assert requests[0]["messages"][1]["content"] == task


def test_the_wait_for_approval_is_recorded_apart_from_the_tool_time(tmp_path):
    """#14.4: `wc -l` approved after 0.6 s is not a 600 ms tool."""
    import time

    class SlowYes(Asks):
        def ask(self, tool: str, verdict: Any, args: dict[str, Any]) -> tuple[bool, str]:
            time.sleep(0.6)
            return True, ""

    (tmp_path / "x").write_text("hi\n")
    script = [{"turns": [call("read", path="x"), {"text": "ok"}]}]
    _, sink, _ = run(script, tmp_path, [ReadTool()], approver=SlowYes(lambda n, a: "read x"))
    result = sink.of("tool_result")[0]
    assert result["approval_wait_ms"] >= 600 and result["duration_ms"] < 300


def test_tool_results_are_masked_before_the_model_sees_them(tmp_path):
    (tmp_path / "x").write_text("key=sk-abcdefghijkl\n")
    script = [{"turns": [call("read", path="x"), {"text": "ok"}]}]
    _, sink, requests = run(script, tmp_path, [ReadTool()],
                            redact=lambda text: text.replace("sk-abcdefghijkl", "***"))
    assert tool_messages(requests[1]) == ["key=***\n"]
    assert sink.of("tool_result")[0]["content"] == "key=***\n"


def test_an_answer_while_results_are_due_waits_and_the_model_goes_on(tmp_path):
    """Results land back: the host says a result is still due when the model
    answers; the loop waits (the hook), the host's announcement reaches the
    next request, and only the last answer is the report."""
    due = ["sa_1"]
    waited: list[bool] = []

    def await_results(stopping: Any) -> bool:
        waited.append(stopping())
        return bool(due)

    def announcements() -> list[str]:
        if not waited or not due:
            return []
        due.clear()
        return ["[SubAgent] sa_1 finished: completed — the late result"]

    script = [{"turns": [{"text": "I started it."}, {"text": "Got the late result."}]}]
    outcome, sink, requests = run(script, tmp_path, [ReadTool()], await_results=await_results,
                                  before_model_call=announcements)
    assert outcome == Outcome("completed", None, "Got the late result.")
    assert waited == [False, False] and len(requests) == 2
    told = [m["content"] for m in requests[1]["messages"] if m["role"] == "user"]
    assert told[-1] == "[SubAgent] sa_1 finished: completed — the late result"
    assert [f["text"] for f in sink.of("report")] == ["Got the late result."]
    assert sink.of("notice") == [{"text": told[-1], "source": "announcements"}]


def test_a_stop_during_a_model_call_runs_none_of_its_calls(tmp_path):
    """Stop means stop: a stop that comes while the model is asked — here for
    two concurrent subagent calls and then a read — runs none of them, and
    no further model call is made."""
    stopped = threading.Event()
    sub = SubagentTool(2)
    read = ReadTool()

    def should_stop() -> str | tuple[str, str] | None:
        return ("cancelled", "interrupted") if stopped.is_set() else None

    class StopsAtTheCall:
        def __init__(self, inner: Any) -> None:
            self.inner, self.model = inner, inner.model

        def complete(self, *a: Any) -> Any:
            turn = self.inner.complete(*a)
            stopped.set()  # the signal lands while the answer is on its way
            return turn

    script = [{"turns": [{"tool_calls": [{"name": "subagent", "arguments": {"task": "a"}},
                                         {"name": "subagent", "arguments": {"task": "b"}}]},
                         call("read", path="x"), {"text": "never"}]}]
    sink = Recorder()
    with ScriptedServer(script) as srv:
        client = StopsAtTheCall(ChatClient("scripted", base_url=srv.base_url, api_key="k"))
        outcome = run_loop(system_prompt="", task="do it", client=client, tools=[sub, read],
                           sink=sink, ctx=ToolContext(workspace=str(tmp_path), cwd=str(tmp_path)),
                           limits=Limits(should_stop=should_stop))
        requests = srv.requests
    assert (outcome.status, outcome.reason) == ("cancelled", "interrupted")
    assert len(requests) == 1 and read.calls == []
    results = sink.of("tool_result")
    assert len(results) == 2 and all(r["content"] == "not run: interrupted" for r in results)
