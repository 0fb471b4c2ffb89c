"""One registry per seam, and the third-party plugins in it: backends and
executors other packages add through entry points (`zapcli.backends`,
`zapcli.executors`).

Imports `zapcli.errors` and the standard library; `importlib.metadata` only when a group
is first scanned and an installed distribution may declare it (`may_declare`), so a
command that names a built-in, or lists a seam nobody adds to, never pays for it.
An entry point `NAME = package.module:Class` adds the backend (or executor)
NAME; the class must derive from the seam's base class and take no
arguments. A plugin that cannot be used — it does not import, names
something else than such a class, its constructor raises, it takes a
built-in's name — is one warning on stderr naming it and its package, once
per process, and is left out: it never fails a command that does not ask
for it by name (asking for it says why it cannot be used). `Registry` is a
seam's names: its built-ins (one line each, imported when asked for), then
its plugins.
"""

from __future__ import annotations

import os
import sys

from zapcli.errors import ZapcliError

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

_LATER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def valid_name(name: str) -> bool:
    """A plugin's or backend's name: a lower-case letter, then up to 31
    lower-case letters, digits, - and _ (checked without `re`: a spawn reads
    the backend table, and `re` would be its one user on that path)."""
    return (0 < len(name) <= 32 and "a" <= name[0] <= "z" and name.isascii()
            and _LATER_CHARS.issuperset(name[1:]))


_scanned: dict[str, dict[str, Any]] = {}  # group -> name -> entry point
_loaded: dict[tuple[str, str], Any] = {}  # (group, name) -> instance, or the reason it is unusable
_warned: set[tuple[str, str]] = set()


class Unusable(ZapcliError):
    """A plugin that is installed but cannot be used; the message says why
    (a command that needs it says so as its one error, exit 1)."""

    code = "plugin"


def entry_points(group: str) -> dict[str, Any]:
    """The group's entry points by name, scanned once per process."""
    found = _scanned.get(group)
    if found is None:
        found = {}
        if may_declare(group):
            from importlib.metadata import entry_points as scan

            for ep in sorted(scan(group=group), key=lambda e: e.name):
                found.setdefault(ep.name, ep)  # two packages, one name: the first (by name) wins
        _scanned[group] = found
    return found


def may_declare(group: str) -> bool:
    """Whether an installed distribution may declare entry points of `group`:
    False only when every `entry_points.txt` that importlib.metadata would
    read is read here and none names it. Importing importlib.metadata (email,
    zipfile, csv...) and its scan cost a spawn more than everything else it
    resolves (~45 ms of CPU), for groups almost nobody declares. What this
    cannot see as importlib.metadata does (an archive on sys.path, a finder
    of distributions of its own) answers True, and importlib.metadata decides."""
    from importlib.machinery import PathFinder

    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return True
    needle = group.encode()  # its section header, however spaced
    for entry in sys.path:
        root = entry or "."
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):  # a zip archive: importlib.metadata reads inside it
                return True
            continue
        egg = os.path.basename(root).lower().endswith(".egg")
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")) or (egg and low == "egg-info"):
                try:
                    with open(os.path.join(root, child, "entry_points.txt"), "rb") as fh:
                        if needle in fh.read():
                            return True
                except (FileNotFoundError, NotADirectoryError):
                    continue
                except OSError:  # there but unreadable here: let importlib.metadata say
                    return True
    return False


def _origin(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return f"package {dist.name}" if dist is not None else f"entry point {ep.value}"


def _make(ep: Any, base: type, reserved: tuple[str, ...]) -> Any:
    """A fresh instance of entry point `ep`. Raises Unusable saying why."""
    what = f"{ep.group} plugin '{ep.name}' ({_origin(ep)})"
    if not valid_name(ep.name):
        raise Unusable(f"{what}: its name is not valid (lower-case letters, digits, - and _)")
    if ep.name in reserved:
        raise Unusable(f"{what} is not used: a built-in has that name")
    try:
        cls = ep.load()
    except Exception as exc:  # noqa: BLE001 - whatever its import raises is its problem, said once
        raise Unusable(f"{what} does not import: {type(exc).__name__}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise Unusable(f"{what}: {ep.value} is not a {base.__module__}.{base.__name__} subclass")
    try:
        obj: Any = cls()
    except Exception as exc:  # noqa: BLE001 - as above
        raise Unusable(f"{what}: creating {cls.__name__}() raised {type(exc).__name__}: {exc}") from None
    obj.name = ep.name  # the name it is registered under is the one users type
    return obj


def get(group: str, name: str, base: type, reserved: tuple[str, ...] = ()) -> Any | None:
    """Plugin `name` of `group` (one instance per process), None when no
    package provides it. Raises Unusable when one does but it cannot be used."""
    key = (group, name)
    if key not in _loaded:
        ep = entry_points(group).get(name)
        if ep is None:
            return None
        try:
            _loaded[key] = _make(ep, base, reserved)
        except Unusable as exc:
            _loaded[key] = exc
    got = _loaded[key]
    if isinstance(got, Unusable):
        raise got
    return got


def every(group: str, base: type, reserved: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every usable plugin of `group` by name; each unusable one is warned
    about (once) and left out."""
    out = {}
    for name in entry_points(group):
        try:
            obj = get(group, name, base, reserved)
        except Unusable as exc:
            warn(group, name, str(exc))
            continue
        if obj is not None:
            out[name] = obj
    return out


def problems(group: str) -> list[str]:
    """Why each unusable plugin of `group` cannot be used (after `every`)."""
    return [str(v) for (g, _n), v in sorted(_loaded.items()) if g == group and isinstance(v, Unusable)]


def warn(group: str, name: str, message: str) -> None:
    """One line on stderr, once per plugin and process."""
    if (group, name) in _warned:
        return
    _warned.add((group, name))
    safe = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in message)
    try:
        sys.stderr.write(f"zapcli: warning: {safe}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # no stderr left: the command goes on
        pass


class Registry:
    """One seam: `builtin` (name -> "module:Class", each made once, when first
    asked for), then the plugins of entry-point group `group`, instances of
    `base`."""

    def __init__(self, group: str, base: type, builtin: dict[str, str]):
        self.group, self.base, self.builtin = group, base, builtin
        self._made: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        """The one called `name`. Raises KeyError when nobody registered it,
        Unusable for a plugin that cannot be used."""
        if name in self.builtin:
            made = self._made.get(name)
            if made is None:
                from importlib import import_module

                module, _, cls = self.builtin[name].partition(":")
                made = self._made[name] = getattr(import_module(module), cls)()
            return made
        found = get(self.group, name, self.base, reserved=tuple(self.builtin))
        if found is None:
            raise KeyError(name)
        return found

    def every(self) -> dict[str, Any]:
        """Every usable one by name: the built-ins, then the plugins (an
        unusable one is warned about once and left out)."""
        out = {name: self.get(name) for name in self.builtin}
        out.update(every(self.group, self.base, reserved=tuple(self.builtin)))
        return out

    def problems(self) -> list[str]:
        """Why each installed plugin of the seam cannot be used."""
        self.every()
        return problems(self.group)
