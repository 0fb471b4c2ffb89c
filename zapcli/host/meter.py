"""An agent's own meter: prices each model call as it is recorded and checks
its budget before the next one (SPEC §19).

Imports `zapcli.prices`, `zapcli.ledger` (lazily: only an agent with a
budget opens the ledger). The loop predicts the next call's tokens; the
meter adds what this agent's own subagents hold against the same budget
(their allotments, or what they spent once returned) and says stop when
the call would not fit — so a tree's children, each stopping before a call
its allotment cannot cover, keep the tree within its budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from zapcli import prices

Sink = Callable[[str, dict[str, Any]], None]
REASON = "token budget"


class Meter:
    """`model`, `price` (a `prices:` entry, else the library); `max_tokens`,
    `max_cost` the budget (None: none); `held()` -> (tokens, dollars) its
    own subagents hold or spent; `who` names the budget in reasons."""

    def __init__(self, model: str | None, *, price: Mapping[str, float] | None = None,
                 max_tokens: int | None = None, max_cost: float | None = None,
                 held: Callable[[], tuple[int, float]] | None = None, who: str = "its"):
        self.model, self.price = model, price
        self.max_tokens, self.max_cost, self.held, self.who = max_tokens, max_cost, held, who
        self.tokens = 0
        self.cost = 0.0
        self.priced = True  # every call so far had a cost
        self.calls = 0
        self.last_rate = 0.0  # dollars per token of the last call

    def record(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Count one `usage` record, adding its `cost_usd` when the backend
        did not report one and a price is known."""
        i, o = int(fields.get("input_tokens") or 0), int(fields.get("output_tokens") or 0)
        cost = fields.get("cost_usd")
        if not isinstance(cost, (int, float)):
            cost = prices.cost(str(fields.get("model") or self.model or ""), i, o,
                               int(fields.get("cached_tokens") or 0),
                               int(fields.get("cache_write_tokens") or 0), self.price)
            if cost is not None:
                fields = {**fields, "cost_usd": cost}
        self.calls += 1
        self.tokens += i + o
        if cost is None:
            self.priced = False
        else:
            self.cost += float(cost)
            self.last_rate = float(cost) / max(i + o, 1)
        return fields

    def sink(self, inner: Sink) -> Sink:
        def counted(rtype: str, fields: dict[str, Any]) -> None:
            inner(rtype, self.record(fields) if rtype == "usage" else fields)
        return counted

    def _next_cost(self, upcoming: int) -> float:
        if self.last_rate:
            return upcoming * self.last_rate
        return prices.cost(self.model or "", upcoming, 0, price=self.price) or 0.0

    def check(self, upcoming: int) -> tuple[str, str] | None:
        """Before a model call of about `upcoming` tokens: the stop, or None."""
        held_t, held_c = self.held() if self.held else (0, 0.0)
        if self.max_tokens is not None:
            used = self.tokens + held_t
            if used + upcoming > self.max_tokens:
                sub = f" ({held_t:,} held or spent by {self.who} subagents)" if held_t else ""
                return ("failed", f"{REASON}: {used:,} of {self.who} {self.max_tokens:,} tokens "
                                  f"used{sub}, and the next model call (about {upcoming:,}) "
                                  "would pass it")
        if self.max_cost is not None:
            spent = self.cost + held_c
            nxt = self._next_cost(upcoming)
            if spent + nxt > self.max_cost:
                return ("failed", f"{REASON}: ${spent:.4f} of {self.who} ${self.max_cost:.4f} spent, "
                                  f"and the next model call (about ${nxt:.4f}) would pass it")
        return None
