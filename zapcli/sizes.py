"""Sizes a person writes: `512M`, `2G`, `1.5GiB`, `1048576`. Imports
nothing (a kernel module: config and the definitions' schema both read
them).

K, M, G, T are powers of 1024 (as tmpfs and `dd` read them); a trailing
`B` or `iB` changes nothing. A plain number is bytes.
"""

from __future__ import annotations

_UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
EXAMPLE = "a size such as 512M, 2G or 1073741824 (bytes)"


def parse(value: object) -> int:
    """Bytes, from an int or a text like `2G`. Raises ValueError saying what
    is expected."""
    if isinstance(value, bool):
        raise ValueError(f"expected {EXAMPLE}, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"expected {EXAMPLE}, got {value!r}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected {EXAMPLE}, got {value!r}")
    text = value.strip().upper().replace(" ", "")
    for tail in ("IB", "B"):
        if text.endswith(tail) and len(text) > len(tail) and not text[-len(tail) - 1].isdigit():
            text = text[:-len(tail)]
            break
    unit = text[-1:] if text[-1:] in _UNITS and text[-1:] else ""
    number = text[:-1] if unit else text
    try:
        amount = float(number) if "." in number else int(number)
    except ValueError:
        raise ValueError(f"expected {EXAMPLE}, got {value!r}") from None
    if amount < 0 or amount != amount or amount == float("inf"):
        raise ValueError(f"expected {EXAMPLE}, got {value!r}")
    return int(amount * (1 << _UNITS[unit]))


def show(n: int) -> str:
    """`1 GiB`, `512 MiB`, `100 bytes`."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} bytes"
