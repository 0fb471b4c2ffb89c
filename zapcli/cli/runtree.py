"""A `zapcli run`'s tree (docs/explanation/rules.md#budgets, C26): its budget, its limit on
subagents, and its end — no subagent outlives it, and every result it
started is delivered to its model or listed as undelivered.

Imports `zapcli.budget` (the meter, the tree's check), `zapcli.ledger`,
`zapcli.ops` (kill, usage: what the budget's decisions are carried out
with), `zapcli.lifecycle`, lazily: only `run` pays for them.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

from zapcli.errors import UsageError, ZapcliError, param


def check(settings: Any, model: str | None, max_tokens: int | None, max_cost: float | None,
          max_subagents: int | None) -> int:
    """The run's budget flags, checked (a UsageError saying what is wrong:
    before its trail exists, so a mistyped flag leaves no run behind); its
    cap on subagents (0: none)."""
    from zapcli import prices

    for flag, value in (("max_tokens", max_tokens), ("max_cost", max_cost)):
        if value is not None and not value > 0:
            raise UsageError(f"{param(flag)} must be more than 0, got {value}")
    cap = int(settings.max_subagents if max_subagents is None else max_subagents)
    if cap < 0:
        raise UsageError(f"{param('max_subagents')} must be 0 (no limit) or more, got {cap}")
    if max_cost is not None and not prices.known(model, prices.configured(model, settings.prices)):
        from zapcli.paths import config_dir

        raise UsageError(prices.unknown_message(model, str(config_dir() / "config.yaml")))
    return cap


def check_for(fields: dict[str, Any], settings: Any, max_tokens: int | None,
              max_cost: float | None, max_subagents: int | None) -> None:
    """The budget flags checked before the run's trail is opened, for the model
    it will call: a usage error leaves no run ended `failed` behind (a model
    that cannot be resolved is said where the client is built)."""
    from zapcli.agent.types import ModelError
    from zapcli.providers.resolve import resolve_model

    try:
        model: str | None = resolve_model(fields.get("model"), None, settings.providers,
                                          os.environ)[0]
    except ModelError:
        model = None
    if model is not None or max_cost is None:
        check(settings, model, max_tokens, max_cost, max_subagents)


class RunTree:
    """`meter` counts and prices the run's own calls; `budget` (a TreeBudget,
    or None without --max-tokens/--max-cost) checks the tree before each of them."""

    def __init__(self, run_id: str, settings: Any, *, model: str | None, max_tokens: int | None,
                 max_cost: float | None, max_subagents: int | None, deadline: float):
        from zapcli import prices
        from zapcli.budget import allot
        from zapcli.budget.meter import Meter

        cap = check(settings, model, max_tokens, max_cost, max_subagents)
        price = prices.configured(model, settings.prices)
        self.run_id, self.settings = run_id, settings
        self.limits = allot.Budget(max_tokens, max_cost, cap or None)
        limited = self.limits.limited
        self.meter = Meter(model, price=price, max_tokens=max_tokens, max_cost=max_cost,
                           held=allot.Held(run_id) if limited else None, who="the run's")
        self.budget = None
        if limited:
            from zapcli.budget.tree import TreeBudget
            from zapcli.ops.kill import end_and_stop
            from zapcli.ops.usage import settle

            self.budget = TreeBudget(run_id, self.limits, self.meter, settings, deadline,
                                     stop=end_and_stop, settle=settle)
        try:
            allot.set_budget(run_id, self.limits)
        except ZapcliError as exc:
            sys.stderr.write(f"zapcli: warning: budget not recorded: {exc.message}\n")

    def identity(self) -> dict[str, Any]:
        """What each subagent records of the run, to end itself once the run is gone."""
        from zapcli.supervisor.launch import process_create_time

        return {"id": self.run_id, "pid": os.getpid(),
                "create_time": process_create_time(os.getpid()), "host": socket.gethostname()}

    def check(self, upcoming: int) -> tuple[str, str] | None:
        return self.budget.check(upcoming) if self.budget else self.meter.check(upcoming)

    def close(self, sub: Any, stopped: bool = False) -> tuple[list[dict[str, Any]], Any]:
        """The run ends (`stopped`: by a signal): stop every subagent of its tree still
        running (`completed` when its final answer had arrived), its pending questions
        denied, settle them all; return the results
        that reached nobody — its own (and those it took over) its model never
        saw, and descendants stopped now — and the tree's final figures."""
        from zapcli.lifecycle import session as sessions
        from zapcli.ops.kill import stop_all
        from zapcli.ops.usage import tree_figures
        from zapcli.trail.model import Outcome, Status

        why = f"its run {self.run_id} ended first: the result never reached the run"
        unasked = (f"its run {self.run_id} {'was stopped' if stopped else 'ended'} before "
                   "anyone answered")  # a question's end, not a result's
        stopped_ids = set(stop_all(sessions.members(self.run_id),
                                   Outcome(Status.CANCELLED, None, why), self.settings,
                                   answered=Outcome(Status.COMPLETED, 0, "its final answer had "
                                                    "arrived when its run ended"),
                                   unasked=unasked))
        figures, views = tree_figures(self.run_id, self.own())
        seen, ours = set(sub.env.announced), set(sub.started)
        undelivered = []
        for v in views:
            # a descendant that ended while its own parent lived reached that parent
            if v.id in seen or (v.id not in ours and v.id not in stopped_ids):
                continue
            first = (v.report or v.reason or "").strip().split("\n")[0][:200]
            undelivered.append({"id": v.id, "status": str(v.status), "parent": v.parent,
                                "summary": first})
        return undelivered, figures

    def own(self) -> Any:
        """The run's own calls, as the ledger holds them."""
        from zapcli import ledger

        return ledger.run_tokens(self.run_id)


def say_undelivered(undelivered: list[dict[str, Any]], run_id: str) -> None:
    """One note per result the run's model never saw."""
    if not undelivered:
        return
    from zapcli.cli.output import escape_controls

    sys.stderr.write(f"zapcli: note: {len(undelivered)} result(s) never reached the run "
                     f"(`ZAPCLI_SESSION={run_id} zapcli poll ID` shows each):\n")
    for u in undelivered:
        sys.stderr.write(f"  {u['id']}: {u['status']}"
                         + (f" — {escape_controls(u['summary'])}" if u["summary"] else "") + "\n")
