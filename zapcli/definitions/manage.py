"""What `zapcli agents ...` does (docs/explanation/rules.md#managing-definitions): list, show, save, delete, enable, disable,
model, copy. Returns result objects, never prints. Imports the definitions room, paths, errors,
boundedread, trust, trust_store.

Switches and model overrides go to SQLite (store.py), never into YAML; built-ins
are read-only except for the model override. Files are written atomically
(temp file in the same folder + os.replace), 0600 in folders created 0700. A
definition saved into the workspace is trusted by the person's approval of
the save (`zapcli.trust_store.approve`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from zapcli import trust, trust_store
from zapcli.boundedread import read_at_most
from zapcli.definitions.layers import (
    Catalog,
    Entry,
    discover,
    guess_name,
    invalid_error,
    system_dir,
    unknown_error,
    workspace_dir,
)
from zapcli.definitions.model import Definition, Diagnostic
from zapcli.definitions.schema import NAME_RE, parse_definition
from zapcli.definitions.store import Switch, Switches, model_origin
from zapcli.definitions.yamlload import MAX_FILE_BYTES, read_text
from zapcli.errors import NotFound, UsageError, ZapcliError
from zapcli.paths import write_private
from zapcli.plain import replace

SCOPES = ("system", "workspace")


@dataclass(frozen=True)
class AgentRow:
    """One line of `agents list`. `model_origin`: flag|override|definition|session|none."""

    name: str
    layer: str
    source: str
    enabled: bool
    model: str | None
    model_origin: str
    description: str
    valid: bool
    diagnostics: tuple[str, ...]  # one-line diagnostics of this entry
    shadows: tuple[str, ...]  # "layer:file" of the definitions it hides


@dataclass(frozen=True)
class AgentsList:
    rows: tuple[AgentRow, ...]
    diagnostics: tuple[Diagnostic, ...]  # every problem in every layer


@dataclass(frozen=True)
class AgentShow:
    row: AgentRow
    definition: Definition | None  # None when the effective file is broken
    diagnostics: tuple[Diagnostic, ...]
    model_override: str | None


@dataclass(frozen=True)
class SaveResult:
    name: str
    scope: str
    path: str
    replaced: bool  # a file of that name already existed in the scope
    removed: tuple[str, ...]  # old files removed (renames, other spellings)
    duplicates: tuple[str, ...]  # "layer:file" definitions of the same name in other layers


@dataclass(frozen=True)
class DeleteResult:
    name: str
    layer: str
    path: str
    now_effective: str | None  # "layer:file" now visible under that name, if any
    was_effective: bool = True  # False: a shadowed file was deleted; nothing changed for spawn


@dataclass(frozen=True)
class SwitchResult:
    name: str
    enabled: bool
    changed: bool


@dataclass(frozen=True)
class ModelResult:
    name: str
    model: str | None  # None = override cleared
    previous: str | None


@dataclass(frozen=True)
class CopyResult:
    name: str
    source: str
    path: str


def _row(entry: Entry, catalog: Catalog, switches: dict[str, Switch], session_default: str | None) -> AgentRow:
    switch = switches.get(entry.name)
    overrides = {entry.name: switch.model} if switch and switch.model else {}
    model, origin = model_origin(None, entry.definition, overrides, session_default)
    return AgentRow(
        name=entry.name, layer=entry.layer, source=entry.file,
        enabled=switch.enabled if switch else True, model=model, model_origin=origin,
        description=entry.definition.description if entry.definition else "",
        valid=entry.definition is not None,
        diagnostics=tuple(d.one_line() for d in entry.diagnostics),
        shadows=tuple(e.file if e.file.startswith(f"{e.layer}:") else f"{e.layer}:{e.file}"
                      for e in catalog.shadowed(entry.name)))


def list_agents(workspace: Path, *, session_default: str | None = None,
                catalog: Catalog | None = None, switches: Switches | None = None) -> AgentsList:
    """Every effective definition (valid or broken) with layer, source, switch, model."""
    catalog = catalog or discover(workspace)
    table = (switches or Switches()).all()
    rows = tuple(_row(e, catalog, table, session_default) for e in catalog.effective())
    return AgentsList(rows, tuple(catalog.diagnostics))


def _entry_or_fail(name: str, catalog: Catalog) -> Entry:
    entry = catalog.entry(name)
    if entry is None:
        raise unknown_error(name, catalog)
    return entry


def show_agent(name: str, workspace: Path, *, session_default: str | None = None,
               catalog: Catalog | None = None, switches: Switches | None = None) -> AgentShow:
    """One definition in full. Raises ZapcliError for an unknown name."""
    catalog = catalog or discover(workspace)
    entry = _entry_or_fail(name, catalog)
    table = (switches or Switches()).all()
    override = table[name].model if name in table else None
    return AgentShow(_row(entry, catalog, table, session_default), entry.definition,
                     tuple(entry.diagnostics), override)


def scope_dir(scope: str, workspace: Path) -> Path:
    if scope not in SCOPES:
        raise UsageError(f"unknown scope '{scope}': choose system or workspace")
    return system_dir() if scope == "system" else workspace_dir(workspace)


def _atomic_write(path: Path, data: bytes) -> None:
    write_private(path, data)  # 0600 in folders created 0700 (docs/explanation/rules.md#where-things-live), atomically


def _install(target: Path, data: bytes, scope: str, workspace: Path, switches: Switches) -> None:
    """Write a definition the person approved saving (`agents save`, `copy`,
    a run's `subagents_save`); into the workspace, that approval trusts these
    bytes (`zapcli.trust_store.approve`), so it can be spawned at once. The
    bytes' hash is recorded: a later save may remove this file only unchanged."""
    _atomic_write(target, data)
    switches.record_written(target, data)
    if scope == "workspace":
        trust_store.approve(workspace, f"{trust.DEFINITIONS}/{target.name}", data)


def _builtin_names(catalog: Catalog) -> set[str]:
    return {e.name for e in catalog.entries if e.layer == "builtin"}


def _check_saveable(definition: Definition, catalog: Catalog) -> None:
    if definition.name in _builtin_names(catalog):
        raise ZapcliError(f"'{definition.name}' is the name of a built-in definition; give "
                          "the copy another name (`agents copy NAME --as NEW`, or `name:` in the "
                          f"file); a built-in's model can be changed with `zapcli agents "
                          f"model {definition.name} MODEL`", code="definition_builtin")
    if definition.knowledge and "read" not in definition.tools:
        raise ZapcliError(f"{definition.source}: declares `knowledge` but not the `read` tool; "
                          "add read to `tools` so the subagent can open what kb_search finds",
                          code="definition_invalid")


def save_agent(file: Path, scope: str, workspace: Path, *, catalog: Catalog | None = None,
               switches: Switches | None = None) -> SaveResult:
    """Validate FILE and install it as `<scope dir>/<name>.yml` (text kept as written).

    Raises UsageError (bad scope) or ZapcliError: unreadable or invalid file
    (every diagnostic), a built-in's name, knowledge without `read`.
    """
    scope_dir(scope, workspace)
    try:
        raw = read_at_most(file, MAX_FILE_BYTES)
    except OSError as exc:
        raise ZapcliError(f"cannot read {file}: {exc.strerror or exc}", code="definition_io") from None
    return _save(raw, str(file), file, scope, workspace, catalog, switches)


def save_agent_text(text: str, scope: str, workspace: Path, *, catalog: Catalog | None = None,
                    switches: Switches | None = None, replaces: str | None = None) -> SaveResult:
    """`save_agent` for a definition given as text (the MCP tool `agents_save`, the
    parent's `subagents_save`): the same validation, diagnostics (`<yaml>:line:col`),
    refusals and install; no source file. `replaces` names the definition this
    one renames: its file in the scope folder is removed."""
    scope_dir(scope, workspace)
    return _save(text.encode("utf-8", "surrogatepass"), "<yaml>", None, scope, workspace,
                 catalog, switches, replaces)


def _save(raw: bytes, source: str, file: Path | None, scope: str, workspace: Path,
          catalog: Catalog | None, switches: Switches | None,
          replaces: str | None = None) -> SaveResult:
    target_dir = scope_dir(scope, workspace)
    text, diags = read_text(raw, source)
    definition = None
    if text is not None:
        definition, diags = parse_definition(text, source, layer=scope)
    if definition is None or text is None:
        name = guess_name(text, str(file) if file is not None else "(yaml)")
        raise invalid_error(name, Entry(name, scope, source, None, diags))
    catalog = catalog or discover(workspace)
    _check_saveable(definition, catalog)
    switches = switches or Switches()
    target = target_dir / f"{definition.name}.yml"
    stale = _stale_files(file, target, target_dir, definition.name, catalog, switches, replaces)
    _refuse_removing_theirs(stale, raw, file, target_dir, definition.name, catalog, switches,
                            replaces)
    replaced = target.exists()
    _install(target, raw, scope, workspace, switches)
    removed = []
    for path in stale:
        path.unlink(missing_ok=True)
        removed.append(str(path))
    if file is not None:
        switches.record_saved(target_dir.resolve(), file.resolve(), definition.name)
    duplicates = tuple(f"{e.layer}:{e.file}" for e in catalog.entries
                       if e.name == definition.name and e.layer != scope)
    return SaveResult(definition.name, scope, str(target), replaced, tuple(removed), duplicates)


def _stale_files(file: Path | None, target: Path, target_dir: Path, name: str, catalog: Catalog,
                 switches: Switches, replaces: str | None = None) -> list[Path]:
    """Files made stale by this save: other files of this name in the scope folder, the
    edited file itself when it was renamed in place, the previous save of this source
    (or the definition it `replaces`)."""
    stale: set[Path] = set()
    resolved_dir = target_dir.resolve()
    for entry in catalog.entries:
        path = Path(entry.file)
        if path.parent.resolve() == resolved_dir and entry.name in (name, replaces):
            stale.add(path)
    if file is not None and file.resolve().parent == resolved_dir:
        stale.add(file)
    old_name = switches.saved_name(resolved_dir, file.resolve()) if file is not None else replaces
    if old_name and old_name != name:
        stale.update(p for p in (target_dir / f"{old_name}.yml", target_dir / f"{old_name}.yaml")
                     if p.exists())
    return [p for p in sorted(stale) if p.resolve() != target.resolve() and p.exists()]


def _refuse_removing_theirs(stale: list[Path], raw: bytes, file: Path | None, target_dir: Path,
                            name: str, catalog: Catalog, switches: Switches,
                            replaces: str | None) -> None:
    """A save removes a stale file only with the person's say or when nothing is
    lost: the file being saved, or one holding the very bytes saved (they move
    to the new name), the definition a save `replaces` (the approval names it),
    or a file zapcli itself wrote and nobody changed since.
    Any other — a file written by hand that declares the same name — is refused,
    before anything is written, naming the file and the way out."""
    named = replaced_file(target_dir, name, replaces)  # the one file the approval names
    replaced = {Path(e.file).resolve() for e in catalog.entries
                if named is not None and e.name == replaces
                and Path(e.file).resolve() == named.resolve()}
    theirs = [p for p in stale
              if not (file is not None and p.resolve() == file.resolve())
              and p.resolve() not in replaced and not _holds(p, raw)
              and not switches.written_unchanged(p)]
    if theirs:
        listed = ", ".join(str(p) for p in theirs)
        one = len(theirs) == 1
        raise ZapcliError(
            f"not saved: saving '{name}' into {target_dir} would remove {listed}, which "
            f"zapcli did not write or which was changed since it did; zapcli does not delete "
            f"{'it' if one else 'them'}. Remove or rename {'it' if one else 'them'} yourself, or "
            "give one of the definitions another `name:`, then save again",
            code="definition_exists")


def replaced_file(folder: Path, name: str, replaces: str | None) -> Path | None:
    """The one file a save of `name` that `replaces` another definition may
    remove by that approval: `<replaces>.yml`, else `<replaces>.yaml`, in the
    scope folder; None when nothing is renamed (`replaces` absent, or the very
    name saved). The approval's preview names this file
    (`zapcli.cli.definition_tools.save_preview`); any other file is removed only
    when nothing is lost (`_refuse_removing_theirs`)."""
    if not replaces or replaces == name:
        return None
    return next((p for p in (folder / f"{replaces}.yml", folder / f"{replaces}.yaml")
                 if p.exists()), None)


def _holds(path: Path, raw: bytes) -> bool:
    try:
        return read_at_most(path, MAX_FILE_BYTES) == raw
    except OSError:
        return False


def delete_agent(name: str, workspace: Path, *, scope: str | None = None,
                 switches: Switches | None = None) -> DeleteResult:
    """Remove NAME's file from the system or workspace layer (the effective one unless
    `scope` says which). Built-in and plugin definitions are refused (read-only)."""
    catalog = discover(workspace)
    entry = effective = _entry_or_fail(name, catalog)
    if scope is not None:
        scope_dir(scope, workspace)
        found = [e for e in catalog.entries if e.name == name and e.layer == scope]
        if not found:
            raise NotFound(f"'{name}' has no {scope} definition file", code="definition_unknown")
        entry = found[-1]
    if entry.layer not in SCOPES:
        raise ZapcliError(f"'{name}' is a {entry.layer} definition and read-only; "
                          f"`zapcli agents disable {name}` turns it off on this machine",
                          code="definition_readonly")
    Path(entry.file).unlink(missing_ok=True)
    after = discover(workspace).entry(name)
    if after is None:
        (switches or Switches()).forget(name)
    return DeleteResult(name, entry.layer, entry.file,
                        f"{after.layer}:{after.file}" if after else None, entry is effective)


def _set_enabled(name: str, workspace: Path, enabled: bool, switches: Switches | None
                 ) -> SwitchResult:
    _entry_or_fail(name, discover(workspace))
    previous = (switches or Switches()).set_enabled(name, enabled)
    return SwitchResult(name, enabled, previous.enabled != enabled)


def enable_agent(name: str, workspace: Path, *, switches: Switches | None = None) -> SwitchResult:
    """Turn NAME on for this machine (SQLite). Raises ZapcliError for an unknown name."""
    return _set_enabled(name, workspace, True, switches)


def disable_agent(name: str, workspace: Path, *, switches: Switches | None = None) -> SwitchResult:
    """Turn NAME off for this machine: `resolve` refuses it until enabled again."""
    return _set_enabled(name, workspace, False, switches)


def set_agent_model(name: str, model: str | None, workspace: Path, *,
                    switches: Switches | None = None) -> ModelResult:
    """Set (or with None clear) NAME's machine-local model override; built-ins included."""
    _entry_or_fail(name, discover(workspace))
    if model is not None and not model.strip():
        raise UsageError("the model name is empty; pass a model or --clear")
    if model is not None and (any(c.isspace() or not c.isprintable() for c in model.strip())):
        raise UsageError(f"{model!r} is not a model name (no spaces or control characters)")
    previous = (switches or Switches()).set_model(name, model.strip() if model else None)
    return ModelResult(name, model.strip() if model else None, previous.model)


class _BlockDumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_BlockDumper.add_representer(str, _str_representer)


def definition_yaml(definition: Definition, name: str | None = None) -> str:
    """The definition as a YAML file (declared keys only, `prompt` as a block)."""
    data = definition.to_file_dict()
    if name:
        data["name"] = name
    return yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


def copy_agent(name: str, workspace: Path, *, to: str = "system", new_name: str | None = None,
               force: bool = False) -> CopyResult:
    """Write NAME (any layer, every dimension) as `<to dir>/<new_name or name>.yml`.

    Refused: a broken or unknown NAME, a target name that is a built-in's (pass
    `new_name`), an existing target file unless `force`.
    """
    catalog = discover(workspace)
    entry = _entry_or_fail(name, catalog)
    if entry.definition is None:
        raise invalid_error(name, entry)
    target_name = new_name or name.split(":")[-1]
    if not NAME_RE.match(target_name):
        raise UsageError(f"'{target_name}' is not a valid definition name ([a-z0-9-])")
    text = definition_yaml(entry.definition, target_name)
    target = scope_dir(to, workspace) / f"{target_name}.yml"
    check, diags = parse_definition(text, str(target), layer=to)
    if check is None:  # a copy must load exactly as the original did
        raise ZapcliError("copy would not load: " + "; ".join(d.one_line() for d in diags))
    _check_saveable(replace(check, source=entry.file), catalog)
    if target.exists() and not force:
        raise ZapcliError(f"{target} already exists; delete it first or copy with --force",
                          code="definition_exists")
    _install(target, text.encode("utf-8"), to, workspace, Switches())
    return CopyResult(target_name, entry.file, str(target))
