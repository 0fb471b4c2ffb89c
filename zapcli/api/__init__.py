"""zapcli's Python API: the CLI's verbs as functions returning typed results.

    import zapcli

    sid = zapcli.spawn("make test", cli="sh", timeout=600).id
    done = zapcli.wait([sid])                # blocks; woken by the end at once
    print(done.subagents[0].status, zapcli.output(sid).text)

    # in an event loop: the same verbs, never blocking it
    from zapcli.api import aio
    done = await aio.wait([sid])

Each function is the CLI command of the same name (`zapcli.api.list` is
`zapcli list`); options are keyword arguments named as the CLI's long
options (`--wait-secs` is `wait_secs`). Each result is a frozen dataclass
read from the JSON document that `zapcli <command> --json` prints, and
carries it whole as `.document` (or `.record` for one subagent), with its
`"schema": "zapcli/<name>@1"`. Subagents are ordinary background processes
with trails on disk, as from the CLI: a program's subagents are seen by
`zapcli list` and the reverse (same session rules: ZAPCLI_SESSION).

Errors: every failure a caller can cause is a `ZapcliError` (`UsageError`
for bad arguments, `NotFound` for an id that does not exist, `ConfigError`,
`StateError`), with a stable `.code` and a message that says what to do.

Versioning (semver): the names in `__all__` here and in `zapcli.api.aio`,
their parameters and the fields of the result classes are public. Within a
major version they only grow: a new keyword parameter (with a default), a new
result field (at the end), a new function. `document`/`record` follow the
`--json` schemas (docs/reference/json/), which also only gain keys within a
major. Everything else in the package (`zapcli.ops`, `zapcli.render`, ...)
may change in any release. Before 1.0 a minor release may break this, and the
changelog says so.

Imports nothing heavy: `import zapcli.api` costs what the verbs import when
first called (the CLI's own ops), and `zapcli` itself re-exports these names
lazily, so `import zapcli` stays as cheap as the CLI's start.
"""

from __future__ import annotations

from zapcli.api import aio
from zapcli.api.results import (
    CapturedOutput,
    Decision,
    Killed,
    KillResult,
    Listing,
    Output,
    PollResult,
    Sent,
    Spawned,
    Subagent,
    WaitResult,
)
from zapcli.api.verbs import (
    approve,
    deny,
    kill,
    output,
    poll,
    send,
    spawn,
    spawn_attempts,
    wait,
)
from zapcli.api.verbs import list_ as list  # noqa: A004 - `zapcli list`
from zapcli.errors import ConfigError, NotFound, StateError, UsageError, ZapcliError
from zapcli.trail.model import Status

__all__ = [
    "spawn", "spawn_attempts", "poll", "wait", "list", "kill", "output", "send", "approve",
    "deny", "aio",
    "Spawned", "Subagent", "Output", "PollResult", "WaitResult", "Listing", "Killed",
    "KillResult", "CapturedOutput", "Sent", "Decision", "Status",
    "ZapcliError", "UsageError", "NotFound", "ConfigError", "StateError",
]
