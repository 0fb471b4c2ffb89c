"""Tool names a definition may declare: canonical spelling, refusals, suggestions.
Imports zapcli.tools.registry (names only: GRANTABLE and the never-grantable list).

docs/explanation/rules.md#built-in-tools lists the grantable built-in tools; names match case-insensitively and
are stored in the canonical spelling below. docs/explanation/rules.md#undeclared-means-unreachable lists what is never grantable.
"""

from __future__ import annotations

# The grantable set and the refusal list live in the tools room's registry (one
# place for both rooms); this module adds only suggestions and a few prefixes.
from zapcli.tools.registry import GRANTABLE, canonical_name
from zapcli.tools.registry import never_grantable_reason as _registry_reason

_CANONICAL = {name.lower(): name for name in GRANTABLE}

# Names other agent tools use, mapped to ours: only ever offered as suggestions,
# never accepted silently (an unknown name is a diagnostic).
_SYNONYMS = {
    "search": "grep", "find": "glob", "ls": "glob", "list": "glob", "cat": "read",
    "view": "read", "open": "read", "shell": "bash", "sh": "bash", "run": "bash",
    "exec": "bash", "terminal": "bash", "bashoutput": "task_output",
    "killshell": "task_stop", "killbash": "task_stop", "multiedit": "edit",
    "replace": "edit", "create": "write", "fetch": "WebFetch", "http": "WebFetch",
    "todowrite": "todo", "todos": "todo", "skill": "use_skill", "skills": "use_skill",
    "notebookedit": "edit", "websearchtool": "WebSearch",
}


def canonical_tool(name: str) -> str | None:
    """The canonical spelling of a grantable tool (`webfetch` → `WebFetch`), else None."""
    return canonical_name(name)


def never_grantable_reason(name: str) -> str | None:
    """Why `name` can never be granted by name, or None when it is not such a name."""
    reason = _registry_reason(name)
    if reason:
        return reason
    low = name.strip().lower()
    if low.startswith("mcp:"):
        return _registry_reason("mcp__")
    if low.startswith(("agents_", "definition")):
        return _registry_reason("agents")
    return None


def edits(a: str, b: str) -> int:
    """How many single edits (insert, delete, replace, swap two neighbours) turn a into b."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def closest(word: str, candidates: list[str]) -> str | None:
    """The candidate `word` most likely misspells, or None when none is close: at
    most one edit away for a word of up to 5 characters, two for a longer one
    (case-insensitive). A did-you-mean far from what was typed (`nope` → `open`,
    an anagram) misleads more than it helps."""
    low = word.strip().lower()
    allowed = 1 if len(low) <= 5 else 2
    best, best_edits = None, allowed + 1
    for cand in candidates:
        n = edits(low, cand.lower())
        if n < best_edits:
            best, best_edits = cand, n
    return best


def suggest_tool(name: str) -> str | None:
    """The grantable tool a misspelt `name` most likely means (`Serch` → `grep`), or None.

    Close matches only (`closest`) over the canonical names and well-known
    synonyms, case-insensitive; a synonym match suggests the tool it stands for.
    """
    best = closest(name, list(_CANONICAL) + list(_SYNONYMS))
    if best is None:
        return None
    return _CANONICAL.get(best) or _SYNONYMS[best]
