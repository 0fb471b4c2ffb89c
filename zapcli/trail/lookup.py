"""Which subagent a short id names (docs/explanation/rules.md#ids-and-sessions): the 8-hex tail of an id, or —
as git and docker take a unique start of a hash — 4 to 7 of its first hex
digits, when exactly one subagent's id has it; and, when none or several do,
why, in words that say how ids are written.

Imports `zapcli.ids`, `zapcli.paths`, `zapcli.trail.removals`. Reads only the
subagents folder's names (and, for a tail no subagent has, the removal notes').
"""

from __future__ import annotations

import os

from zapcli import ids
from zapcli.paths import subagents_dir
from zapcli.trail import removals

__all__ = ["resolve", "why_not"]

MIN_PREFIX = 4  # as git: fewer hex digits would match by chance too often to be meant
_HEX = frozenset("0123456789abcdef")


def _ids_with_tail(part: object) -> list[str]:
    """The ids whose 8-hex tail is `part`, or starts with it (4 to 7 hex
    digits); none when `part` is no such tail."""
    if not (isinstance(part, str) and MIN_PREFIX <= len(part) <= 8 and _HEX.issuperset(part)):
        return []
    try:  # `sa_YYYYMMDD_<tail>.jsonl`: the tail is name[-14:-6]
        return [n[:-6] for n in os.listdir(subagents_dir())
                if n.endswith(".jsonl") and n[-14:-6].startswith(part) and ids.is_valid(n[:-6])]
    except OSError:
        return []


def removed_with_tail(part: str) -> list[str]:
    """The removed ids (their removal notes, `trail.removals`) whose tail is
    `part` or starts with it."""
    try:
        names = os.listdir(removals.folder())
    except OSError:
        return []
    suffix = removals.SUFFIX
    return [n[:-len(suffix)] for n in names if n.endswith(suffix)
            and n[:-len(suffix)][-8:].startswith(part) and ids.is_valid(n[:-len(suffix)])]


def resolve(value: str) -> str:
    """The full id for `value`: itself, or the one id whose 8-hex tail it is
    or starts with (docs/explanation/rules.md#ids-and-sessions: the tail is accepted wherever an id is, when
    exactly one subagent has it; like git and docker, a unique start of it
    of 4 or more digits too). Anything else comes back unchanged, to be
    refused."""
    if ids.is_valid(value):
        return value
    found = _ids_with_tail(value)
    return found[0] if len(found) == 1 else value


def why_not(part: object) -> str:
    """Why `part` names no subagent, and how ids are written."""
    found = _ids_with_tail(part)
    if len(found) > 1:
        return f"{len(found)} subagents' ids end in {part}…: give more of it, or the whole id"
    if isinstance(part, str) and _HEX.issuperset(part) and 0 < len(part) <= 8:
        if len(part) < MIN_PREFIX:
            return (f"too short: give at least {MIN_PREFIX} of an id's last 8 hex digits, or "
                    "the whole id")
        removed = removed_with_tail(part)
        words = removals.gone(removed[0]) if len(removed) == 1 else None
        if words:  # its files went: said as every command says a removed id
            return f"{removed[0]}: {words}"
        return f"no subagent's id ends in {part}" + ("…" if len(part) < 8 else "")
    return ("not a subagent id: ids look like sa_20260101_0badc0de, and their last 8 hex "
            f"digits (or a unique start of them, {MIN_PREFIX} or more) stand for them")
