"""Subagent ids (docs/explanation/rules.md#ids-and-sessions): `sa_YYYYMMDD_xxxxxxxx`. Imports nothing of zapcli.

An id is validated with a full regex match before it is ever joined to a path,
so `../x`, absolute paths, globs, upper case, newlines and empty strings can
never name a file.
"""

from __future__ import annotations

import os
import time

_HEX = frozenset("0123456789abcdef")


def new_id(now: float | None = None) -> str:
    """Return a fresh id: UTC date of `now` (epoch seconds) + 8 hex chars from
    os.urandom, the CSPRNG `secrets` itself uses (without its import cost)."""
    t = time.gmtime(time.time() if now is None else now)
    return f"sa_{t.tm_year:04d}{t.tm_mon:02d}{t.tm_mday:02d}_{os.urandom(4).hex()}"


def is_valid(value: object) -> bool:
    """True when `value` is a str that fully matches `^sa_[0-9]{8}_[0-9a-f]{8}$`
    (checked without a regex: compiling one costs more than every check a command makes)."""
    return (isinstance(value, str) and len(value) == 20 and value.startswith("sa_") and value[11] == "_"
            and value[3:11].isascii() and value[3:11].isdigit() and _HEX.issuperset(value[12:]))
