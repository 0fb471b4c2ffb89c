"""Every backend, by name: the one place backend names come from (docs/explanation/rules.md#plugins).

Imports `zapcli.backends.base` and `zapcli.plugins`; a backend's module only
when it is asked for. Three kinds of name:
- built-in: one line each in `BUILTIN` (name -> "module:Class");
- plugin: an entry point in group `zapcli.backends` of another package,
  scanned only when a name is not built in, or for the whole list;
- wrapper: a name config.yaml's `backends:` defines with a `command` and the
  `format` of a CLI backend it speaks (started with that backend's flags).
Every list, help text, completion, enum and error message that names
backends reads them here. `section` validates config.yaml's `backends:`, the
one section this seam owns.
"""

from __future__ import annotations

from zapcli import plugins
from zapcli.backends.base import Backend

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.config import Settings
    from zapcli.trail.model import SpawnRecord

BUILTIN = {
    "zapcli": "zapcli.backends.agent:AgentBackend",
    "sh": "zapcli.backends.shell:ShBackend",
    "claude": "zapcli.backends.clis.claude:ClaudeBackend",
    "codex": "zapcli.backends.clis.codex:CodexBackend",
    "gemini": "zapcli.backends.clis.gemini:GeminiBackend",
    "opencode": "zapcli.backends.clis.opencode:OpencodeBackend",
    "qwen": "zapcli.backends.clis.qwen:QwenBackend",
    "pi": "zapcli.backends.clis.pi:PiBackend",
}
GROUP = "zapcli.backends"
DEFAULT = "zapcli"
SEAM = plugins.Registry(GROUP, Backend, BUILTIN)
Unusable = plugins.Unusable  # installed (a plugin) but cannot be used: the message says why


def get(name: str) -> Backend:
    """The registered backend `name` (built-in or plugin). Raises KeyError for
    a name nobody registered, Unusable for a plugin that cannot be used."""
    return SEAM.get(name)  # type: ignore[no-any-return]


def every() -> dict[str, Backend]:
    """Every usable registered backend by name: the built-ins, then the plugins."""
    return SEAM.every()


def names(configured: dict[str, Any] | None = None) -> tuple[str, ...]:
    """Every backend name: built-ins, plugins, then config.yaml's wrappers."""
    known = tuple(every())
    return known + tuple(sorted(n for n in (configured or {}) if n not in known))



def backend_for(name: str, settings: Settings) -> Any:
    """The backend that does the work of `name` (built-in, plugin, or a
    config.yaml wrapper), for a spawn. Raises UsageError for an unknown name
    (listing the known ones), ZapcliError for a plugin that cannot be used."""
    from zapcli.errors import UsageError, ZapcliError, param

    wrappers = configured(settings)
    try:
        return resolve(name, wrappers)
    except KeyError:
        raise UsageError(f"unknown backend '{name}' for {param('cli')}; choose one of: "
                         f"{', '.join(names(wrappers))} (or define it under "
                         "`backends:` in config.yaml)") from None
    except Unusable as exc:
        raise ZapcliError(str(exc), code="backend_unusable") from None

CONTROL_CACHE = "control-files.json"  # in the state folder: the list, and what it was made from
_control: list[tuple[str, ...]] = []


def control_files() -> tuple[str, ...]:
    """The one list of control files (`zapcli.control`): what no backend owns
    and every registered backend's `control_files`, plugins' included. Made by
    importing every backend (~50 ms), so it is kept in the state folder until a
    built-in backend's source or a folder plugins install into changes; for the
    runner that builds a sandbox or an approver, never for a hot command."""
    if _control:
        return _control[0]
    from zapcli import stdjson
    from zapcli.paths import state_dir, write_private

    key, cache = _fingerprint(), state_dir() / CONTROL_CACHE
    try:
        saved = stdjson.loads(cache.read_text(encoding="utf-8"))
        if saved.get("key") == key and isinstance(saved.get("names"), list):
            _control.append(tuple(str(n) for n in saved["names"]))
            return _control[0]
    except (OSError, ValueError, AttributeError):
        pass
    from zapcli import control

    names = control.names(name for backend in every().values() for name in backend.control_files)
    try:
        write_private(cache, stdjson.dumps({"key": key, "names": list(names)}).encode(), sync=False)
    except OSError:
        pass  # a read-only state folder: made again next time
    _control.append(names)
    return names


