"""Ranked line search over files with hard budgets, shared by kb_search and memory_search.
Imports only the standard library and `zapcli.boundedread`.

Lines are scanned in memory and scored by how many query terms they contain;
the best hits come back as `path:line: text`. Budgets are explicit and every
truncation is said in the result (docs/explanation/rules.md#undeclared-means-unreachable: 8 MiB read, 50 hits, 400 chars).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from zapcli.boundedread import read_at_most

MAX_BYTES = 8 * 1024 * 1024
MAX_HITS = 50
MAX_LINE = 400
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class SearchResult:
    """Hits best first: (label, line number 1-based, text already cut to the line budget)."""

    hits: list[tuple[str, int, str]] = field(default_factory=list)
    matched_lines: int = 0
    files_total: int = 0
    files_read: int = 0
    bytes_read: int = 0
    byte_budget_hit: bool = False  # a file was left unread or read only in part
    files_partial: int = 0  # files read only up to the byte budget
    lines_cut: int = 0
    binary_skipped: int = 0
    max_hits: int = MAX_HITS
    max_bytes: int = MAX_BYTES
    max_line: int = MAX_LINE

    def render(self, query: str) -> str:
        """The tool answer: one `path:line: text` per hit, then explicit budget notes."""
        if not self.hits and not query_terms(query):
            out = [f"{query!r} has no words to search for: kb_search and memory_search match "
                   "words, not patterns; give one or more words"]
        elif not self.hits:
            out = [f"no lines match {query!r} in {self.files_read} file(s)"]
        else:
            out = [f"{label}:{line}: {text}" for label, line, text in self.hits]
        if self.matched_lines > len(self.hits):
            out.append(f"[truncated: {self.matched_lines} lines matched; showing the best "
                       f"{len(self.hits)} (hit budget {self.max_hits})]")
        if self.byte_budget_hit:
            part = f", {self.files_partial} in part" if self.files_partial else ""
            out.append(f"[truncated: stopped after reading {_size(self.max_bytes)}; "
                       f"{self.files_read - self.files_partial} of {self.files_total} file(s) "
                       f"searched in full{part}; narrow the search to see the rest]")
        if self.lines_cut:
            out.append(f"[{self.lines_cut} hit line(s) cut at {self.max_line} characters (…)]")
        if self.binary_skipped:
            out.append(f"[{self.binary_skipped} binary file(s) skipped]")
        return "\n".join(out)


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n} bytes"


def query_terms(query: str) -> list[str]:
    """Lower-cased distinct words of the query (single letters dropped unless alone)."""
    words = [w.lower() for w in _WORD.findall(query)]
    long_words = [w for w in words if len(w) > 1] or words
    return list(dict.fromkeys(long_words))


def score_line(low_line: str, terms: list[str], phrase: str) -> int:
    """0 when no term occurs; more for more distinct terms, terms found as whole
    words ("kill" in "kill it" beats "kill" inside "skills"), repeats and the
    exact phrase."""
    distinct = whole = repeats = 0
    words: set[str] | None = None
    for term in terms:
        count = low_line.count(term)
        if count:
            distinct += 1
            repeats += min(count, 3)
            if words is None:
                words = set(_WORD.findall(low_line))
            whole += term in words
    if not distinct:
        return 0
    bonus = 5 if len(terms) > 1 and phrase and phrase in low_line else 0
    return distinct * 10 + whole * 4 + repeats + bonus


def search_files(files: Iterable[tuple[str, Any]], query: str, *, max_bytes: int = MAX_BYTES,
                 max_hits: int = MAX_HITS, max_line: int = MAX_LINE,
                 read: Callable[[Any, int], bytes] = read_at_most) -> SearchResult:
    """Scan `(label, path)` files in order until `max_bytes` are read; keep the best
    `max_hits` lines (ties: earlier file, earlier line). `read(path, limit)`
    gives at most `limit + 1` bytes of a file (the caller's view of where files
    may be opened); unreadable files are skipped."""
    files = list(files)
    result = SearchResult(files_total=len(files), max_hits=max_hits, max_bytes=max_bytes,
                          max_line=max_line)
    terms = query_terms(query)
    if not terms:
        return result
    phrase = " ".join(query.lower().split())
    heap: list[tuple[int, int, str, int, str]] = []
    seq = 0
    for label, path in files:
        remaining = max_bytes - result.bytes_read
        if remaining <= 0:
            result.byte_budget_hit = True
            break
        try:
            data = read(path, remaining)
        except (OSError, ValueError):
            continue
        if len(data) > remaining:  # the budget ends inside this file: keep whole lines only
            data = data[:remaining]
            cut = data.rfind(b"\n")
            data = data[: cut + 1] if cut >= 0 else b""
            result.byte_budget_hit = True
            result.files_partial += 1 if b"\0" not in data[:8192] else 0
        result.bytes_read += len(data)
        if b"\0" in data[:8192]:
            result.binary_skipped += 1
            continue
        result.files_read += 1
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            score = score_line(line.lower(), terms, phrase)
            if not score:
                continue
            result.matched_lines += 1
            seq += 1
            item = (score, -seq, label, number, line.strip()[: max_line + 1])
            if len(heap) < max_hits:
                heapq.heappush(heap, item)
            elif item > heap[0]:
                heapq.heapreplace(heap, item)
        if result.byte_budget_hit:
            break
    for _score, _seq, label, number, text in sorted(heap, reverse=True):
        if len(text) > max_line:
            text = text[: max_line - 1] + "…"
            result.lines_cut += 1
        result.hits.append((label, number, text))
    return result
