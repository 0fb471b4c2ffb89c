"""`doctor`: one line per check, with its problems under it."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines
from zapcli.render.docschema import stamp


def lines(checks: list[Any]) -> Lines:
    out: Lines = []
    for c in checks:
        word, style = ("FAIL", "red") if not c.ok else ("WARN", "yellow") if c.warning else ("ok  ", "green")
        out.append((style, f"{word} {c.name}: {c.detail}"))
        out.extend(("", f"    {p}") for p in c.problems)
    return out


def doc(checks: list[Any]) -> dict[str, Any]:
    return stamp("doctor", {"ok": all(c.ok for c in checks), "checks": [vars(c) for c in checks]})
