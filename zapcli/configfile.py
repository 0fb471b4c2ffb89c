"""A config file's YAML as its top-level entries, and those entries kept by
the file's text, so a command whose config file has not changed reads it
without importing or running the YAML parser (that cost every spawn, poll
and list ~15 ms of CPU). Imports `zapcli.paths`, `zapcli.errors`; PyYAML
only when the text is not kept. `zapcli.config` checks the entries.

What is kept for a file is what `zapcli.config` takes from its YAML: each
top-level key with its line and its value. It is found only for the same
path AND the same text, compared whole (so an edit, however small, parses
the file again), and only values JSON gives back exactly are kept (a YAML
date, binary or set, a mapping with keys that are not strings, is parsed
every time). Invalid files are never kept: their errors come from the
parser each time.

The copy lives in the state folder (private to its user, like the trails),
written atomically; one that is missing, damaged, not a regular file or not
ours is a miss, and a copy that cannot be written costs nothing but the
next parse.
"""

from __future__ import annotations

from zapcli import stdjson
from zapcli.errors import ConfigError
from zapcli.paths import read_private, state_dir, write_private

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

VERSION = 1
KEEP = 8  # files kept (a user's config and the workspaces most recently used)
MAX_BYTES = 4 << 20  # a copy larger than this is not read (each file is at most 256 KB)


TOO_DEEP = object()  # a value nested too deeply to be built


class Failed:
    """A value YAML could not build (an unsupported tag): raised when its
    key is one that counts, as the parser raised it."""

    def __init__(self, exc: Exception):
        self.exc = exc


def parse(path: Path, text: str) -> list[tuple[Any, int, Any]]:
    """(key, line, value) of each top-level key of a config file, in order:
    as kept for this very text, else from YAML (and then kept). A value is
    TOO_DEEP or Failed when YAML could not build it. Raises ConfigError for
    what is not YAML or not a mapping."""
    got = entries(path, text)
    if got is not None:
        return got
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a config file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if node is None:
        return []
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{path}:{node.start_mark.line + 1}: the config must be a mapping of keys")
    parsed: list[tuple[Any, int, Any]] = []
    for key_node, value_node in node.value:
        value: Any
        try:
            value = yaml.SafeLoader(yaml.serialize(value_node)).get_single_data()
        except RecursionError:
            value = TOO_DEEP
        except Exception as exc:  # noqa: BLE001 - raised later, if its key counts
            value = Failed(exc)
        parsed.append((key_node.value, key_node.start_mark.line + 1, value))
    if all(isinstance(k, str) and _exact(v) for k, _line, v in parsed):
        keep(path, text, parsed)
    return parsed


def _where() -> Path:
    return state_dir() / "cache" / "config.json"


def _read() -> dict[str, Any]:
    raw = read_private(_where(), MAX_BYTES)
    try:
        doc = stdjson.loads(raw.decode("utf-8", "surrogatepass")) if raw is not None else None
    except ValueError:
        return {}
    if not isinstance(doc, dict) or doc.get("v") != VERSION or not isinstance(doc.get("files"), dict):
        return {}
    return doc["files"]


def entries(path: Path, text: str) -> list[tuple[str, int, Any]] | None:
    """(key, line, value) of each top-level key of the config file `path`
    whose text is `text`, as kept; None when not kept."""
    kept = _read().get(str(path))
    if not isinstance(kept, dict) or kept.get("text") != text or not isinstance(kept.get("entries"), list):
        return None
    out = []
    for item in kept["entries"]:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                and isinstance(item[1], int)):
            return None
        out.append((item[0], item[1], item[2]))
    return out


def keep(path: Path, text: str, parsed: list[tuple[str, int, Any]]) -> None:
    """Keep what the parser gave for `path` with `text`, when JSON gives it
    back exactly (the caller checked: `_exact`); the least recently kept
    go beyond KEEP files."""
    files = _read()
    files.pop(str(path), None)
    files[str(path)] = {"text": text, "entries": [[k, line, v] for k, line, v in parsed]}
    for old in list(files)[:-KEEP]:
        del files[old]
    try:
        write_private(_where(), stdjson.dumps({"v": VERSION, "files": files}).encode(), sync=False)
    except (OSError, ValueError):
        pass  # a read-only or hidden state folder: the next command parses again


def _exact(value: Any) -> bool:
    """Whether JSON gives `value` back equal and of the same types."""
    if value is None or type(value) in (str, bool, int, float):
        return True
    if type(value) is list:
        return all(_exact(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _exact(v) for k, v in value.items())
    return False
