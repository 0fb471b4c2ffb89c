"""The tool-calling loop (docs/explanation/rules.md#the-agent-loop): model → tool calls → results → … → report.
Imports `zapcli.agent.types` only: records go to a Sink, so it knows nothing of files or processes.

Limits (should_stop, max turns, token budget) are checked before every model
call. Tool failures of every kind go back to the model as error results; the
loop itself ends only through an Outcome, never an exception.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import Any

from zapcli.agent.arguments import ArgumentError, check_args
from zapcli.agent.types import (
    Approver,
    Hooks,
    Limits,
    ModelClient,
    ModelError,
    Muster,
    Sink,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    Turn,
)

SUBAGENT_TOOL = "subagent"


@dataclass(frozen=True)
class LoopResult:
    """How a loop ended. `status`: "completed" | "failed" | "timeout" |
    "cancelled"; `reason` None when completed (e.g. "max turns", "token
    budget", a ModelError's reason); `report`: the final answer, or the last
    text seen when not completed. `usage_limit`: the provider's words when a
    model call ended it on the account's usage limit (`ModelError.usage_limit`)."""

    status: str
    reason: str | None
    report: str
    usage_limit: str | None = None


def run_loop(*, system_prompt: str, task: str, client: ModelClient, tools: list[Tool],
             sink: Sink, ctx: ToolContext, limits: Limits = Limits(),
             hooks: Hooks = Hooks(), history: list[dict[str, Any]] | None = None) -> LoopResult:
    """Run the agent until it answers without tool calls or a limit stops it.

    Records emitted: text/thinking {delta}; tool_call {call_id, name,
    arguments}; tool_result {call_id, ok, content, duration_ms}; usage {model,
    input_tokens, output_tokens, cached_tokens, duration_ms}; steer {steer_id, text,
    delivered}; notice {text, source} for a message the loop itself adds
    (a rejected final answer; the host's announcements, as they are sent); a
    one-time diagnostic when the endpoint
    reports no usage; report {text} on completion only. `history`: an
    earlier conversation (a continued subagent's) sent before `task`.

    An answer without tool calls ends the loop unless `hooks.await_results`
    says results of work it started are still due: then it waits for the
    next, which is announced before the model goes on. A stop is asked
    before every model call and every tool call, so none starts after it.
    """
    granted = {t.spec.name.lower(): t for t in tools}
    specs = [t.spec.to_openai() for t in tools]
    messages: list[dict[str, Any]] = ([{"role": "system", "content": system_prompt}]
                                      if system_prompt else [])
    messages.extend(history or [])
    messages.append({"role": "user", "content": task})
    state = _State(sent_chars=len(json.dumps(specs)))
    while True:
        stop = _limit_reached(limits, state, messages)
        if stop is not None:
            return LoopResult(stop[0], stop[1], state.last_text)
        notices = _deliver(messages, sink, hooks)
        stop = _stop_reason(limits)  # delivering took a moment: a stop since means no call
        if stop is not None:
            return LoopResult(stop[0], stop[1], state.last_text)
        if notices:  # recorded as sent: what it announced has reached the model now
            sink("notice", {"text": notices, "source": "announcements"})
        state.turns += 1
        asked = time.monotonic()
        try:
            turn = client.complete(messages, specs, lambda kind, d: sink(kind, {"delta": d}))
        except ModelError as e:
            if e.retry_after is None:
                return LoopResult("failed", e.reason, state.last_text, e.usage_limit)
            parked = _park(e, client, sink, limits, state)  # a rate limit: wait, then again
            if parked is not None:
                return LoopResult(parked[0], parked[1], state.last_text)
            state.turns -= 1
            continue
        except Exception as e:  # a client bug must still end as a status, not a traceback
            return LoopResult("failed", f"model client failed: {type(e).__name__}: {e}",
                              state.last_text)
        state.parked = 0
        _count_usage(turn, messages, client, sink, state, int((time.monotonic() - asked) * 1000))
        messages.append(_assistant_message(turn))
        if turn.text:
            state.last_text = turn.text
        if not turn.tool_calls:
            rejected = hooks.check_report(turn.text) if hooks.check_report else None
            if rejected is None:
                if hooks.await_results is not None and hooks.await_results(
                        lambda: _stop_reason(limits) is not None):
                    continue  # a result of its work came (or a stop): the model goes on
                sink("report", {"text": turn.text})
                return LoopResult("completed", None, turn.text)
            reason, retry = rejected
            if retry is None:
                return LoopResult("failed", reason, turn.text)
            messages.append({"role": "user", "content": retry})
            sink("notice", {"text": retry, "source": "report_check"})
            continue
        if hooks.on_calls is not None:
            hooks.on_calls(messages)
        results = _run_calls(turn.tool_calls, granted, sink, ctx, hooks,
                             lambda: _stop_reason(limits), state.turns)
        for call, result in zip(turn.tool_calls, results, strict=True):
            content = result.content or "(no output)"
            messages.append({"role": "tool", "tool_call_id": call.call_id,
                             "content": content if result.ok else f"Error: {content}"})


@dataclass
class _State:
    turns: int = 0
    used: int = 0  # tokens, input + output
    last_text: str = ""
    told_no_usage: bool = False
    last_in: int = 0  # the last call's input tokens
    last_out: int = 0  # and its output tokens
    sent_chars: int = 0  # the size of what the last call sent (tool specs before the first)
    parked: int = 0  # rate limits met in a row


def predict(state: _State, messages: list[dict[str, Any]]) -> int:
    """The next call's tokens: the last one's input plus what the conversation
    grew since (4 characters a token), and as much output as last time.
    Before the first call, the whole request's size."""
    size = len(json.dumps(messages))
    grown = max(size - state.sent_chars, 0) if state.turns else size + state.sent_chars
    return state.last_in + grown // 4 + state.last_out


MAX_PARK_S = 60.0  # the longest a rate limit parks without the server naming a time


def _park(e: ModelError, client: ModelClient, sink: Sink, limits: Limits,
          state: _State) -> tuple[str, str] | None:
    """A rate limit or an overloaded server: say so (a `rate_limit` record:
    observers show `rate-limited, retry in 12s`), wait as the server asked
    (Retry-After) or back off (2, 4, ... 60 s), jittered so that parked
    siblings do not all come back at once; None to try again, or the stop
    (the deadline, a kill) that came meanwhile."""
    import random

    state.parked += 1
    wait = e.retry_after or min(2.0 ** state.parked, MAX_PARK_S)
    wait *= 1 + random.uniform(0, 0.2)
    sink("rate_limit", {"status": e.status, "message": e.reason, "retry_in_s": round(wait, 3),
                        "until": time.time() + wait, "attempt": state.parked,
                        "provider": getattr(client, "endpoint", None) or client.model})
    until = time.monotonic() + wait
    while time.monotonic() < until:
        stop = _stop_reason(limits)
        if stop is not None:
            return stop[0], f"{stop[1]} (while parked on a rate limit: {e.reason})"
        time.sleep(min(0.1, max(until - time.monotonic(), 0.0)))
    return None


def _stop_reason(limits: Limits) -> tuple[str, str] | None:
    reason = limits.should_stop() if limits.should_stop else None
    if isinstance(reason, tuple):
        return reason
    if reason:
        timed_out = "timeout" in reason.lower() or "deadline" in reason.lower()
        return ("timeout" if timed_out else "failed"), reason
    return None


def _limit_reached(limits: Limits, state: _State,
                   messages: list[dict[str, Any]]) -> tuple[str, str] | None:
    stop = _stop_reason(limits)
    if stop is None and state.turns >= limits.max_turns:
        stop = ("failed", f"max turns reached ({limits.max_turns} model calls)")
    if stop is not None or (limits.max_tokens is None and limits.budget is None):
        return stop
    upcoming = predict(state, messages)
    cap = limits.max_tokens
    if cap is not None and state.used + upcoming > cap:
        if state.used > cap:
            return ("failed", f"token budget exceeded ({state.used:,} of {cap:,} tokens)")
        return ("failed", f"token budget: {state.used:,} of {cap:,} tokens used, and the next "
                          f"model call (about {upcoming:,}) would pass it")
    return limits.budget(upcoming) if limits.budget else None


def _deliver(messages: list[dict[str, Any]], sink: Sink, hooks: Hooks) -> str:
    """Steering messages and notices, before the next model call; the notices' text."""
    for steer_id, text in hooks.steer() if hooks.steer else []:
        messages.append({"role": "user", "content": text})
        sink("steer", {"steer_id": steer_id, "text": text, "delivered": True})
    notices = hooks.before_model_call() if hooks.before_model_call else []
    if not notices:
        return ""
    text = "\n".join(notices)
    messages.append({"role": "user", "content": text})
    return text


def _count_usage(turn: Turn, messages: list[dict[str, Any]], client: ModelClient, sink: Sink,
                 state: _State, duration_ms: int) -> None:
    state.sent_chars = len(json.dumps(messages))
    if turn.usage is not None:
        u = turn.usage
        sink("usage", {"model": turn.model or client.model, "input_tokens": u.input_tokens,
                       "output_tokens": u.output_tokens, "cached_tokens": u.cached_tokens,
                       "duration_ms": duration_ms,
                       **({"cache_write_tokens": u.cache_write_tokens} if u.cache_write_tokens else {})})
        state.used += u.input_tokens + u.output_tokens
        state.last_in, state.last_out = u.input_tokens, u.output_tokens
        return
    if not state.told_no_usage:
        state.told_no_usage = True
        sink("diagnostic", {"dimension": "model", "name": client.model, "message":
                            "the model endpoint reports no token usage; usage totals "
                            "miss these calls and the token budget uses an estimate "
                            "(4 characters per token)"})
    estimate = _estimate(messages, turn)
    state.used += estimate
    state.last_in, state.last_out = estimate, 0


def _assistant_message(turn: Turn) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.tool_calls:
        # Arguments that did not parse go back as {}: some servers reject invalid JSON in history.
        msg["tool_calls"] = [{"id": c.call_id, "type": "function", "function": {
            "name": c.name or "unknown",
            "arguments": json.dumps(c.arguments) if c.arguments is not None else "{}"}}
            for c in turn.tool_calls]
    return msg


def _estimate(messages: list[dict[str, Any]], turn: Turn) -> int:
    out = len(turn.text) + len(turn.reasoning) + sum(len(c.raw_arguments) for c in turn.tool_calls)
    return (len(json.dumps(messages)) + out) // 4


def _run_calls(calls: list[ToolCall], granted: dict[str, Tool], sink: Sink, ctx: ToolContext,
               hooks: Hooks,
               stop_reason: Callable[[], tuple[str, str] | None], turn: int = 0) -> list[ToolResult]:
    """Run one message's calls: concurrently when all are `subagent` calls, else in order.
    Results are masked (`hooks.redact`) before the sink and the model see them; `turn`
    (the model call they came from) is recorded with each call."""
    approver = hooks.approver

    def announce(call: ToolCall) -> None:
        tool = granted.get(call.name.lower())
        sink("tool_call", {"call_id": call.call_id, "name": tool.spec.name if tool else call.name,
                           "arguments": call.arguments if call.arguments is not None
                           else call.raw_arguments, "turn": turn})

    def finish(call: ToolCall, result: ToolResult, ms: int, wait_ms: int = 0) -> ToolResult:
        if hooks.redact is not None and result.content:
            result = ToolResult(result.ok, hooks.redact(result.content))
        fields: dict[str, Any] = {"call_id": call.call_id, "ok": result.ok,
                                  "content": result.content, "duration_ms": ms}
        if wait_ms:  # the time a person took to decide is not the tool's
            fields["approval_wait_ms"] = wait_ms
        sink("tool_result", fields)
        return result

    names = [c.name.lower() for c in calls]
    if len(calls) > 1 and all(n == SUBAGENT_TOOL for n in names):
        for call in calls:
            announce(call)
        results: dict[int, ToolResult] = {}
        together = replace(ctx, siblings=len(calls), batch=turn)  # spawns share a budget evenly
        muster = Muster(len(calls))  # and reserve their shares before any of them starts
        with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="subagent") as pool:
            futures = {pool.submit(_mustered, c, granted, replace(together, party=muster.party()),
                                   approver, stop_reason): i
                       for i, c in enumerate(calls)}
            for fut in as_completed(futures):
                i = futures[fut]
                results[i] = finish(calls[i], *fut.result())
        return [results[i] for i in range(len(calls))]
    out = []
    for call in calls:
        announce(call)
        out.append(finish(call, *_execute(call, granted, replace(
            ctx, siblings=names.count(call.name.lower()), batch=turn), approver, stop_reason)))
    return out


