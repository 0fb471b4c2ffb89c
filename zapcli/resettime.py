"""When a provider's limit resets, said for people: `resets 15:00
Europe/Warsaw` (a time on another day with its date), in the zone the
limit was said in, else this machine's.

Imports the standard library only (the kernel: every room may say it).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def zone_of(name: str | None) -> ZoneInfo | None:
    """The IANA zone `name` (a TZ value such as "Europe/Warsaw"), or None."""
    name = (name or "").lstrip(":")
    if not name or name.startswith("/"):  # a file (":/etc/localtime"): this machine's zone
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def when_text(resets_at: float | None, zone: str | None, now: float, *, with_zone: bool = True) -> str:
    """`resets 15:00 Europe/Warsaw` (`resets Dec 9 16:53 …` on another day),
    or that no time was said."""
    if resets_at is None:
        return "reset time not said"
    tz = zone_of(zone)
    at = datetime.fromtimestamp(resets_at, tz) if tz else datetime.fromtimestamp(resets_at).astimezone()
    today = (datetime.fromtimestamp(now, tz) if tz else datetime.fromtimestamp(now).astimezone()).date()
    shown = at.strftime("%H:%M") if at.date() == today else at.strftime("%b %-d %H:%M")
    if not with_zone:
        return f"resets {shown}"
    return f"resets {shown} {tz.key if tz else at.tzname() or 'local time'}"
