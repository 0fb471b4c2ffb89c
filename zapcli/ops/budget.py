"""A token budget for a whole tree (`zapcli run --max-tokens N`, SPEC §16).

Imports `zapcli.trail.reader`, `zapcli.ops.kill`, `zapcli.ledger`. The
run's own model calls and every subagent it started count, each subagent
by its trail's `usage` records (live, not only once settled). At 80 % the
parent model is told once; at 100 % no new subagent starts, the running ones
are stopped (`failed`, reason `token budget`), and the run itself stops
before its next model call. A subagent started under a budget also gets the
budget's remainder as its own `max_tokens`, so it stops by itself even when
its parent is gone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from zapcli.config import Settings
from zapcli.errors import NotFound, ZapcliError
from zapcli.trail.model import Outcome, Status
from zapcli.trail.reader import load

NOTICE_AT = 0.8
REASON = "token budget"


class TreeBudget:
    """`own()`: the run's own tokens (input + output) so far; `children()`:
    the ids of the subagents it started."""

    def __init__(self, run_id: str, limit: int, own: Callable[[], int],
                 children: Callable[[], list[str]], settings: Settings):
        self.run_id, self.limit, self.settings = run_id, limit, settings
        self.own, self.children = own, children
        self.told = False
        self.spent = threading.Event()
        self.stopped: list[str] = []
        self._lock = threading.Lock()

    def used(self) -> int:
        total = self.own()
        for sid in self.children():
            try:
                s = load(sid)
            except NotFound:
                continue
            total += s.input_tokens + s.output_tokens
        return total

    def remaining(self) -> int:
        return max(self.limit - self.used(), 0)

    def notices(self) -> list[str]:
        """Before each model call of the run: the one 80 % notice."""
        used = self.used()
        if self.told or used < NOTICE_AT * self.limit or used >= self.limit:
            return []
        self.told = True
        return [f"[token budget] {used:,} of {self.limit:,} tokens used by this run and its "
                f"subagents ({100 * used // self.limit}%). At 100% no new subagent starts and "
                "the running ones are stopped: finish with what you have."]

    def check_spawn(self) -> int:
        """The budget left for a new subagent. Raises ZapcliError when spent."""
        used = self.used()
        if used >= self.limit:
            raise ZapcliError(f"the run's token budget is spent ({used:,} of {self.limit:,} "
                              "tokens, this run and its subagents): no new subagent starts",
                              code="token_budget")
        return self.limit - used

    def enforce(self) -> int | None:
        """At 100 %: stop every running subagent of the run. Once spent, the
        tokens used (read once: hand them to `should_stop`), else None."""
        from zapcli.ops.kill import end_and_stop

        with self._lock:
            used = self.used()
            if used < self.limit:
                return None
            self.spent.set()
            why = f"{REASON}: the run {self.run_id} used {used:,} of {self.limit:,} tokens"
            for sid in self.children():
                try:
                    if end_and_stop(sid, Outcome(Status.FAILED, None, why), self.settings,
                                    by="budget"):
                        self.stopped.append(sid)
                except NotFound:
                    continue
            return used

    def should_stop(self, used: int | None = None) -> tuple[str, str] | None:
        """The run's stop, with `used` as `enforce` just read it (else read here)."""
        used = self.used() if used is None else used
        if self.spent.is_set() or used >= self.limit:
            return ("failed", f"{REASON} exceeded ({used:,} of {self.limit:,} tokens, "
                              "this run and its subagents)")
        return None

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
