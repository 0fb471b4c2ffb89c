"""What `top` does, each through its ops verb — approve and deny
(`ops.steer.decide`), kill (`ops.kill.kill`), rm (`ops.remove.rm`), send
(`ops.steer.send`) — so a local and a Ray subagent are acted on exactly as
`zapcli approve`, `kill`, `rm` and `send` act on them.

Imports `zapcli.ops`, `zapcli.errors`, `zapcli.team.messages` (who takes a message). Each returns the words to tell the
person (and whether all went well); a refusal (it ended meanwhile, the
request was decided elsewhere) is said, never raised.
"""

from __future__ import annotations

from zapcli.config import Settings
from zapcli.errors import ZapcliError
from zapcli.plain import plain

APPROVED = "approved in zapcli top"


@plain
class Done:
    ok: bool
    message: str


def decide(sid: str, req_id: str, approve: bool, reason: str | None = None) -> Done:
    """Approve or deny the request `req_id` of `sid` — the one that was shown."""
    from zapcli.ops.steer import decide as verb

    try:
        res = verb(sid, req_id, approve, reason or (APPROVED if approve else None))
    except ZapcliError as exc:
        return Done(False, exc.message)
    except OSError as exc:  # the state folder: full, read-only, gone
        return Done(False, f"could not: {exc.strerror or exc}")
    word = "approved" if approve else "denied"
    return Done(True, f"{sid[-8:]} {res.req_id} {word}: {res.tool}")


def decide_all(pending: list[tuple[str, str]], approve: bool, reason: str | None = None) -> Done:
    """`decide` for each (id, req_id); one message for all."""
    results = [decide(sid, req, approve, reason) for sid, req in pending]
    return _summed(results, "approved" if approve else "denied", len(pending))


def kill(ids: list[str], settings: Settings) -> Done:
    from zapcli.ops.kill import kill as verb

    try:
        entries = verb(ids, settings)
    except ZapcliError as exc:
        return Done(False, exc.message)
    except OSError as exc:  # the state folder: full, read-only, gone
        return Done(False, f"could not: {exc.strerror or exc}")
    stopped = [e for e in entries if e.stopped]
    other = [f"{e.id[-8:]}: {e.error or e.outcome}" for e in entries if not e.stopped]
    message = f"killed {len(stopped)} of {len(entries)}"
    if other:
        message += " — " + "; ".join(other[:5]) + (f"; {len(other) - 5} more" if len(other) > 5 else "")
    return Done(not other, message)


def remove(ids: list[str], settings: Settings) -> Done:
    from zapcli.ops.remove import rm

    try:
        res = rm(ids, settings)
    except ZapcliError as exc:
        return Done(False, exc.message)
    except OSError as exc:  # the state folder: full, read-only, gone
        return Done(False, f"could not: {exc.strerror or exc}")
    message = f"removed {len(res.removed)} of {len(ids)}"
    refused = list(res.refused.values())
    if refused:
        message += " — " + "; ".join(refused[:3]) + (f"; {len(refused) - 3} more" if len(refused) > 3 else "")
    return Done(not refused, message)


def why_no_messages(sid: str) -> str | None:
    """Why a message box for `sid` could not send (None: it can): a shell
    command, a backend without the team tools, one that ended."""
    from zapcli.team.messages import why_none

    return why_none(sid)


def send(sid: str, text: str) -> Done:
    from zapcli.ops.steer import send as verb

    try:
        sent = verb(sid, text)
    except ZapcliError as exc:
        return Done(False, exc.message)
    except OSError as exc:  # the state folder: full, read-only, gone
        return Done(False, f"could not: {exc.strerror or exc}")
    return Done(True, f"sent to {sent.id[-8:]}: it reaches the work {sent.inbox}, if it makes "
                      "one (zapcli continue otherwise)")


def _summed(results: list[Done], word: str, total: int) -> Done:
    good = sum(1 for r in results if r.ok)
    bad = [r.message for r in results if not r.ok]
    message = f"{word} {good} of {total}"
    if bad:
        message += " — " + "; ".join(bad[:3])
    elif total == 1:
        message = results[0].message
    return Done(not bad, message)
