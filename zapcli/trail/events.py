"""Event hooks (`hooks:` in the user's config.yaml, `spawn --on-event
EVENT=CMD`): a shell command run exactly once per occurrence of an event in
a subagent's life, by whichever process sees the occurrence first.

Imports `zapcli.trail.store`, `zapcli.trail.reader`, `zapcli.trail.finish`
(whose machinery runs these too: the detached helper, the command's run, its
environment), `zapcli.redact`. `finished` is the on-finish command
(`zapcli.trail.finish`); the others are `EVENTS` below, each a rule that
reads its occurrences off a trail's summary (`occurrences`) with a key that
names one occurrence (an approval request's id, the first record of a rate
limit, a stall's last sign of life).

Who fires: the runner fires what it writes itself (`emit`, right after the
record: `started`, `needs_input`, `rate_limited`; `usage_limited` after an
end that carries `usage_limit` — `TrailWriter.end` — or a `usage_limit`
record, whose writer calls `emit(path, "usage_limited")`), so nobody has to
be looking for a hook to run; the acting observer (`zapcli.lifecycle.observe`)
fires every occurrence it finds unclaimed — a runner that died in between, a
backend that does not emit — and `stalled`, which only an outsider can see
(nothing is written while a subagent is stalled). A pure look
(`zapcli.lifecycle.look`) lists what is due and fires nothing.

Exactly once, as for on-finish: a claim is an `event` record appended
under the trail's lock only when the occurrence has none (`claim`), naming
its claimer (pid, create time) and a token; its helper (`python -m
zapcli.trail.events ID TOKEN`) says `running` under the lock only while that
claim is the occurrence's latest, and `done` with the exit code after. A
claimer that died before starting its helper is taken over by an observer
(`stale`, after `finish.TAKEOVER_S`). The command gets the on-finish
environment (ZAPCLI_ID, ZAPCLI_STATUS, ZAPCLI_EXIT_CODE, ZAPCLI_TRAIL,
ZAPCLI_WORKTREE) plus ZAPCLI_EVENT, ZAPCLI_DETAIL (one line saying what
happened), ZAPCLI_TASK (its first line) and, for `needs_input`,
ZAPCLI_REQUEST: the pending request's whole text (as `approve` shows it).
ZAPCLI_STATUS is the status when the helper starts, which a quick subagent
may already have moved past (a `started` hook can read `completed`); the
event and its detail say what happened.
Event records are bookkeeping, not a sign of life: the reader leaves them
out of `last_ts`, so claiming a stall does not end it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from zapcli.plain import frozen
from zapcli.trail import finish, reader, store
from zapcli.trail.model import HELPER_STATES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

# every event a hook can name, in the order `--help` lists them
EVENTS = ("needs_input", "started", "stalled", "rate_limited", "usage_limited", "finished")
REQUEST_MAX = 96 * 1024  # an environment string is at most 128 KiB (MAX_ARG_STRLEN)


def check_hooks(value: Any) -> dict[str, str]:
    """`hooks:` in config.yaml, event -> shell command (an empty one: none);
    raises ValueError saying what is wrong."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping of event to shell command, e.g. needs_input: "
                         f"notify-send zapcli \"$ZAPCLI_ID needs you\" (events: {', '.join(EVENTS)})")
    out = {}
    for event, command in value.items():
        if event not in EVENTS:
            import difflib

            near = difflib.get_close_matches(str(event), EVENTS, n=1)
            raise ValueError(f"unknown event {event!r}" + (f" (did you mean '{near[0]}'?)" if near
                                                           else f" (events: {', '.join(EVENTS)})"))
        if command is not None and not isinstance(command, str):
            raise ValueError(f"hooks.{event}: expected a shell command (text), got {command!r}")
        if command and command.strip():
            out[event] = command
    return out


@frozen
class Occurrence:
    """One occurrence of `event`: `key` names it among the event's others;
    `detail` says what happened in one line."""

    event: str
    key: str
    detail: str


def _needs_input(s: reader.Summary, _stalled: float | None) -> list[Occurrence]:
    req = s.pending_approval
    if req is None:
        return []
    tool = req.get("tool")
    return [Occurrence("needs_input", str(req.get("req_id")),
                       f"awaits approval of {tool}" if isinstance(tool, str) else "awaits approval")]


def _started(s: reader.Summary, _stalled: float | None) -> list[Occurrence]:
    """Its runner started: once per launch (a subagent put back in the queue
    and launched again starts again), named by its `process` record."""
    if s.runner is None:
        return []
    return [Occurrence("started", str(s.runner.raw.get("seq", "run")), "its runner started")]


def _stalled(s: reader.Summary, since: float | None) -> list[Occurrence]:
    if since is None or s.final is not None:
        return []
    idle = max(time.time() - since, 0.0)
    return [Occurrence("stalled", str(int(since)), f"nothing written for {idle:.0f}s")]


