"""The scrubbed environment given to commands the model runs (docs/explanation/rules.md#built-in-tools).
Imports: stdlib only.

An allowlist, not a denylist: PATH, HOME, LANG, LC_*, TERM, TMPDIR (TMP, TEMP:
the subagent's own scratch folder), USER, SHELL, TRACEPARENT, TRACESTATE,
plus the names a definition lists under `env`. A name that looks like a secret
(contains KEY, TOKEN, SECRET or PASSWORD, any case) passes only when listed
explicitly. OPENAI_API_KEY — the model's own key — never passes, even when
listed: the model must not be able to read the credential it runs on. Callers
whose provider reads its key from another variable pass it in `deny_names`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

BASE_NAMES = ("PATH", "HOME", "LANG", "TERM", "TMPDIR", "TMP", "TEMP", "USER", "SHELL",
              "ZAPCLI_SUBAGENT_ID",  # the runner's marker: what a command leaves detached is found
              "TRACEPARENT", "TRACESTATE")  # W3C trace context: what a command emits joins the tree
BASE_PREFIXES = ("LC_",)
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
NEVER_PASSED = frozenset({"OPENAI_API_KEY"})


def looks_secret(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def scrubbed_env(source: Mapping[str, str], extra_names: Iterable[str] = (), *,
                 deny_names: Iterable[str] = ()) -> dict[str, str]:
    """The subset of `source` a model-run command may see.

    `extra_names`: exact variable names declared by the definition (`env:`).
    `deny_names`: names never passed whatever else says (e.g. the provider's
    key variable when it is not OPENAI_API_KEY).
    """
    explicit = {n for n in extra_names if isinstance(n, str) and n}
    denied = NEVER_PASSED | {n for n in deny_names if n}
    out: dict[str, str] = {}
    for name, value in source.items():
        if name in denied:
            continue
        base = name in BASE_NAMES or name.startswith(BASE_PREFIXES)
        if name in explicit or (base and not looks_secret(name)):
            out[name] = value
    return out
