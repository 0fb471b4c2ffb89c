"""What an agent CLI says when its account's usage limit stops it (C42), read
into when the limit resets: each CLI's own words, as the pinned versions
print them, and the words of the providers behind OpenAI-compatible
endpoints that they pass on — which the built-in agent's model client
reads in a 429 too (`zapcli.providers.openai_chat`): one reading for both.

Imports `zapcli.resettime` and the standard library. A usage limit is an account's session,
daily, weekly or plan allowance spent — not a rate limit (seconds), which
the CLIs retry themselves. Known phrasings:

- Claude Code: "You've hit your 5-hour limit · resets 7:53pm
  (Europe/Warsaw)" (also session, weekly, Opus… limits); its stream's
  `rate_limit_event` says the reset as a time stamp, which its parser
  reads (`zapcli.backends.clis.claude_events`).
- Codex: "You've hit your usage limit. … or try again at 7:53 PM." (or
  "at Dec 9th, 2026 4:53 PM", in the CLI's local time; "Try again later."
  when the server said no time).
- Gemini CLI: "You have exhausted your daily quota on this model." (the API
  says "Please retry in 47000s"; Google's daily quotas reset at midnight
  Pacific time), a capacity reset "after 161h39m41s", or a quota retry
  suggested beyond five minutes ("Suggested retry after 7200s.").
- qwen ("Quota exhausted: …"), opencode and pi pass the provider's words on:
  a coding plan's "Usage limit reached for 5 hour. Your limit will reset at
  2026-12-05 22:29:27" (Z.ai's clock: UTC+8), or any "limit/quota … reset
  at <ISO time>"; opencode Go's "Usage limit reached. It will reset in
  3 hours 5 minutes."
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from zapcli.resettime import zone_of

DAY_S = 86400.0
UNSAID_HOLD_S = 1800.0  # no reset time said: new spawns wait this long, then one tries again
PACIFIC = "America/Los_Angeles"  # where Google's daily quotas reset, at midnight
ZAI = "Asia/Shanghai"  # the clock of Z.ai's "will reset at" (UTC+8)


@dataclass(frozen=True)
class UsageLimit:
    """A usage limit the CLI met: when it resets (epoch seconds; None: not
    said), the zone the CLI said it in (None: this machine's), its words."""

    message: str
    resets_at: float | None = None
    zone: str | None = None


_LIMIT = re.compile(
    r"you.ve hit your [\w .()/-]{0,40}?limit|usage limit reached|exhausted your (daily quota|"
    r"capacity)|quota exhausted|individual quota reached|weekly/monthly limit exhausted|"
    r"(usage|quota) limit (has been )?(reached|exceeded)", re.I)
_ISO = re.compile(r"reset (?:at|on) (\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?)"
                  r"\s*(Z|[+-]\d{2}:?\d{2}|UTC)?", re.I)
_CLOCK = re.compile(r"(?:try again at|resets) (?:(?P<mon>[A-Z][a-z]{2}) (?P<day>\d{1,2})"
                    r"(?:st|nd|rd|th)?,? (?:(?P<year>\d{4}),? )?)?(?P<h>\d{1,2})(?::(?P<m>\d{2}))?"
                    r" ?(?P<ampm>[AaPp][Mm])(?: \((?P<zone>[\w/+-]+)\))?")
_IN = re.compile(r"(?:reset (?:after|in)|resets in|retry in|retry after) "
                 r"(?P<text>(?:\d+(?:\.\d+)?\s*(?:ms|days?|hours?|minutes?|seconds?|[dhms])"
                 r"[\s,]*(?:and\s+)?)+|less than a minute)", re.I)
_UNITS = {"ms": 0.001, "s": 1, "second": 1, "seconds": 1, "m": 60, "minute": 60, "minutes": 60,
          "h": 3600, "hour": 3600, "hours": 3600, "d": DAY_S, "day": DAY_S, "days": DAY_S}


def read(text: str, *, now: float, zone: str | None = None, more: str = "") -> UsageLimit | None:
    """The usage limit `text` (the CLI's error) says, or None when it says
    none. `zone`: the CLI's own TZ, in which it says clock times; `more`:
    what else it printed (stderr), where the provider's retry time may be."""
    found = _LIMIT.search(text)
    if found is None and not _gemini_terminal(text):
        return None
    message = " ".join(text.split())[:600]
    said, at = _reset(text, now, zone)
    if at is None and more:
        _said, at = _reset(more, now, zone, clocks=False)
    if at is None and re.search(r"daily quota", text, re.I):
        at = _next_midnight(now, PACIFIC)
    return UsageLimit(message, at, said or zone)


def _gemini_terminal(text: str) -> bool:
    """Gemini CLI's terminal quota error: a retry suggested beyond 5 minutes."""
    m = re.search(r"Suggested retry after (\d+(?:\.\d+)?)s", text)
    return bool(m and float(m.group(1)) > 300)


def _reset(text: str, now: float, zone: str | None,
           clocks: bool = True) -> tuple[str | None, float | None]:
    """(the zone it was said in, when) of the first reset time in `text`."""
    m = _ISO.search(text)
    if m:  # an absolute time: said for people in the CLI's zone, whatever clock it was read on
        return None, _iso(m, text)
    m = _IN.search(text)
    if m:
        return None, now + _duration(m.group("text"))
    if clocks:
        m = _CLOCK.search(text)
        if m:
            said = m.group("zone") or zone
            return said, _clock(m, now, said)
    return None, None


def _iso(m: re.Match[str], text: str) -> float | None:
    stamp = m.group(1).replace(" ", "T")
    offset = (m.group(2) or "").upper()
    try:
        if offset in ("Z", "UTC"):
            return datetime.fromisoformat(stamp).replace(tzinfo=timezone.utc).timestamp()
        if offset:
            return datetime.fromisoformat(stamp + offset[:3] + ":" + offset[-2:]).timestamp()
        # no offset: Z.ai's words are on its own clock (UTC+8); any other in UTC
        name = ZAI if re.search(r"usage limit reached for \d+ hour|limit exhausted", text,
                                re.I) else "UTC"
        return datetime.fromisoformat(stamp).replace(tzinfo=ZoneInfo(name)).timestamp()
    except ValueError:
        return None


def _duration(text: str) -> float:
    if text.strip().lower().startswith("less than"):
        return 60.0
    total = 0.0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)\s*(ms|days?|hours?|minutes?|seconds?|[dhms])",
                                   text, re.I):
        total += float(amount) * _UNITS[unit.lower()]
    return total


_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"), 1)}


def _clock(m: re.Match[str], now: float, zone: str | None) -> float | None:
    """A clock time the CLI said in `zone` (this machine's when None): today
    unless a date is given; tomorrow when today's has passed."""
    tz = zone_of(zone)
    here = datetime.fromtimestamp(now, tz) if tz else datetime.fromtimestamp(now).astimezone()
    hour = int(m.group("h")) % 12 + (12 if m.group("ampm").lower() == "pm" else 0)
    minute = int(m.group("m") or 0)
    try:
        if m.group("mon"):
            when = here.replace(month=_MONTHS[m.group("mon")], day=int(m.group("day")),
                                year=int(m.group("year") or here.year), hour=hour,
                                minute=minute, second=0, microsecond=0)
        else:
            when = here.replace(hour=hour, minute=minute, second=0, microsecond=0)
            if when.timestamp() < now - 60:
                when += timedelta(days=1)
    except (KeyError, ValueError):
        return None
    return when.timestamp()


def _next_midnight(now: float, zone: str) -> float:
    here = datetime.fromtimestamp(now, ZoneInfo(zone))
    return (here.replace(hour=0, minute=0, second=0, microsecond=0)
            + timedelta(days=1)).timestamp()
