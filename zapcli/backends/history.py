"""A finished subagent's conversation, rebuilt from its trail, for `zapcli
continue` (docs/explanation/rules.md#parallel-coding).

Imports `zapcli.trail`, `zapcli.redact`. The messages are the ones its loop
sent and got: the task, each assistant turn (text and tool calls), the tool
results, steering messages and the loop's own notices — in order, and for a
subagent that was itself a continuation, its predecessors' first. A tool
call left without a result (killed mid-call, failed, a lost last batch) is
closed with a synthetic error result, and a result without its call is
dropped, so the history is never a malformed request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from zapcli.redact import MissingSecret, UnrecordedSecret, display, unmark
from zapcli.trail import reader, store
from zapcli.trail.model import FinalStatus, SpawnRecord

MAX_DEPTH = 50


class HistoryError(Exception):
    """The conversation cannot be rebuilt (a trail in the chain is gone)."""


@dataclass
class _Turn:
    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    turn: Any = None


@dataclass
class History:
    messages: list[dict[str, Any]]
    repaired: int = 0  # tool calls closed with a synthetic error result
    dropped: int = 0  # tool results without their call


def conversation(sid: str) -> History:
    """The whole conversation of `sid`. Raises HistoryError."""
    chain: list[tuple[str, list[dict[str, Any]]]] = []
    current: str | None = sid
    while current:
        if len(chain) >= MAX_DEPTH:
            raise HistoryError(f"more than {MAX_DEPTH} continuations in a row")
        try:
            recs = reader.read(store.path_for(current)).records
        except Exception as exc:  # NotFound (a bad id), OSError
            raise HistoryError(f"the trail of {current} cannot be read ({exc}); it may have been "
                               "removed by retention") from None
        if not recs or recs[0].get("type") != "spawn":
            raise HistoryError(f"the trail of {current} has no spawn record")
        chain.append((current, recs))
        prev = recs[0].get("continue_of")
        current = prev if isinstance(prev, str) else None
    out = History([])
    for _sid, recs in reversed(chain):
        _add(out, recs)
    return out


def _task(spawn: SpawnRecord) -> str:
    """Its task as its runner had it: only the references its spawn recorded
    get their values back (a model's own text never names a key)."""
    names = spawn.raw.get("secret_refs")
    try:
        return unmark(spawn.task, names=names if isinstance(names, list) else ())
    except (MissingSecret, UnrecordedSecret):
        return display(spawn.task)


def _blocks(recs: list[dict[str, Any]]) -> tuple[list[str | _Turn], dict[str, dict[str, Any]]]:
    """User texts (str) and assistant turns in the order the loop had them,
    and the tool results by call id."""
    blocks: list[str | _Turn] = [_task(SpawnRecord.from_record(recs[0]))]
    results: dict[str, dict[str, Any]] = {}
    cur: _Turn | None = None
    for rec in recs[1:]:
        rtype = rec.get("type")
        if rtype == "text":
            if cur is None or cur.calls:
                cur = _Turn()
                blocks.append(cur)
            cur.text += str(rec.get("delta") or "")
        elif rtype == "usage" and cur is not None and cur.calls:
            cur = None  # usage ends a model call: calls after it are the next turn's
        elif rtype == "tool_call":
            turn = rec.get("turn")
            if cur is None or (cur.calls and turn is not None and turn != cur.turn):
                cur = _Turn()
                blocks.append(cur)
            cur.calls.append(rec)
            cur.turn = turn
        elif rtype == "tool_result":
            results[str(rec.get("call_id"))] = rec
        elif (rtype == "steer" and rec.get("delivered")) or rtype == "notice":
            cur = None
            blocks.append(str(rec.get("text") or ""))
        elif rtype == "trimmed" and rec.get("dropped_records") != 0:  # else only folded
            blocks.append("[note: an earlier part of this conversation was trimmed from its "
                          "record and is missing here]")
    return blocks, results


def _add(out: History, recs: list[dict[str, Any]]) -> None:
    blocks, results = _blocks(recs)
    called = {str(c.get("call_id")) for b in blocks if isinstance(b, _Turn) for c in b.calls}
    out.dropped += len(set(results) - called)
    ended = _ending(recs)
    for b in blocks:
        if isinstance(b, str):
            out.messages.append({"role": "user", "content": b})
            continue
        if not b.text and not b.calls:
            continue
        msg: dict[str, Any] = {"role": "assistant", "content": b.text}
        if b.calls:
            msg["tool_calls"] = [_call(c) for c in b.calls]
        out.messages.append(msg)
        for c in b.calls:
            res = results.get(str(c.get("call_id")))
            if res is None:
                out.repaired += 1
                content = f"Error: this call has no result: {ended}"
            else:
                content = str(res.get("content") or "") or "(no output)"
                content = content if res.get("ok") else f"Error: {content}"
            out.messages.append({"role": "tool", "tool_call_id": str(c.get("call_id")),
                                 "content": content})


def _call(rec: dict[str, Any]) -> dict[str, Any]:
    args = rec.get("arguments")
    return {"id": str(rec.get("call_id")), "type": "function",
            "function": {"name": str(rec.get("name") or "unknown"),
                         "arguments": json.dumps(args) if isinstance(args, dict) else "{}"}}


def _ending(recs: list[dict[str, Any]]) -> str:
    for rec in recs:
        final = FinalStatus.from_record(rec)
        if final is not None:
            why = f" ({final.reason})" if final.reason else ""
            return f"the subagent ended {final.status}{why} before the call finished"
    return "the subagent ended before the call finished"