def _limit(event: str, rec: dict[str, Any] | None, seq: int) -> list[Occurrence]:
    if rec is None:
        return []
    said = " ".join(str(rec[k]) for k in ("provider", "status", "message") if rec.get(k))
    return [Occurrence(event, str(seq), said or event.replace("_", " "))]


def _rate_limited(s: reader.Summary, _stalled: float | None) -> list[Occurrence]:
    return _limit("rate_limited", s.rate_limit, s.rate_limit_seq)


def _usage_limited(s: reader.Summary, _stalled: float | None) -> list[Occurrence]:
    """An account's usage limit (issue 30), as the trail says it: a
    `usage_limit` record (a model call refused until the reset), a terminal
    status carrying `usage_limit` (it ended on the limit: key `end`), or a
    queued one `held` with kind `usage_limit` (one occurrence per reset)."""
    rec = s.usage_limit
    out = _limit("usage_limited", rec, rec.get("seq", 0) if rec else 0)
    ended = s.final.raw.get("usage_limit") if s.final is not None else None
    if isinstance(ended, dict):
        out += [Occurrence("usage_limited", "end", _limit_words(ended))]
    held = s.held if s.final is None and s.runner is None else None
    if held is not None and held.get("kind") == "usage_limit":
        out += [Occurrence("usage_limited", f"held {held.get('until')}", _limit_words(held))]
    return out


def _limit_words(limit: dict[str, Any]) -> str:
    """`claude usage limit: <its words> (resets at 2026-…Z)`, from what was recorded."""
    said = " ".join(str(limit[k]) for k in ("cli", "provider") if limit.get(k)) or "the account"
    text = f"{said} usage limit"
    if limit.get("message"):
        text += f": {limit['message']}"
    until = limit.get("resets_at", limit.get("until"))
    if isinstance(until, (int, float)) and not isinstance(until, bool):
        from zapcli.trail.records import iso_utc

        text += f" (resets at {iso_utc(until)[:19]}Z)"
    return text


# the registry: event -> its occurrences in a summary (given when it has been
# stalled since, if it has); `finished` is `zapcli.trail.finish`'s
RULES: dict[str, Callable[[reader.Summary, float | None], list[Occurrence]]] = {
    "needs_input": _needs_input, "started": _started, "stalled": _stalled,
    "rate_limited": _rate_limited, "usage_limited": _usage_limited,
}


def occurrences(s: reader.Summary, *, stalled_since: float | None = None,
                only: str | None = None) -> list[Occurrence]:
    """The occurrences the summary shows of every event its spawn names a hook
    for (`only`: of that one event)."""
    hooks = s.spawn.hooks
    return [occ for event, rule in RULES.items() if event in hooks and only in (None, event)
            for occ in rule(s, stalled_since)]


def due(s: reader.Summary, *, stalled_since: float | None = None) -> list[Occurrence]:
    """Those nobody claimed yet: what an acting observer fires."""
    return [o for o in occurrences(s, stalled_since=stalled_since) if f"{o.event} {o.key}" not in s.events]


def unstarted(s: reader.Summary, now: float | None = None) -> list[tuple[Occurrence, dict[str, Any]]]:
    """Claims whose helper never said `running` `finish.TAKEOVER_S` after,
    with the claim record: the acting observer takes over those whose
    claimer (pid, create time) is gone."""
    from zapcli.trail.records import parse_iso

    now = time.time() if now is None else now
    out = []
    for name, states in s.events.items():
        claimed = states.get("claimed")
        if claimed is None or states.keys() & HELPER_STATES:
            continue
        try:
            age = now - parse_iso(str(claimed.get("ts")))
        except ValueError:
            continue
        if isinstance(claimed.get("token"), str) and age >= finish.TAKEOVER_S:
            event, _, key = name.partition(" ")
            out.append((Occurrence(event, key, str(claimed.get("detail") or "")), claimed))
    return out


def _claimable(s: reader.Summary, occ: Occurrence, stale: str | None) -> bool:
    states = s.events.get(f"{occ.event} {occ.key}")
    if stale is None or states is None:
        return states is None and stale is None
    claimed = states.get("claimed")
    return claimed is not None and claimed.get("token") == stale and not states.keys() & HELPER_STATES


def claim(path: Path, occ: Occurrence, *, stale: str | None = None) -> str | None:
    """Append the claim of `occ` under the trail's lock if its spawn names a
    hook for the event and nobody claimed it (with `stale`: that claim is
    still the latest and no helper runs it). The new claim's token, or None."""
    import secrets

    with store.locked(path):
        s = reader.summarize(reader.read(path))
        if s is None or occ.event not in s.spawn.hooks or not _claimable(s, occ, stale):
            return None
        token = secrets.token_hex(8)
        pid, created = finish.me()
        fields = {"event": occ.event, "key": occ.key, "state": "claimed", "detail": occ.detail,
                  "pid": pid, "create_time": created, "token": token,
                  **({"took_over": stale} if stale else {})}
        return token if store.append(path, "event", fields) is not None else None


