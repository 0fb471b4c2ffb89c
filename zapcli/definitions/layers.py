"""Discovery in layers (docs/explanation/rules.md#definition-layers) and resolution by name. Imports the definitions room,
zapcli.paths, zapcli.errors, zapcli.boundedread, zapcli.trust; importlib.metadata only when an
installed distribution names the plugin group; the YAML loader and schema only for a file whose
bytes are not kept (`zapcli.definitions.kept`); the switches' SQLite store only to resolve.

Load order: built-in → plugin (`zapcli.subagents` entry points, `plugin-id:name`)
→ system (`<config>/subagents`) → workspace (`<workspace>/.zapcli/subagents`).
A workspace file is loaded only while its folder's trust covers its content
(`zapcli.trust`): an untrusted one is not an entry at all, so it shadows no
built-in.
A later layer shadows an earlier one by name; a broken file is one entry with
diagnostics that never hides the others — but it does shadow an earlier
definition of the same name, so a broken override is never replaced silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from zapcli import trust
from zapcli.boundedread import read_at_most
from zapcli.definitions.kept import Kept
from zapcli.definitions.model import LAYERS, MAX_FILE_BYTES, Definition, Diagnostic
from zapcli.errors import NotFound, ZapcliError
from zapcli.paths import config_dir
from zapcli.plain import field, plain
from zapcli.plugins import may_declare
from zapcli.trust import DEFINITIONS

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.definitions.store import Switches

DEFAULT_AGENT = "general"
PLUGIN_GROUP = "zapcli.subagents"
SUFFIXES = (".yml", ".yaml")
_NAME_LINE = re.compile(r"^name:\s*['\"]?([a-z0-9][a-z0-9-]*)['\"]?\s*(?:#.*)?$", re.M)


@plain
class Entry:
    """One definition file as found: valid (`definition` set) or broken (`diagnostics`)."""

    name: str
    layer: str
    file: str
    definition: Definition | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def system_dir() -> Path:
    return config_dir() / "subagents"


def workspace_dir(workspace: Path) -> Path:
    return workspace / DEFINITIONS


def _workspace_entries(workspace: Path, kept: Kept | None = None) -> tuple[list[Entry], list[Path]]:
    """The workspace layer: (entries of the files its trust covers, made from
    the very bytes whose hash was checked; the files it does not cover)."""
    files = _folder_files(workspace_dir(workspace))
    if not files:
        return [], []
    verdict = trust.verdict(workspace)
    entries, untrusted = [], []
    for path in files:
        raw = verdict.read(f"{DEFINITIONS}/{path.name}")
        if raw is None:
            untrusted.append(path)
        else:
            entries.append(load_entry(raw[:MAX_FILE_BYTES + 1], str(path), "workspace", kept=kept))
    return entries, untrusted


def guess_name(text: str | None, file: str) -> str:
    """The `name:` a file declares (read even when the file is invalid), else its stem."""
    match = _NAME_LINE.search(text or "")
    return match.group(1) if match else Path(file).stem.lower()


_NAME_KEY = re.compile(rb"^name[ \t]*:", re.M)


def _name_position(file: str) -> tuple[int, int]:
    """(line, column) of the `name:` key in `file` (1-based), for a diagnostic
    about the name; (0, 0) when it cannot be found (a flow mapping, a file gone)."""
    try:
        raw = read_at_most(Path(file), MAX_FILE_BYTES)
    except (OSError, ValueError):
        return 0, 0
    match = _NAME_KEY.search(raw)
    return (raw.count(b"\n", 0, match.start()) + 1, 1) if match else (0, 0)


def load_entry(raw: bytes, file: str, layer: str, *, prefix: str = "",
               source: str | None = None, kept: Kept | None = None) -> Entry:
    """Parse one file's bytes into an Entry (never raises for bad content).
    `kept`: valid definitions kept by their bytes, looked up first (and
    given what is parsed)."""
    definition = kept.found(raw, file, layer, source) if kept is not None else None
    diags: list[Diagnostic] = []
    text: str | None = None
    if definition is None:
        from zapcli.definitions.schema import parse_definition
        from zapcli.definitions.yamlload import read_text

        text, diags = read_text(raw, file)
        if text is not None:
            definition, diags = parse_definition(text, file, layer=layer, source=source)
        if kept is not None and definition is not None and not diags:
            kept.keep(raw, file, layer, source, definition)
    if definition is not None and prefix:
        definition = _renamed(definition, f"{prefix}:{definition.name}")
    name = definition.name if definition else (prefix + ":" if prefix else "") + guess_name(text, file)
    return Entry(name, layer, file, definition, diags)


def _renamed(definition: Definition, name: str) -> Definition:
    from zapcli.plain import replace

    return replace(definition, name=name)


def _folder_files(folder: Path) -> list[Path]:
    try:
        # not only regular files: a FIFO or a device named *.yml is an entry with a
        # diagnostic (read_at_most refuses it), never a silent gap
        return sorted(p for p in folder.iterdir() if p.suffix in SUFFIXES and not p.is_dir())
    except OSError:
        return []


def _file_entries(files: Iterable[Path], layer: str, prefix: str = "",
                  kept: Kept | None = None) -> list[Entry]:
    out = []
    for path in files:
        try:
            raw = read_at_most(path, MAX_FILE_BYTES)
        except OSError as exc:
            out.append(Entry(guess_name(None, str(path)), layer, str(path), None,
                             [Diagnostic(str(path), 0, 0, f"cannot read: {exc.strerror or exc}")]))
            continue
        out.append(load_entry(raw, str(path), layer, prefix=prefix, kept=kept))
    return out


def _builtin_entries(kept: Kept | None = None) -> list[Entry]:
    folder: Any = Path(__file__).with_name("builtin")
    if not folder.is_dir():  # installed as a zip: importlib.resources costs ~10 ms, so only then
        from importlib import resources

        folder = resources.files("zapcli.definitions") / "builtin"
    out = []
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if item.name.endswith(SUFFIXES):
            label = f"builtin:{item.name}"
            out.append(load_entry(item.read_bytes(), label, "builtin", source=label, kept=kept))
    return out


def _plugin_entries(kept: Kept | None = None) -> list[Entry]:
    """Entry point `id = pkg.mod:attr`; attr is a folder, or a callable returning a
    folder or a list of YAML file paths. Names become `id:name`."""
    if not may_declare(PLUGIN_GROUP):
        return []
    from importlib.metadata import entry_points

    from zapcli.definitions.schema import NAME_RE

    out: list[Entry] = []
    for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        label = f"plugin:{ep.name}"
        if not NAME_RE.match(ep.name):
            out.append(Entry(ep.name, "plugin", label, None, [Diagnostic(
                label, 0, 0, f"plugin id {ep.name!r} is not valid (use [a-z0-9-])")]))
            continue
        try:
            obj = ep.load()
            obj = obj() if callable(obj) else obj
            items = [obj] if isinstance(obj, (str, Path)) else list(obj)
            files: list[Path] = []
            for item in items:
                path = Path(item)
                files.extend(_folder_files(path) if path.is_dir() else [path])
        except Exception as exc:  # a broken plugin is a diagnostic, never a crash
            out.append(Entry(ep.name, "plugin", label, None, [Diagnostic(
                label, 0, 0, f"plugin {ep.name!r} failed to load: {exc}")]))
            continue
        out.extend(_file_entries(files, "plugin", prefix=ep.name, kept=kept))
    return out


class Catalog:
    """Every definition found, by layer. `get(name)` is the effective valid one."""

    def __init__(self, entries: list[Entry], untrusted: list[Path] | None = None):
        self.entries = entries
        self.untrusted = untrusted or []  # workspace files left out: the folder is not trusted
        self.extra: list[Diagnostic] = []
        self._effective: dict[str, Entry] = {}
        self._ignored: list[Entry] = []  # same name twice in one layer: the losers
        for entry in entries:
            current = self._effective.get(entry.name)
            if current is not None and current.layer == entry.layer:
                # The file named after the definition (foo.yml for `name: foo`) wins;
                # otherwise the first in file order. Either way, it is reported.
                if _named_after(entry) and not _named_after(current):
                    current, entry = entry, current
                    self._effective[entry.name] = current
                self._ignored.append(entry)
                line, column = _name_position(entry.file)
                there = Diagnostic(current.file, *_name_position(current.file), "").location()
                self.extra.append(Diagnostic(entry.file, line, column, (
                    f"name '{entry.name}' is also defined in {there}, which is the one "
                    "used; this file is ignored"), "give each definition its own name"))
                continue
            self._effective[entry.name] = entry

    def entry(self, name: str) -> Entry | None:
        """The effective entry for `name` (valid or broken), or None."""
        return self._effective.get(name)

    def get(self, name: str) -> Definition | None:
        entry = self._effective.get(name)
        return entry.definition if entry else None

    def all(self) -> list[Definition]:
        """Effective valid definitions, in layer order then by name."""
        return [e.definition for e in self.effective() if e.definition is not None]

    def effective(self) -> list[Entry]:
        """Effective entries (valid and broken), in layer order then by name."""
        return sorted(self._effective.values(), key=lambda e: (LAYERS.index(e.layer), e.name))

    def names(self) -> list[str]:
        return [d.name for d in self.all()]

    def shadowed(self, name: str) -> list[Entry]:
        """Entries of `name` hidden by the effective one (earlier layers), load order."""
        winner = self._effective.get(name)
        return [e for e in self.entries if e.name == name and e is not winner
                and e not in self._ignored]

    def ignored(self, name: str) -> list[Entry]:
        """Other files of the effective one's layer that use the same `name`."""
        return [e for e in self._ignored if e.name == name]

    def problems(self, name: str) -> list[Diagnostic]:
        entry = self._effective.get(name)
        return list(entry.diagnostics) if entry else []

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Every problem found: broken files, duplicate names, plugin failures."""
        return [d for e in self.entries for d in e.diagnostics] + self.extra


def _named_after(entry: Entry) -> bool:
    stem = Path(entry.file.rpartition(":")[2] if entry.layer in ("builtin", "plugin")
                else entry.file).stem
    return stem == entry.name.rpartition(":")[2]


def discover(workspace: Path, *, plugins: bool = True) -> Catalog:
    """Load every layer for `workspace`. Never raises for bad files (see `.diagnostics`)."""
    kept = Kept()
    entries = _builtin_entries(kept)
    if plugins:
        entries += _plugin_entries(kept)
    entries += _file_entries(_folder_files(system_dir()), "system", kept=kept)
    own, untrusted = _workspace_entries(workspace, kept)
    kept.save()
    return Catalog(entries + own, untrusted)


def invalid_error(name: str, entry: Entry) -> ZapcliError:
    lines = [f"subagent definition '{name}' is invalid and was not loaded:"]
    lines += [str(d) for d in entry.diagnostics]
    return ZapcliError("\n".join(lines), code="definition_invalid")


def unknown_error(name: str, catalog: Catalog, disabled: set[str] | None = None) -> NotFound:
    """"no subagent definition named …" with a did-you-mean and the names that
    would run (`disabled` ones left out): a NotFound (exit 1, as an id that
    names nothing), its code `definition_unknown`."""
    names = [n for n in catalog.names() if n not in (disabled or set())]
    from difflib import get_close_matches  # only to say what was meant

    near = get_close_matches(name, names, n=1, cutoff=0.6)
    near += [n for n in names if n.split(":")[-1] == name and n not in near][:1]
    message = f"no subagent definition named '{name}'"
    if near:
        message += f" (did you mean '{near[0]}'?)"
    broken = [e for e in catalog.entries if e.definition is None and Path(e.file).stem == name]
    ignored = [p for p in catalog.untrusted if p.stem == name]
    if ignored:
        folder = ignored[0].parent.parent.parent
        message += (f"; {ignored[0]} is not used: its folder is not trusted (or it changed since "
                    f"it was), so it has no effect until you run `zapcli trust {folder}`")
    elif broken:
        message += f"; {broken[0].file} exists but is invalid:\n" + "\n".join(
            str(d) for d in broken[0].diagnostics)
    else:
        message += f"; available: {', '.join(names)}" if names else ""
    return NotFound(message, code="definition_unknown")


def resolve(name: str | None, workspace: Path, *, catalog: Catalog | None = None,
            switches: Switches | None = None) -> Definition:
    """The definition `spawn --agent NAME` runs (`general` when name is None/empty).

    Raises ZapcliError (exit 1): code `definition_invalid` with every
    `file:line:col: message` and hint when the named file is broken;
    `definition_unknown` (a NotFound) with a did-you-mean; `definition_disabled`.
    """
    name = name or DEFAULT_AGENT
    catalog = catalog or discover(workspace)
    entry = catalog.entry(name)
    if switches is None:
        from zapcli.definitions.store import Switches

        switches = Switches()
    if entry is None:
        raise unknown_error(name, catalog, {n for n in catalog.names() if not switches.get(n).enabled})
    if entry.definition is None:
        raise invalid_error(name, entry)
    if not switches.get(name).enabled:
        raise ZapcliError(f"subagent definition '{name}' is disabled on this machine; "
                          f"enable it with `zapcli agents enable {name}`", code="definition_disabled")
    return entry.definition