Stop = Callable[[], "tuple[str, str] | None"]


def _mustered(call: ToolCall, granted: dict[str, Tool], ctx: ToolContext,
              approver: Approver | None, stop: Stop) -> tuple[ToolResult, int, int]:
    """`_execute` for a call of a Muster: it has arrived once it is done,
    whether or not the tool got to it."""
    try:
        return _execute(call, granted, ctx, approver, stop)
    finally:
        if ctx.party is not None:
            ctx.party.arrive()


def _execute(call: ToolCall, granted: dict[str, Tool], ctx: ToolContext,
             approver: Approver | None, stop: Stop) -> tuple[ToolResult, int, int]:
    """One call → (result, its duration in ms, ms spent waiting for an
    approval, which the duration leaves out); not run once `stop()` says
    stop (asked before, and again after an approval wait). Never raises."""
    start = time.monotonic()
    tool = granted.get(call.name.lower())
    waited: list[float] = []
    try:
        result = _check_and_run(call, tool, granted, ctx, approver, waited, stop)
    except Exception as e:  # a broken tool or approver becomes an error the model reads
        name = tool.spec.name if tool else call.name
        result = ToolResult(False, f"`{name}` failed: {type(e).__name__}: {e}")
    wait = sum(waited)
    return result, int((time.monotonic() - start - wait) * 1000), int(wait * 1000)


