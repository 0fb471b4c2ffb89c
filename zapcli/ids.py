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


def valid_among(values: list[str]) -> list[str]:
    """The values that are valid ids (`is_valid`), in order. A folder's
    thousand names are checked column by column over their joined text (a
    few passes in C) when all have an id's length; one by one otherwise, or
    when a column fails."""
    try:
        joined = "".join(values) if values and set(map(len, values)) == {20} else ""
    except TypeError:  # not all of them are str
        joined = ""
    if joined:
        n = len(values)
        digits = "".join(joined[i::20] for i in range(3, 11))
        if (joined[0::20] == "s" * n and joined[1::20] == "a" * n and joined[2::20] == "_" * n
                and joined[11::20] == "_" * n and digits.isascii() and digits.isdigit()
                and _HEX.issuperset("".join(joined[i::20] for i in range(12, 20)))):
            return list(values)
    return [v for v in values if is_valid(v)]
