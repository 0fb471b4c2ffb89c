"""The price library's answers, remembered on disk: a model's flat price
per million tokens (or that the library does not know it), so a runner
prices its calls without loading `genai_prices` — ~0.2 s of CPU and ~3.5 MB
a runner would hold for the rest of its run; in a fleet only the first
runner to meet a model pays.

Imports the standard library and `zapcli.paths`. One file,
`<state>/prices.json` (private, replaced whole), valid for one copy of the
library's database (its `data.py`: size and change time, found on
`sys.path` without importing it). Only a plain price is kept — numbers for
input, output, cache reads and writes (a price of a unit zapcli never
counts, such as web searches, left out), no tiers, no dates — and only when
the library's own total for a probe call is the one `zapcli.prices` works
out from those numbers; any other model is priced by the library each time.
A missing, unreadable or other user's file is a miss, never an error.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MISS = object()  # `look`: nothing remembered, ask the library
MAX_BYTES = 1 << 20
FIELDS = {"input_mtok": "input", "output_mtok": "output", "cache_read_mtok": "cache_read",
          "cache_write_mtok": "cache_write"}
PROBE = (1_234_567, 345_678, 456_789, 23_456)  # input (caches included), output, read, write
_memo: dict[str, Any] = {}


def _database() -> str | None:
    """Which copy of the library's database an import would load, as text."""
    for folder in sys.path:
        try:
            st = os.stat(os.path.join(folder or ".", "genai_prices", "data.py"))
        except OSError:
            continue
        return f"{st.st_dev:x}-{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"
    return None


def _file() -> Any:
    from pathlib import Path

    from zapcli.paths import state_dir

    return Path(state_dir()) / "prices.json"


def _read(key: str) -> dict[str, Any]:
    """What the file remembers for database `key` ({} when it is missing,
    spoilt, another user's or of another database)."""
    from zapcli.paths import read_private

    raw = read_private(_file(), MAX_BYTES)
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("database") == key and isinstance(
            data.get("models"), dict):
        return data["models"]
    return {}


def _load() -> dict[str, Any]:
    if "models" not in _memo:
        _memo["key"] = key = _database()
        _memo["models"] = _read(key) if key is not None else {}
    return _memo["models"]


def look(model: str) -> Any:
    """The remembered price of `model` ({input, output, cache_read,
    cache_write}), None when the library does not know it, or `MISS`."""
    found = _load().get(model, MISS)
    if found is None or found is MISS:
        return found
    if isinstance(found, dict) and all(isinstance(v, (int, float)) for v in found.values()):
        return found
    return MISS


def answered(model: str | None) -> bool:
    """Whether an earlier process remembered what the library says of
    `model` (its price, or that it has none), as named or after a provider's
    `prefix/`: a runner that will price its calls without the library need
    not load it ahead of its first call. Never raises (False)."""
    try:
        return any(look(name) is not MISS for name in (model or "", (model or "").partition("/")[2])
                   if name)
    except Exception:  # noqa: BLE001 - a prefetch is best effort: load the library
        return False


def _plain(ref: str) -> dict[str, float] | None:
    """The library's price for `ref` when it is plain numbers; checked
    against the library's own total for a probe call."""
    from decimal import Decimal

    from genai_prices import Usage, calc_price, data_snapshot, types

    _, info = data_snapshot.get_snapshot().find_provider_model(ref, None, None, None)
    if not isinstance(info.prices, types.ModelPrice):
        return None  # prices by date or time of day
    given = {k: v for k, v in vars(info.prices).items() if v is not None}
    if not all(isinstance(v, Decimal) for v in given.values()):
        return None  # tiers (the rate of every token changes past a count)
    price = {FIELDS[k]: float(v) for k, v in given.items() if k in FIELDS}
    i, o, r, w = PROBE
    theirs = float(calc_price(Usage(input_tokens=i, output_tokens=o, cache_read_tokens=r,
                                    cache_write_tokens=w), ref).total_price)
    from zapcli.prices import cost

    ours = cost(ref, i, o, r, w, price=price)
    return price if ours is not None and abs(ours - theirs) <= 1e-9 * max(theirs, 1.0) else None


def keep(model: str, ref: str | None) -> None:
    """Remember what the library said of `model` (found as `ref`, or not at
    all: None). Best effort: nothing is remembered when it cannot be."""
    models = _load()
    key = _memo.get("key")
    if key is None:
        return
    try:
        value = _plain(ref) if ref is not None else None
    except (LookupError, ValueError, ImportError, AttributeError, TypeError, ArithmeticError):
        return
    if ref is not None and value is None:
        return  # the library prices it each time
    models[model] = value
    from zapcli.paths import write_private

    # what other runners remembered meanwhile stays (a spoilt file is made again)
    models.update({k: v for k, v in _read(key).items() if k not in models})
    try:
        write_private(_file(), json.dumps({"database": key, "models": models}).encode(),
                      sync=False)
    except OSError:
        pass
