"""Trail trimming (docs/explanation/rules.md#retention): a trail over 5 MB becomes about 1 MB — at exit
by retention, and while it runs by its own writer (`TrailWriter`), so a
runaway subagent's trail stays bounded.

Imports `zapcli.trail.records`, `zapcli.trail.store`. What `replay` and
`continue` need is kept: the last `keep / 2` bytes verbatim; before them,
every record that says what happened (its spawn, process, start, the CLI
session, tree, helpers, approvals, steering, statuses, the report, hooks)
whole, and the conversation (text, tool calls and results) with the long
tool results and arguments folded; only if that is still too much are the
oldest conversation records and diagnostics dropped (so what is kept of it is
a contiguous run), and their token usage summed into the
`trimmed` marker, so totals stay right. The marker stands where records
were dropped, with the seq of the last one dropped (seqs stay unique and in
order); when nothing was dropped it follows the last record, with the next
seq. The rewrite is atomic (temp file in the same folder + os.replace); a
copy a killed trim left is removed by the next trim of that trail, by `rm`
(`copies`) and by `gc` (`stale`).
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.paths import FILE_MODE
from zapcli.trail import records, store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TRIM_OVER_BYTES = 5 * 1024 * 1024
KEEP_BYTES = 1024 * 1024
# Dropped (oldest first) only when folding was not enough; everything else is kept whole.
DROPPABLE = frozenset({"text", "thinking", "tool_call", "tool_result", "diagnostic", "usage"})
FOLD_RESULT_BYTES = 1024  # an old tool result's content, folded to about this
FOLD_ARGS_BYTES = 4096  # an old tool call's long argument strings
USAGE_KEYS = ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens")


def trim(path: Path, *, over: int = TRIM_OVER_BYTES, keep: int = KEEP_BYTES) -> int:
    """Trim `path` if larger than `over` bytes. Returns bytes dropped (0 = untouched).
    The caller holds the trail's lock, or nobody else writes it."""
    if os.stat(path, follow_symlinks=False).st_size <= over:
        return 0
    data, _skipped = store.read_bounded(path)  # a damaged giant: its head and tail
    body = rewrite(data, keep)
    for stale in copies(path):  # a trim killed halfway (its lock was ours to take)
        stale.unlink(missing_ok=True)
    tmp = path.with_name(f".{path.name}.trim-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        store.write_all(fd, body)
        os.fsync(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk: no half copy left behind
        raise
    finally:
        os.close(fd)
    return max(len(data) - len(body), 0)


COPY = ".trim-"  # `.<trail>.trim-<pid>`: a trim's copy before it replaces the trail


def copies(path: Path) -> list[Path]:
    """The copies trims of `path` began (a live one's too: the caller holds
    the trail's lock, or asks `stale`)."""
    prefix = f".{path.name}{COPY}"
    try:
        return [path.with_name(n) for n in os.listdir(path.parent) if n.startswith(prefix)]
    except OSError:
        return []


def stale(folder: Path, names: list[str] | None = None) -> list[Path]:
    """Every trim copy in `folder` whose process is gone: left by a trim that
    was killed (SIGKILL, a power cut) between making it and the rename.
    `names`: the folder's listing, made already."""
    out = []
    if names is None:
        try:
            names = os.listdir(folder)
        except OSError:
            return []
    for name in names:
        head, sep, pid = name.rpartition(COPY)
        if not (sep and head.startswith(".") and head.endswith(".jsonl") and pid.isdigit()):
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            out.append(folder / name)
        except (PermissionError, OverflowError):  # another user's live process, or no pid at all
            continue
    return out


def _parse(lines: list[bytes]) -> list[tuple[bytes, dict[str, Any] | None]]:
    import orjson  # a trail over `over` bytes: worth its import

    out = []
    for line in lines:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            rec = None
        out.append((line, rec if isinstance(rec, dict) else None))
    return out


def rewrite(data: bytes, keep: int) -> bytes:
    """The trimmed trail of `data` (see the module docstring), about `keep` bytes."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    tail_at, size = len(lines), 0
    while tail_at > 1 and size + len(lines[tail_at - 1]) + 1 <= keep // 2:
        tail_at -= 1
        size += len(lines[tail_at]) + 1
    old = [(line, rec) for line, rec in _parse(lines[:tail_at]) if rec is not None]
    old = [_folded(line, rec) for line, rec in old]
    budget = keep - size - 512
    room = sum(len(line) + 1 for line, _rec in old)
    dropped: list[dict[str, Any]] = []
    kept: list[tuple[bytes, dict[str, Any]]] = []
    for i, (line, rec) in enumerate(old):
        if room > budget and i > 0 and rec.get("type") in DROPPABLE:
            room -= len(line) + 1
            dropped.append(rec)
        else:
            kept.append((line, rec))
    cut = _first_after(kept, dropped)
    head = b"".join(line + b"\n" for line, _rec in kept[:cut])
    rest = b"".join(line + b"\n" for line, _rec in kept[cut:]) + b"".join(x + b"\n" for x in lines[tail_at:])
    marker = _marker(dropped, lines[tail_at:], old, len(data) - len(head) - len(rest))
    return head + marker + rest if dropped else head + rest + marker


def _folded(line: bytes, rec: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """`rec` with its long conversation fields folded (the line re-encoded
    only when something changed)."""
    rtype = rec.get("type")
    changed = False
    if rtype == "tool_result" and isinstance(rec.get("content"), str):
        short = records.fold_text(rec["content"], FOLD_RESULT_BYTES)
        changed = short != rec["content"]
        rec["content"] = short
    elif rtype == "tool_call" and len(line) > FOLD_ARGS_BYTES:
        args = records._fold_strings(rec.get("arguments"), FOLD_ARGS_BYTES)
        changed = args != rec.get("arguments")
        rec["arguments"] = args
    if not changed:
        return line, rec
    return records.encode(rec, [])[:-1], rec


def _first_after(kept: list[tuple[bytes, dict[str, Any]]], dropped: list[dict[str, Any]]) -> int:
    """Where the marker goes among the kept records: after every kept record
    older than the last dropped one."""
    if not dropped:
        return len(kept)
    last = _seq(dropped[-1])
    return sum(1 for _line, rec in kept if _seq(rec) <= last)


def _seq(rec: dict[str, Any]) -> int:
    seq = rec.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else -1


def _marker(dropped: list[dict[str, Any]], tail: list[bytes], old: list[tuple[bytes, dict[str, Any]]],
            saved: int) -> bytes:
    """The `trimmed` record; `saved`: the bytes the rewrite saved before the
    marker itself is counted (its dropped_bytes is what it saved in all)."""
    fields: dict[str, Any] = {"dropped_bytes": 0, "dropped_records": len(dropped)}
    usage = {k: sum(_int(r.get(k)) for r in dropped if r.get("type") == "usage") for k in USAGE_KEYS}
    calls = sum(1 for r in dropped if r.get("type") == "usage")
    if calls:
        fields["usage"] = usage
        usage["calls"] = calls
        costs = [r["cost_usd"] for r in dropped if r.get("type") == "usage"
                 and isinstance(r.get("cost_usd"), (int, float)) and not isinstance(r.get("cost_usd"), bool)]
        if costs:
            usage["cost_usd"] = sum(costs)
    if dropped:
        seq = _seq(dropped[-1])
    else:  # after the last record: the next seq
        seqs = [_seq(rec) for _line, rec in old] + [_seq(rec) for _line, rec in _parse(tail[-64:]) if rec]
        seq = max(seqs, default=0) + 1
    rec = records.make("trimmed", max(seq, 0), fields)
    line = records.encode(rec, [])
    for _ in range(3):  # the count's own digits change the marker's length; settles at once
        fields["dropped_bytes"] = rec["dropped_bytes"] = max(saved - len(line), 0)
        line = records.encode(rec, [])
    return line


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
