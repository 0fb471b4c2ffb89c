"""A tree's budget, checked for the run that heads it (`--max-tokens`,
`--max-cost`; docs/explanation/rules.md#parallel-coding, docs/explanation/rules.md#budgets): what it and every subagent of its tree spent,
from the ledger and each descendant's trail as it grows.

Imports `zapcli.lifecycle`, `zapcli.trail`, `zapcli.config`. It decides; the
run carries out what it decides with the actions it is given (`stop`: end a
subagent and stop its work, `settle`: settle an ended one, so its allotment
returns). Each subagent the run starts gets an allotment
(`zapcli.budget.allot`), stops itself once it is spent (the built-in agent
before a model call it cannot cover, an agent CLI as its calls are said:
`zapcli.budget.meter`), and returns what it did not use when it is settled.
Before each of its own model calls the run checks (one query, and each
descendant's trail read from where it was read last): its own calls plus
what its subagents hold or spent must leave room for the next call — else it
waits for a running subagent to return its allotment, or stops. At 80 %
spent the model is told once; at 100 % (a backstop: the allotments keep the
tree below it) no new subagent starts, the running ones are stopped —
`completed` when their final answer had arrived, `failed` (`token budget`)
otherwise — and the run stops.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from zapcli.config import Settings
from zapcli.errors import NotFound, StateError
from zapcli.lifecycle import session as sessions
from zapcli.money import dollars
from zapcli.trail import store
from zapcli.trail.model import Outcome, Status

Stop = Callable[..., bool]
NOTICE_AT = 0.8
REASON = "token budget"


class UsageTail:
    """One trail's `usage` totals, read incrementally: each look reads only
    what was appended since the last (a trail its runner trimmed, a new
    file, is read anew: its `trimmed` marker carries the usage it dropped)."""

    def __init__(self, sid: str):
        self.path = store.path_for(sid)
        self.offset, self.tokens, self.cost, self.rest = 0, 0, 0.0, b""
        self.ino: int | None = None

    def read(self) -> tuple[int, float]:
        try:
            st = os.stat(self.path)
        except OSError:
            return self.tokens, self.cost
        size = st.st_size
        if size < self.offset or st.st_ino != self.ino:
            self.offset, self.tokens, self.cost, self.rest = 0, 0, 0.0, b""
            self.ino = st.st_ino
        if size > self.offset:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = self.rest + f.read(size - self.offset)
            self.offset = size
            lines = data.split(b"\n")
            self.rest = lines.pop()
            for line in lines:
                if b'"usage"' in line:
                    self._count(line)
        return self.tokens, self.cost

    def _count(self, line: bytes) -> None:
        import orjson

        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if isinstance(rec, dict) and rec.get("type") == "trimmed":
            rec = rec.get("usage")  # the usage records a trim dropped, summed
        elif not isinstance(rec, dict) or rec.get("type") != "usage":
            return
        if not isinstance(rec, dict):
            return
        for key in ("input_tokens", "output_tokens"):
            n = rec.get(key)
            self.tokens += n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0
        cost = rec.get("cost_usd")  # a negative figure (a damaged trail) never lowers the spend
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0:
            self.cost += float(cost)


class TreeBudget:
    """The run's budget: `limits` (`allot.Budget`), `meter` (its own calls,
    `budget.meter.Meter` with `allot.Held` for what its subagents hold),
    `deadline` (monotonic) bounds a wait for returns; `stop(sid, outcome,
    settings, by=, answered=)` ends a running subagent (True when it did),
    `settle(view, strict=True)` settles an ended one (StateError when the
    ledger cannot be written now)."""

    def __init__(self, run_id: str, limits: Any, meter: Any, settings: Settings,
                 deadline: float | None = None, *, stop: Stop, settle: Callable[..., Any]):
        self.run_id, self.limits, self.meter, self.settings = run_id, limits, meter, settings
        self.deadline = deadline
        self._stop, self._settle = stop, settle
        self.tails: dict[str, UsageTail] = {}
        self.told = False
        self.spent_out = threading.Event()
        self.stopped: list[str] = []
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # the loop and the watcher read the same tails

    def spent(self) -> tuple[int, float]:
        """(tokens, dollars) spent by the run and every subagent of its tree so far."""
        with self._reading:
            tokens, cost = self.meter.tokens, self.meter.cost
            for sid in sessions.members(self.run_id):
                tail = self.tails.get(sid)
                if tail is None:
                    tail = self.tails[sid] = UsageTail(sid)
                t, c = tail.read()
                tokens, cost = tokens + t, cost + c
        return tokens, cost

    def share(self, tokens: int, cost: float) -> float:
        """The larger of the spent fractions (tokens, dollars)."""
        b = self.limits
        return max(tokens / b.max_tokens if b.max_tokens else 0.0,
                   cost / b.max_cost if b.max_cost else 0.0)

    def name(self, tokens: int, cost: float) -> str:
        """"cost budget" when dollars are the nearer limit (or the only one),
        else "token budget": what a reason calls the budget it reached."""
        b = self.limits
        by_cost = cost / b.max_cost if b.max_cost else -1.0
        by_tokens = tokens / b.max_tokens if b.max_tokens else -1.0
        return "cost budget" if b.max_cost and by_cost >= by_tokens else REASON

    def said(self, tokens: int, cost: float) -> str:
        b = self.limits
        parts = ([f"{tokens:,} of {b.max_tokens:,} tokens"] if b.max_tokens else []) + \
            ([f"{dollars(cost)} of {dollars(b.max_cost)}"] if b.max_cost else [])
        return ", ".join(parts)

    def notices(self) -> list[str]:
        """Before each model call of the run: the one 80 % notice."""
        tokens, cost = self.spent()
        share = self.share(tokens, cost)
        if self.told or share < NOTICE_AT or share >= 1:
            return []
        self.told = True
        return [f"[{self.name(tokens, cost)}] {self.said(tokens, cost)} used by this run and its subagents "
                f"({100 * share:.0f}%). At 100% no new subagent starts and the running ones are "
                "stopped: finish with what you have."]

    def enforce(self) -> tuple[int, float] | None:
        """At 100 %: stop every running subagent of the tree. The figures when spent, else None."""
        with self._lock:
            tokens, cost = self.spent()
            if self.share(tokens, cost) < 1:
                return None
            self.spent_out.set()
            why = (f"{self.name(tokens, cost)}: the run {self.run_id} spent its budget "
                   f"({self.said(tokens, cost)})")
            answered = Outcome(Status.COMPLETED, 0, "its final answer had arrived when the run's "
                                                    "budget was spent")
            for sid in sessions.members(self.run_id):
                try:
                    if self._stop(sid, Outcome(Status.FAILED, None, why), self.settings,
                                  by="budget", answered=answered):
                        self.stopped.append(sid)
                except NotFound:
                    continue
            return tokens, cost

    def check(self, upcoming: int) -> tuple[str, str] | None:
        """The run's check before a model call of about `upcoming` tokens (the
        loop's `budget` hook): stop when spent; wait while the call does not
        fit but subagents still hold allotments; stop when it cannot fit."""
        from zapcli.budget.meter import until_returned

        def verdict() -> tuple[str, str] | None:
            return self.stop_reason() if self.enforce() is not None else self.meter.check(upcoming)
        return until_returned(verdict, self._returns_pending, lambda: not self.spent_out.is_set())

    def _returns_pending(self) -> bool:
        """Settle what ended (its allotment returns); True while some still run."""
        from zapcli.lifecycle.observe import observe

        if self.deadline is not None and time.monotonic() >= self.deadline:
            return False
        running = False
        for sid in sessions.members(self.run_id):
            try:
                view = observe(sid, kill_grace_s=self.settings.kill_grace_s)
            except NotFound:
                continue
            if not view.terminal:
                running = True
                continue
            try:
                self._settle(view, strict=True)
            except StateError:
                running = True  # the ledger was busy: its allotment returns at the next look
        return running

    def stop_reason(self) -> tuple[str, str]:
        tokens, cost = self.spent()
        return ("failed", f"{self.name(tokens, cost)} exceeded ({self.said(tokens, cost)}, this run and its "
                          "subagents)")

    def watch(self, stop: threading.Event, every_s: float = 0.5) -> threading.Thread:
        """Enforce on a daemon thread until `stop` is set (the parent may be
        blocked in a `wait` while its subagents spend)."""

        def loop() -> None:
            while not stop.wait(every_s):
                try:
                    self.enforce()
                except Exception:  # noqa: BLE001 - the watcher must not die; the next tick retries
                    pass

        thread = threading.Thread(target=loop, name="token-budget", daemon=True)
        thread.start()
        return thread

