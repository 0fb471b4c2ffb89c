"""An agent CLI's end on its provider's limits, runner side: its account's
usage limit (C42) and a 429 before any work was done (C43).

Imports `zapcli.limitwords` (what each CLI says), `zapcli.lifecycle`
(`limits`: what the queue holds back), `zapcli.resettime`,
`zapcli.trail`. A failure on the account's usage limit ends `failed` with a
distinct reason — `usage limit, resets 15:00 Europe/Warsaw`, then the CLI's
own words — and a `usage_limit` field on its status; the account's next
subagents wait in the queue until the reset. A failure on a 429 (or an
overloaded answer) with no token spent goes back to the queue once (the
runner writes `requeued`), and its endpoint's concurrency in the session is
halved until a subagent there gets an answer (`succeeded`).
"""

from __future__ import annotations

import re
import time
from typing import Any

from zapcli import limitwords
from zapcli.lifecycle import limits
from zapcli.resettime import when_text
from zapcli.trail.model import Outcome, Status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from zapcli.backends.base import RunContext
    from zapcli.backends.clis.base import EventParser
    from zapcli.trail.model import SpawnRecord

# a provider refused for load: a rate limit or an overloaded server, as the CLIs say it
_BUSY = re.compile(r"\b(429|529)\b|too many requests|rate[ _-]?limit|overloaded|"
                   r"resource[ _]exhausted|concurrent connections", re.I)
REQUEUED_TWICE = (" (requeued once after a 429 with no work done; it failed the same way "
                  "again)")


def judge(ctx: RunContext, parser: EventParser, outcome: Outcome, stderr_tail: str,
          env: Mapping[str, str], tokens: int) -> Outcome:
    """`outcome`, or what it is on the provider's limits: a usage limit's
    failure with its reset, or a requeue (status `queued`: the runner puts
    the subagent back in the queue)."""
    if outcome.status != Status.FAILED or not outcome.reason:
        return outcome
    spawn = ctx.spawn
    now = time.time()
    found = getattr(parser, "usage_limit", None) or limitwords.read(
        outcome.reason, now=now, zone=env.get("TZ"), more=stderr_tail)
    if found is not None:
        return usage_limited(ctx.sid, ctx.spawn, outcome, found, now)
    if tokens or not _BUSY.search(outcome.reason):
        return outcome
    from zapcli.trail.reader import load

    if load(ctx.sid).requeued:
        return Outcome(Status.FAILED, outcome.exit_code, outcome.reason + REQUEUED_TWICE,
                       outcome.report)
    endpoint = spawn.raw.get("provider")
    if isinstance(endpoint, str) and endpoint:
        limits.throttled(spawn.session, endpoint, limits.running_on(spawn.session, endpoint),
                         outcome.reason)
    return Outcome(Status.QUEUED, None, f"{spawn.cli} ended on a 429 before any work was "
                   f"done: {' '.join(outcome.reason.split())[:400]}")


def usage_limited(sid: str, spawn: SpawnRecord, outcome: Outcome, found: limitwords.UsageLimit,
                  now: float) -> Outcome:
    """`outcome` as the end on the account's usage limit `found`: its reason
    says when it resets, its `usage_limit` field what `--resume-after-limit`
    waits for, and the account's next subagents wait in the queue (when its
    spawn knew the account). The built-in agent's too (`agent_run`)."""
    cli = str(spawn.cli)
    account = spawn.raw.get("account")
    said = when_text(found.resets_at, found.zone, now)
    if isinstance(account, str):
        limits.limited(cli, account, found.resets_at or now + limitwords.UNSAID_HOLD_S,
                       found.zone, found.message, sid)
    extra = {"usage_limit": {"cli": cli, "account": account, "resets_at": found.resets_at,
                             "zone": found.zone, "message": found.message}}
    return Outcome(Status.FAILED, outcome.exit_code,
                   f"usage limit, {said} — {cli}: {found.message}", outcome.report, extra)


class Succeeded:
    """Called with each `usage` record: the first with tokens lifts the
    session's throttle on the endpoint (C43). The queue starts what it held
    at its next look — this runner's own end, or a poll, list, wait or spawn:
    never from here, while the CLI runs (a runner launched from this process
    would be in the tree this runner ends when its CLI is done)."""

    def __init__(self, session: str, endpoint: Any):
        self.session = session
        self.endpoint = endpoint if isinstance(endpoint, str) and endpoint else None

    def __call__(self, fields: dict[str, Any]) -> None:
        if self.endpoint is None or not (fields.get("input_tokens") or fields.get("output_tokens")):
            return
        endpoint, self.endpoint = self.endpoint, None  # once
        limits.succeeded(self.session, endpoint)