def fire(path: Path, occs: Iterable[Occurrence], *, stale: str | None = None) -> int:
    """Claim each occurrence and start its helper; how many this call started.
    Never raises: a hook must not break whoever saw the event."""
    started = 0
    for occ in occs:
        try:
            token = claim(path, occ, stale=stale)
            if token is None:
                continue
            finish.start_helper("zapcli.trail.events", path.name.removesuffix(".jsonl"), token)
            started += 1
        except Exception as exc:  # noqa: BLE001 - said in the trail, never raised
            store.append(path, "diagnostic", {
                "dimension": "hooks", "name": "not_started",
                "message": f"the {occ.event} hook could not be started: {exc}"})
    return started


def emit(path: Path, event: str, *, stalled_since: float | None = None) -> int:
    """What the process that wrote an event's record calls right after it (the
    runner: `started`, `needs_input`, `rate_limited`; the usage-limit work:
    `usage_limited`, after its `usage_limit` record): fire the event's
    occurrences nobody claimed. Costs one read of the trail's first line when
    the subagent has no hook for `event`. Never raises."""
    try:
        head = store.first_line(path)
        if b'"hooks"' not in head or f'"{event}"'.encode() not in head:
            return 0
        s = reader.summarize(reader.read(path))
    except OSError:
        return 0
    if s is None or s.spawn.executor != "local":  # a remote node's records: fired at home, once back
        return 0
    occs = [o for o in occurrences(s, stalled_since=stalled_since, only=event)
            if f"{o.event} {o.key}" not in s.events]
    return fire(path, occs) if occs else 0


def _running(path: Path, token: str) -> tuple[list[dict[str, Any]], reader.Summary, dict[str, Any]] | None:
    """Say `running` under the lock while `token` is its occurrence's latest
    claim: (the trail's records, the claim), or None (taken over, or gone)."""
    with store.locked(path):
        trail = reader.read(path)
        s = reader.summarize(trail)
        if s is None:
            return None
        mine = next((r for r in trail.records if r.get("type") == "event"
                     and r.get("state") == "claimed" and r.get("token") == token), None)
        if mine is None:
            return None
        occ = Occurrence(str(mine.get("event")), str(mine.get("key")), "")
        if not _claimable(s, occ, token):
            return None
        pid, created = finish.me()
        store.append(path, "event", {"event": occ.event, "key": occ.key, "state": "running",
                                     "pid": pid, "create_time": created})
    return trail.records, s, mine


def _safe(text: str, limit: int) -> str:
    """Text an environment variable can hold: no NUL, valid UTF-8, at most
    `limit` bytes (longer: cut, saying where the whole is)."""
    from zapcli.redact import display

    text = display(text).replace("\x00", "\u2400").encode("utf-8", "replace").decode("utf-8")
    if len(text.encode()) <= limit:
        return text
    return text.encode()[:limit].decode("utf-8", "ignore") + "\n… (cut: `zapcli approve` shows it whole)"


def environment(sid: str, path: Path, recs: list[dict[str, Any]], s: reader.Summary,
                claim: dict[str, Any]) -> dict[str, str]:
    """The hook's environment (see the module docstring)."""
    spawn = recs[0]
    status, code = "queued", None
    if s.final is not None:
        status, code = str(s.final.status), s.final.exit_code
    elif s.pending_approval is not None:
        status = "awaiting_approval"
    elif s.runner is not None:
        status = "running"
    event, key = str(claim.get("event")), str(claim.get("key"))
    env = finish.base_env(sid, path, status, code, spawn, event)
    task = str(spawn.get("task") or "").strip().splitlines()
    env["ZAPCLI_TASK"] = _safe(task[0][:200] if task else "", 1024)
    env["ZAPCLI_DETAIL"] = _safe(str(claim.get("detail") or ""), 4096)
    if event == "needs_input":
        req = next((r for r in recs if r.get("type") == "approval_request"
                    and str(r.get("req_id")) == key), {})
        env["ZAPCLI_REQUEST"] = _safe(str(req.get("summary") or req.get("tool") or ""), REQUEST_MAX)
    return env


def run(sid: str, token: str) -> int:
    """The helper: run the command of the claim `token` names, record its end."""
    path = store.path_for(sid)
    try:
        got = _running(path, token)
    except OSError:
        return 1  # removed in between: nothing to run, nowhere to say so
    if got is None:
        return 0  # taken over, or not ours: the helper of the latest claim runs it
    recs, s, mine = got
    event = str(mine.get("event"))
    finish.run_recorded(path, s.spawn.hooks.get(event, "exit 0"), s.spawn.cwd,
                        environment(sid, path, recs, s, mine),
                        ("event", {"event": event, "key": mine.get("key")}), f"the {event} hook")
    return 0


if __name__ == "__main__":
    from zapcli import keyguard

    keyguard.seal()  # the keys came in a memory file (`finish.start_helper`); the command gets them back
    raise SystemExit(run(sys.argv[1], sys.argv[2]))
