"""One agent's meter: prices each model call as its usage comes in and
says when the budget is spent (docs/explanation/rules.md#budgets) — the same meter for every
backend.

Imports `zapcli.prices`. The built-in agent asks before each call
(`check`: the loop predicts the next call's tokens); an agent CLI's runner
asks as its stream says each call (`passed`, with what the CLI has said of
calls whose usage it reports later: Claude Code gives a call's input as the
call starts, its output and cost when the turn ends). Both add what the
agent's own subagents hold against the same budget (their allotments, or
what they spent once returned), so a tree's children, each stopping once its
allotment is spent, keep the tree within its budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from zapcli import prices
from zapcli.money import dollars

Sink = Callable[[str, dict[str, Any]], None]
REASON = "token budget"
COST_REASON = "cost budget"  # a --max-cost reached: said in dollars, and named so
# a call's size is known only once it is answered: the first (or one larger than the
# last) may pass the budget alone; said as it is, not as a call to come
PASSED = (": the last model call passed it (a call's size is known only once it is answered; "
          "the next is foreseen from the last)")
RETURN_POLL_S = 0.25  # how often a wait for subagents' returning shares looks again


def until_returned(verdict: Callable[[], tuple[str, str] | None], look: Callable[[], bool],
                   go_on: Callable[[], bool]) -> tuple[str, str] | None:
    """The budget's verdict before a model call (None: it fits), waiting while
    it does not fit and subagents still hold their shares: `look` settles the
    ended ones (their shares return) and says whether some still hold one;
    the verdict is asked again after every look, since that look may have
    returned the share that lets the call fit. `go_on` False ends the wait
    with the verdict as it is (a stop, a spent tree)."""
    found = verdict()
    while found is not None and go_on():
        holding = look()
        found = verdict()
        if found is None or not holding or not go_on():
            break
        import time

        time.sleep(RETURN_POLL_S)
    return found


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
        """Count one `usage` record, with its `cost_usd`: from the model's
        `prices:` entry when config.yaml has one (the person's price wins),
        else as the backend reported it, else from the price library."""
        i, o = int(fields.get("input_tokens") or 0), int(fields.get("output_tokens") or 0)
        cost = fields.get("cost_usd")
        reported = isinstance(cost, (int, float)) and not isinstance(cost, bool)
        mine = self.price is not None and fields.get("model") in (None, "", self.model)
        if mine or not reported:
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

    def estimate(self, pending: Iterable[Mapping[str, Any]]) -> tuple[int, float]:
        """(tokens, dollars) of calls said but not yet reported in full: their
        tokens as said so far, priced by the model's price, else at the rate
        of the calls reported before them."""
        tokens, cost = 0, 0.0
        for f in pending:
            i, o = int(f.get("input_tokens") or 0), int(f.get("output_tokens") or 0)
            priced = prices.cost(str(f.get("model") or self.model or ""), i, o,
                                 int(f.get("cached_tokens") or 0),
                                 int(f.get("cache_write_tokens") or 0), self.price)
            tokens += i + o
            cost += priced if priced is not None else (i + o) * self.last_rate
        return tokens, cost

    def passed(self, pending: Iterable[Mapping[str, Any]] = ()) -> str | None:
        """As an agent CLI says each call (it cannot be asked before one): the
        reason to stop it when what it spent — with `pending`, calls it said
        but reports in full only later — and what its own subagents hold or
        spent passed its budget; else None."""
        if self.max_tokens is None and self.max_cost is None:
            return None
        more_t, more_c = self.estimate(pending)
        held_t, held_c = self.held() if self.held else (0, 0.0)
        sub = " with what its own subagents hold or spent" if held_t or held_c else ""
        if self.max_tokens is not None and self.tokens + more_t + held_t > self.max_tokens:
            return (f"{REASON}: {self.tokens + more_t + held_t:,} tokens used{sub}, past "
                    f"{self.who} {self.max_tokens:,}; stopped at the call that passed it")
        if self.max_cost is not None and self.cost + more_c + held_c > self.max_cost:
            return (f"{COST_REASON}: {dollars(self.cost + more_c + held_c)} spent{sub}, past "
                    f"{self.who} {dollars(self.max_cost)}; stopped at the call that passed it")
        return None

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
                then = (PASSED if used > self.max_tokens else
                        f", and the next model call (about {upcoming:,}) would pass it")
                return ("failed", f"{REASON}: {used:,} of {self.who} {self.max_tokens:,} tokens "
                                  f"used{sub}{then}")
        if self.max_cost is not None:
            spent = self.cost + held_c
            nxt = self._next_cost(upcoming)
            if spent + nxt > self.max_cost:
                then = (PASSED if spent > self.max_cost else
                        f", and the next model call (about {dollars(nxt)}) would pass it")
                return ("failed", f"{COST_REASON}: {dollars(spent)} of {self.who} "
                                  f"{dollars(self.max_cost)} spent{then}")
        return None
