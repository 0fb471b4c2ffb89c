"""Valid definitions kept by their file's bytes, so a spawn whose definition
files have not changed builds each Definition without importing or running
the YAML loader and the schema (they were most of a built-in agent's spawn).
Imports `zapcli.paths`, `zapcli.definitions.model`; json.

What is kept for a file is the Definition its bytes gave, in its frozen form
(`to_dict`, which `from_dict` gives back equal, checked before it is kept).
It is found only for the same file, layer and source, the same bytes
compared whole (an edit, however small, parses the file again), and the same
validating code: the stat of each module the schema runs (this room's, the
tools registry's names, the size parser) and zapcli's version are part of
the key, so an upgrade or an edited checker validates every file again.
Only valid files are kept: a broken one's diagnostics come from the parser
every time, with their lines and columns. Where a file may be read at all
(workspace trust) is decided before this is asked.

Like the config cache (`zapcli.configfile`): the copy lives in the state
folder (private to its user, like the trails), written atomically; one that
is missing, damaged, not a regular file or not ours is a miss, and a copy
that cannot be written costs nothing but the next parse.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from zapcli.definitions.model import Definition
from zapcli.paths import read_private, state_dir, write_private

VERSION = 1
KEEP = 64  # files kept (the built-ins, a user's own, the workspaces most recently used)
MAX_BYTES = 8 << 20  # a copy larger than this is not read
_PACKAGE = Path(__file__).resolve().parent.parent  # zapcli/
# What decides whether bytes are a valid definition, and which: a change to any
# of these (an upgrade, an edit of a checker) validates every file again.
_CODE = ("__init__.py", "sizes.py", "tools/registry.py", *(f"definitions/{n}" for n in (
    "__init__.py", "checker.py", "kept.py", "model.py", "sandbox_schema.py", "schema.py",
    "toolnames.py", "yamlload.py")))


def _stamp() -> str:
    parts = []
    for name in _CODE:
        try:
            st = os.stat(_PACKAGE / name)
        except OSError:
            parts.append(f"{name}:-")
            continue
        parts.append(f"{name}:{st.st_mtime_ns}:{st.st_size}:{st.st_ino}")
    from zapcli import __version__

    return f"{__version__} " + " ".join(parts)


def _where() -> Path:
    return state_dir() / "cache" / "definitions.json"


def _key(file: str, layer: str, source: str | None) -> str:
    return f"{layer}\0{file}\0{'' if source is None else source}"


class Kept:
    """The kept definitions as read once for a discovery; `found` and `keep`
    per file, `save` once at the end (only when something was added)."""

    def __init__(self) -> None:
        self.stamp = _stamp()
        self.files = self._read()
        self.added = False

    def _read(self) -> dict:
        raw = read_private(_where(), MAX_BYTES)
        try:
            doc = json.loads(raw) if raw is not None else None
        except ValueError:
            return {}
        if (not isinstance(doc, dict) or doc.get("v") != VERSION or doc.get("code") != self.stamp
                or not isinstance(doc.get("files"), dict)):
            return {}
        return doc["files"]

    def found(self, raw: bytes, file: str, layer: str, source: str | None) -> Definition | None:
        """The Definition these very bytes gave, as kept; None when not kept."""
        kept = self.files.get(_key(file, layer, source))
        if not isinstance(kept, dict) or not isinstance(kept.get("definition"), dict):
            return None
        try:
            if kept.get("text") != raw.decode("utf-8"):
                return None
            return Definition.from_dict(kept["definition"])
        except (UnicodeDecodeError, ValueError):
            return None

    def keep(self, raw: bytes, file: str, layer: str, source: str | None,
             definition: Definition) -> None:
        """Keep the valid Definition `raw` gave (when its frozen form gives it back equal)."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return
        frozen = definition.to_dict()
        try:
            if Definition.from_dict(json.loads(json.dumps(frozen))) != definition:
                return
        except (TypeError, ValueError):
            return
        key = _key(file, layer, source)
        self.files.pop(key, None)
        self.files[key] = {"text": text, "definition": frozen}
        self.added = True

    def save(self) -> None:
        if not self.added:
            return
        files = dict(list(self.files.items())[-KEEP:])
        try:
            write_private(_where(), json.dumps({"v": VERSION, "code": self.stamp, "files": files}
                                               ).encode(), sync=False)
        except (OSError, ValueError):
            pass  # a read-only or hidden state folder: the next spawn parses again