def _check_and_run(call: ToolCall, tool: Tool | None, granted: dict[str, Tool],
                   ctx: ToolContext, approver: Approver | None,
                   waited: list[float], stop: Stop) -> ToolResult:
    stopped = stop()
    if stopped is not None:
        return ToolResult(False, f"not run: {stopped[1]}")
    if tool is None:
        names = ", ".join(sorted(t.spec.name for t in granted.values())) or "none"
        shown = call.name or "(no name)"
        return ToolResult(False, f"`{shown}` is not available to this subagent "
                                 f"(available tools: {names})")
    name = tool.spec.name
    if call.error is not None or call.arguments is None:
        return ToolResult(False, f"invalid call to `{name}`: {call.error or 'no arguments'}. "
                                 "Call it again with its arguments as one JSON object.")
    try:  # the schema holds for every tool, before anyone is asked to approve it
        args = check_args(tool.spec, call.arguments)
    except ArgumentError as e:
        return ToolResult(False, f"invalid call to `{name}`: {e}. Call it again with arguments "
                                 "that match its schema.")
    refuse = getattr(tool, "refuse", None)  # a call that could never run: refused before anyone is asked
    never = refuse(args) if refuse is not None else None
    if never:
        return ToolResult(False, never)
    asked = time.monotonic()
    refusal = _approval(name, args, approver)
    waited.append(time.monotonic() - asked)
    if refusal is not None:
        return refusal
    stopped = stop()  # asked again at the point of running: a stop while the person was asked
    if stopped is not None:
        return ToolResult(False, f"not run: {stopped[1]}")
    result = tool.run(args, replace(ctx, call_id=call.call_id))
    if not isinstance(result, ToolResult):
        return ToolResult(True, str(result))
    return result


def _approval(name: str, args: dict[str, Any], approver: Approver | None) -> ToolResult | None:
    """None when the call may run; else the error the model reads. An
    approver without `ask` cannot settle anything the policy did not allow."""
    if approver is None:
        return None
    verdict = approver.check(name, args)
    if verdict.action == "allow":
        return None
    ask = getattr(approver, "ask", None)
    if ask is None:
        return ToolResult(False, f"`{name}` needs approval ({verdict.summary}) and nobody can "
                                 "approve it here; choose a way that needs no approval")
    approved, why = ask(name, verdict, args)
    if approved:
        return None
    return ToolResult(False, f"`{name}` was not approved ({verdict.summary}): "
                             f"{why or 'no reason given'}. Do not retry it unchanged.")