def _fingerprint() -> str:
    """What the list is made from: the built-in backends' source files (their
    `control_files` facts) and the folders plugins are installed into (adding,
    upgrading or removing a package changes the folder)."""
    import os
    import sys

    import zapcli

    top = os.path.dirname(os.path.dirname(zapcli.__file__))
    files = {os.path.join(top, *spec.split(":")[0].split(".")) + ".py" for spec in BUILTIN.values()}
    files |= {os.path.join(top, "zapcli", "control.py"), __file__}
    # sys.path[0] is the script's folder or the current one (each runner's
    # workspace): no plugin is installed there, and it would change the key
    installed = sys.path if getattr(sys.flags, "safe_path", False) else sys.path[1:]
    seen = []
    for path in sorted(files) + [d for d in installed if d]:
        try:
            seen.append(f"{path}:{os.stat(path).st_mtime_ns}")
        except OSError:
            continue
    return f"{zapcli.__version__}|" + "|".join(seen)


def problems() -> list[str]:
    """Why each installed backend plugin cannot be used."""
    return SEAM.problems()


def by_format(fmt: Any, *, plugins_too: bool = True) -> Backend | None:
    """The backend whose event stream is `fmt` (a wrapper's `format`): a
    built-in's first, so a wrapper of one never makes anyone scan plugins."""
    if not isinstance(fmt, str):
        return None
    for name in BUILTIN:
        if get(name).event_format == fmt:
            return get(name)
    if plugins_too:
        for backend in every().values():
            if backend.event_format == fmt:
                return backend
    return None


def formats() -> tuple[str, ...]:
    return tuple(b.event_format for b in every().values() if b.event_format)


def _lookup(name: str, fmt: Any) -> Backend:
    """A built-in `name`; else the built-in a wrapper speaking `fmt` wraps;
    else plugin `name`; else the plugin whose format it is. KeyError when
    none, Unusable for a plugin that cannot be used."""
    if name in BUILTIN:
        return get(name)
    backend = by_format(fmt, plugins_too=False)
    if backend is not None:
        return backend
    try:
        return get(name)
    except KeyError:
        backend = by_format(fmt)
        if backend is None:
            raise
        return backend


def resolve(name: str, configured: dict[str, Any] | None = None) -> Backend:
    """The backend that does the work of `name` at spawn: a registered one, or
    for a wrapper config.yaml defines, the one whose format it speaks. Raises
    KeyError for an unknown name, Unusable for a broken plugin."""
    spec = (configured or {}).get(name)
    return _lookup(name, spec.get("format") if isinstance(spec, dict) else None)


def for_spawn(spawn: SpawnRecord) -> Backend:
    """The runner's backend for a spawn record: its `cli`, or for a wrapper
    the CLI whose format its frozen `backend` says it speaks. Raises Unusable
    when neither is there now (a plugin uninstalled since the spawn)."""
    try:
        return _lookup(spawn.cli, (spawn.backend or {}).get("format"))
    except KeyError:
        raise Unusable(f"the backend {spawn.cli!r} it was spawned with is not installed now "
                       "(no built-in, plugin or config.yaml backend has that name)") from None


def configured(settings: Settings) -> dict[str, Any]:
    """config.yaml's `backends:` (validated when the settings were loaded)."""
    value = settings.sections.get("backends")
    return value if isinstance(value, dict) else {}


def section(value: Any) -> dict[str, dict[str, Any]]:
    """Validate config.yaml's `backends:` mapping; raises ValueError saying
    what is wrong. Each entry is checked by the backend it names, or, for a
    new name (a wrapper), by the backend whose `format` it gives."""
    if not isinstance(value, dict):
        raise ValueError("expected a mapping of backend name to {command, format}")
    out: dict[str, dict[str, Any]] = {}
    for name, spec in value.items():
        if not isinstance(name, str) or not plugins.valid_name(name):
            raise ValueError(f"backend name {name!r}: use lower-case letters, digits, - and _")
        fmt = spec.get("format") if isinstance(spec, dict) else None
        try:
            backend = _lookup(name, fmt)
        except Unusable as exc:
            raise ValueError(str(exc)) from None
        except KeyError:
            raise ValueError(f"backends.{name}.format: expected one of "
                             f"{', '.join(formats())}, got {fmt!r}") from None
        out[name] = backend.check_config(name, spec)
    return out
