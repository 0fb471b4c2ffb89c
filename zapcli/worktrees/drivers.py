"""The content filters, merge drivers and configured hooks (git 2.54's
`hook.<name>.command`, which `core.hooksPath` does not reach) a repository's
configuration defines, so zapcli's git can turn each one off by name
(`zapcli.worktrees.git`).

Imports `zapcli.paths`, `zapcli.stdjson` and the standard library. git itself is asked (`git
config --list --show-origin`: includes followed, as git reads them) — one
process, which every command that may run a driver would otherwise pay. The
answer is kept, in this process and in the state folder, with the files it
came from: every file that gave a setting, every `include.path` target (there
or not yet), the repository's `config` and `config.worktree`, and the
user's and the system's config files, each with its size and modification
time; any of them changing, or a different set of config variables in the
environment, asks git again. A configuration with a conditional include
(`includeIf`, which depends on the branch or the folder) is never kept past
the process.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from zapcli import stdjson

CACHE = "git-drivers-2.json"  # in the state folder (-2: configured hooks too)
ENV = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM")
Pairs = tuple[tuple[str, str], ...]
_mine: dict[tuple[str, str], tuple[list[str], list[object], Pairs]] = {}  # files, stamp, pairs


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _candidates(git_dir: str, common_dir: str, env: dict[str, str]) -> list[str]:
    home = env.get("HOME") or os.path.expanduser("~")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [os.path.join(common_dir, "config"), os.path.join(git_dir, "config.worktree"),
            os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config"),
            "/etc/gitconfig", env.get("GIT_CONFIG_GLOBAL") or "", env.get("GIT_CONFIG_SYSTEM") or ""]


def _stamp(files: list[str], env: dict[str, str]) -> list[object]:
    return [[k, env.get(k)] for k in ENV] + [[f, _stat(f)] for f in sorted(set(files)) if f]


def _parse(out: str) -> tuple[Pairs, list[str], bool]:
    """(the overrides, the files the settings came from and include, whether any
    include is conditional) from `git config --list -z --show-origin`."""
    items = out.split("\0")
    pairs: list[tuple[str, str]] = []
    files: list[str] = []
    conditional = False
    for origin, entry in zip(items[0::2], items[1::2], strict=False):
        key, _, value = entry.partition("\n")
        where = origin[5:] if origin.startswith("file:") else ""
        if where:
            files.append(where)
        lower = key.lower()
        section, _, rest = key.partition(".")
        driver, _, leaf = rest.rpartition(".")
        if lower.startswith("includeif."):
            conditional = True
        elif lower == "include.path" and value:
            target = os.path.expanduser(value)
            files.append(target if os.path.isabs(target) or not where
                         else os.path.join(os.path.dirname(where), target))
        elif section.lower() == "filter" and driver:
            pairs += [(f"filter.{driver}.clean", ""), (f"filter.{driver}.smudge", ""),
                      (f"filter.{driver}.process", ""), (f"filter.{driver}.required", "false")]
        elif section.lower() == "merge" and driver and leaf.lower() == "driver":
            pairs.append((f"merge.{driver}.driver", ""))  # git then refuses the merge: nothing runs
        elif section.lower() == "hook" and driver:
            # git 2.54's configured hooks (hook.<name>.command, .event) run whatever
            # core.hooksPath says; one turned off by name runs nothing (older gits ignore it)
            pairs.append((f"hook.{driver}.enabled", "false"))
    return tuple(dict.fromkeys(pairs)), files, conditional


def overrides(git_dir: str, common_dir: str, env: dict[str, str],
              ask: Callable[[], str]) -> Pairs:
    """The overrides that turn off every filter and merge driver of the
    repository (`git_dir`, `common_dir`) as git run with `env` reads its
    configuration; `ask` runs `git config --list -z --show-origin` there."""
    from zapcli.paths import state_dir

    key = (git_dir, common_dir)
    held = _mine.get(key)
    if held is not None and _stamp(held[0], env) == held[1]:
        return held[2]
    path = state_dir() / CACHE
    try:
        saved = stdjson.loads(path.read_text(encoding="utf-8")).get("|".join(key))
    except (OSError, ValueError, AttributeError):
        saved = None
    if isinstance(saved, dict) and isinstance(saved.get("stamp"), list):
        stamp = saved["stamp"]
        files = [str(f[0]) for f in stamp[len(ENV):] if isinstance(f, list) and f]
        if _stamp(files, env) == stamp:
            pairs = tuple((str(k), str(v)) for k, v in saved.get("pairs") or ())
            _mine[key] = (files, stamp, pairs)
            return pairs
    pairs, files, conditional = _parse(ask())
    files += _candidates(git_dir, common_dir, env)
    stamp = _stamp(files, env)
    _mine[key] = (files, stamp, pairs)
    if not conditional:
        _save(path, "|".join(key), stamp, pairs)
    return pairs


def _save(path: object, key: str, stamp: list[object], pairs: Pairs) -> None:
    from pathlib import Path

    from zapcli.paths import write_private

    assert isinstance(path, Path)
    try:
        data = stdjson.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or len(data) > 200:
            data = {}
    except (OSError, ValueError):
        data = {}
    data[key] = {"stamp": stamp, "pairs": [list(p) for p in pairs]}
    try:
        write_private(path, stdjson.dumps(data).encode(), sync=False)
    except OSError:
        pass  # asked again next time
