"""The `zapcli` backend's run (`zapcli.backends.agent.AgentBackend`): the
built-in agent writing to its trail.

Imports `zapcli.host` (lazily), `zapcli.backends.gate`, `zapcli.trail`,
`zapcli.lifecycle.landing` (its own subagents' results, announced and awaited).
Builds the agent from the frozen `spawn` record (never from the YAML layers)
through the one agent host, runs it with the trail as its sink, streams
visible text to stdout, writes the `report` synchronously, and reports
steering messages that were never delivered.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from zapcli.backends.gate import Gate
from zapcli.lifecycle.landing import Children
from zapcli.supervisor.capture import CappedFile
from zapcli.trail import events, reader, store
from zapcli.trail.model import SIGTERM_REASON, Outcome, SpawnRecord, Status
from zapcli.trail.writer import TrailWriter


class SteerInbox:
    """`steer` records written by `zapcli send`, delivered once each."""

    def __init__(self, sid: str):
        self.path = store.path_for(sid)
        self.delivered: set[str] = set()

    def pending(self) -> list[tuple[str, str]]:
        out = []
        for rec in reader.read(self.path).records:
            if rec.get("type") == "steer" and not rec.get("delivered"):
                key = str(rec.get("steer_id") or rec.get("seq"))
                if key not in self.delivered:
                    out.append((key, str(rec.get("text", ""))))
        return out

    def take(self) -> list[tuple[str, str]]:
        """(steer_id, text) of each message not delivered yet, marking them delivered."""
        taken = self.pending()
        self.delivered.update(key for key, _ in taken)
        return taken


def run(sid: str, spawn: SpawnRecord, task: str, *, writer: TrailWriter, out: CappedFile,
        deadline_mono: float, terminated: threading.Event) -> Outcome:
    from zapcli.agent.types import Hooks, ModelError
    from zapcli.backends.sections import OWNERS
    from zapcli.config import load_settings
    from zapcli.errors import ConfigError
    from zapcli.host.agent import build_host

    gate = Gate(sid, writer, mode=spawn.approval, workspace=spawn.workspace, cwd=spawn.cwd,
                writable_roots=spawn.writable_roots, unattended=spawn.unattended,
                deadline_mono=deadline_mono, terminated=terminated, relay=spawn.relay)
    from zapcli.backends.sandboxed import agent_sandbox

    box = agent_sandbox(sid, spawn, writer)
    if isinstance(box, Outcome):
        return box
    inbox = SteerInbox(sid)
    try:
        settings = load_settings(Path(spawn.workspace), owners=OWNERS)
        host = build_host(spawn.raw, workspace=spawn.workspace, cwd=spawn.cwd, sandbox=box,
                          writable_roots=spawn.writable_roots, providers=settings.providers,
                          approver=gate, deadline_mono=deadline_mono, extra_tools=_team(sid, spawn, inbox),
                          on_http_error=lambda status, message: writer.append("diagnostic", {
                              "dimension": "model", "name": f"http_{status}", "message": message}))
    except ConfigError as exc:  # edited after spawn: the providers table cannot be trusted
        return Outcome(Status.FAILED, None, f"the config became invalid after spawn: {exc.message}")
    except ModelError as exc:
        return Outcome(Status.FAILED, None, exc.reason)
    for diag in host.diagnostics:
        writer.append("diagnostic", diag)
    history, failure = _history(spawn, writer)
    forked = spawn.raw.get("fork")
    if isinstance(forked, dict):  # the run's conversation, as it sent it (`zapcli.ops.fork`)
        host.system_prompt, history = str(forked.get("system") or ""), list(forked.get("messages") or [])
    if failure is not None:
        host.close()
        return failure
    check_report = _report_check(spawn, host)

    def should_stop() -> tuple[str, str] | None:
        if terminated.is_set():
            return ("cancelled", SIGTERM_REASON)
        if time.monotonic() >= deadline_mono:
            if gate.unanswered:  # what a person reading `wait`'s last line must know
                return ("timeout", f"deadline reached while awaiting approval {gate.unanswered} "
                                   "(nobody approved or denied it: zapcli approve ID, zapcli top)")
            return ("timeout", "deadline reached")
        return None

    meter = _meter(sid, spawn, host)
    # results land back: its commands' own subagents are announced as they end, and an
    # answer while they work waits for the next one (what is left at its end: `pending`)
    children = Children(sid, spawn.session)
    try:
        result = host.run(task, meter.sink(_TrailSink(writer, out, spawn.session)),
                          hooks=Hooks(approver=gate, steer=inbox.take, check_report=check_report,
                                      before_model_call=children.announcements,
                                      await_results=children.await_results),
                          should_stop=should_stop, history=history,
                          budget=_waiting(sid, meter, should_stop))
    finally:
        host.close()
    for _key, text in inbox.pending():
        writer.append("diagnostic", {"dimension": "steer", "name": "undelivered",
                                     "message": f"not delivered (the subagent ended first): {text[:200]}"})
    if result.report and not result.report.endswith("\n"):
        out.write(b"\n")
    status = Status(result.status)
    outcome = Outcome(status, 0 if status == Status.COMPLETED else None, result.reason)
    return _usage_limit(sid, spawn, outcome, getattr(result, "usage_limit", None)) or outcome


def _usage_limit(sid: str, spawn: SpawnRecord, outcome: Outcome,
                 words: str | None) -> Outcome | None:
    """The end on the account's usage limit, when its model endpoint said one
    (a 429 in a provider's words, `zapcli.providers.openai_chat`: `words`,
    carried apart from the reason, which may quote what a model said), as an
    agent CLI's is said and recorded (`cli_limits.usage_limited`: its reset,
    what `--resume-after-limit` waits for); None for any other end."""
    if outcome.status != Status.FAILED or not words:
        return None
    import time

    from zapcli import limitwords
    from zapcli.backends.cli_limits import usage_limited

    now = time.time()
    found = limitwords.read(words, now=now)
    return usage_limited(sid, spawn, outcome, found, now) if found is not None else None


def _team(sid: str, spawn: SpawnRecord, inbox: SteerInbox) -> tuple[Any, ...]:
    """The board and message tools, for a definition with `team: true`: this
    subagent's, on its own session's board (docs/explanation/rules.md#fleets-traces-teams)."""
    if not (spawn.grant or {}).get("team"):
        return ()
    from zapcli.team.agent_tools import team_tools
    from zapcli.team.who import of_spawn

    return tuple(team_tools(of_spawn(sid, spawn), waiting=lambda: len(inbox.pending())))


def _meter(sid: str, spawn: SpawnRecord, host: Any) -> Any:
    """Prices its calls; with a budget (`--max-tokens`, `--max-cost`, or the
    allotment its parent's tree gave it) stops before a call that would pass
    it, counting what its own subagents hold (docs/explanation/rules.md#budgets)."""
    from zapcli.budget.meter import Meter

    raw = spawn.raw
    max_cost = raw.get("max_cost") if isinstance(raw.get("max_cost"), (int, float)) else None
    held = None
    if spawn.max_tokens is not None or max_cost is not None:
        from zapcli.budget.allot import Held

        held = Held(sid)
    price = raw.get("price") if isinstance(raw.get("price"), dict) else None
    return Meter(getattr(host.client, "model", spawn.model), price=price,
                 max_tokens=spawn.max_tokens, max_cost=max_cost, held=held)


def _waiting(sid: str, meter: Any, should_stop: Any) -> Any:
    """The budget check before each model call of a budgeted agent: a call
    that does not fit while its own subagents still hold their shares waits
    for them to return (a share becomes what was spent), as a run does; it
    fails only when the call cannot fit with every share returned."""
    from zapcli.budget.meter import until_returned

    def check(upcoming: int) -> tuple[str, str] | None:
        return until_returned(lambda: meter.check(upcoming), lambda: _holding(sid),
                              lambda: meter.held is not None and should_stop() is None)
    return check


def _holding(sid: str) -> bool:
    """Settle `sid`'s subagents that ended (their shares return); True while
    one still runs holding its share."""
    from zapcli import ledger
    from zapcli.errors import NotFound, StateError
    from zapcli.lifecycle.observe import observe

    try:
        children = ledger.holders(sid)
    except StateError:
        return False
    running = False
    for child in children:
        try:
            view = observe(child)
        except NotFound:
            continue  # removed: its share stays what it was
        if not view.terminal:
            running = True
            continue
        try:
            ledger.settle(view.id, view.session, view.status, ledger.of(view),
                          tree_parent=view.parent)
        except StateError:
            running = True  # the ledger was busy: its share returns at the next look
    return running


def _history(spawn: SpawnRecord, writer: TrailWriter) -> tuple[list[dict[str, Any]] | None, Outcome | None]:
    """The conversation a continued subagent carries on (`continue_of`)."""
    prev = spawn.continue_of
    if prev is None:
        return None, None
    from zapcli.backends.history import HistoryError, conversation

    try:
        hist = conversation(prev)
    except HistoryError as exc:
        return None, Outcome(Status.FAILED, None, f"cannot continue {prev}: {exc}")
    writer.write_sync("resumed", {"from": prev})  # read: rm, clean and gc may remove it now
    if hist.repaired or hist.dropped:
        writer.append("diagnostic", {"dimension": "history", "name": "repaired", "message": (
            f"the conversation of {prev} had {hist.repaired} tool call(s) without a result (closed "
            f"with an error result) and {hist.dropped} result(s) without their call (dropped)")})
    return hist.messages, None


def _report_check(spawn: SpawnRecord, host: Any) -> Any:
    """With `--output-schema`: tell the model the schema, and check its final
    answer — the validation errors go back to it, at most MAX_TRIES answers."""
    schema = spawn.output_schema
    if schema is None:
        return None
    from zapcli import outputschema

    host.system_prompt = (host.system_prompt + "\n\n" if host.system_prompt else "") + \
        outputschema.instructions(schema)
    tries = [0]

    def check(text: str) -> tuple[str, str | None] | None:
        why = outputschema.check(schema, text)
        if why is None:
            return None
        tries[0] += 1
        left = outputschema.MAX_TRIES - tries[0]
        reason = f"{outputschema.REASON}: {why}"
        return (reason, outputschema.feedback(why, left) if left > 0 else None)

    return check


class _TrailSink:
    """Records go to the trail; visible text also to stdout, each turn's on
    its own lines; the report is written synchronously (never lost)."""

    def __init__(self, writer: TrailWriter, out: CappedFile, session: str = ""):
        self.writer, self.out, self.session = writer, out, session
        self.at_line_start = True
        self.parked = False

    def _resumed(self) -> None:
        """Back from a rate limit: the queue may have held the session's next
        subagents for this provider; let them start now (no daemon would)."""
        def drain() -> None:
            try:
                from zapcli.backends.sections import OWNERS
                from zapcli.config import load_settings
                from zapcli.lifecycle import queue

                queue.drain(self.session, load_settings(lenient=True, owners=OWNERS))
            except Exception:  # noqa: BLE001 - best effort: the next observer drains too
                pass

        threading.Thread(target=drain, name="drain-after-rate-limit", daemon=True).start()

    def __call__(self, rtype: str, fields: dict[str, Any]) -> None:
        if rtype == "rate_limit":
            if not self.parked:  # the first of an episode: its hook runs now, nobody need be looking
                self.parked = True
                self.writer.write_sync(rtype, fields)
                events.emit(self.writer.path, "rate_limited")
                return
        elif rtype == "usage" and self.parked:
            self.parked = False
            self._resumed()
        if rtype == "text":
            delta = str(fields.get("delta", ""))
            self.out.write(delta.encode("utf-8", "replace"))
            self.at_line_start = delta.endswith("\n") if delta else self.at_line_start
        if rtype == "report":
            self.writer.write_sync("report", fields, retry_s=5.0)
            return
        if rtype in ("tool_call", "notice") and not self.at_line_start:  # its next turn: a line of its own
            self.out.write(b"\n")
            self.at_line_start = True
        self.writer.append(rtype, fields)
