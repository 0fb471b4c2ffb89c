"""`zapcli agents ...`: list, show, save, delete, enable, disable, model, copy.

Calls `zapcli.definitions.manage` (result objects) and renders them; the
typer sub-app in `zapcli.cli.app` maps each subcommand to a function here.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from zapcli.cli.output import emit_json, emit_lines, escape_controls
from zapcli.config import load_settings
from zapcli.errors import UsageError
from zapcli.paths import workspace_of


def _ws() -> Path:
    return workspace_of(Path.cwd())


def _emit(json: bool, doc: dict, lines: list[tuple[str, str]]) -> int:
    if json:
        emit_json(doc)
    else:
        emit_lines(lines)
    return 0


def list_(json: bool = False) -> int:
    from zapcli.backends.resolve import grant_problems
    from zapcli.definitions import discover
    from zapcli.definitions.manage import list_agents

    catalog = discover(_ws())
    res = list_agents(_ws(), session_default=load_settings(_ws(), lenient=True).model,
                      catalog=catalog)
    grants = {r.name: grant_problems(catalog.get(r.name), _ws()) for r in res.rows if r.valid}
    lines: list[tuple[str, str]] = [("bold", f"[SubAgent] {len(res.rows)} definitions")]
    for r in res.rows:
        state = "invalid" if not r.valid else "enabled" if r.enabled else "disabled"
        style = "red" if not r.valid else "dim" if not r.enabled else ""
        lines.append((style, f"{r.name}  [{r.layer}] {state}  model: {r.model or '-'} ({r.model_origin})"))
        lines.append(("dim", f"  {escape_controls(r.description)[:100]}"))
        lines.append(("dim", f"  {r.source}" + (f"  shadows {', '.join(r.shadows)}" if r.shadows else "")))
        lines.extend(("red", f"  ! {escape_controls(d)}") for d in r.diagnostics)
        lines.extend(("yellow", f"  ! {_grant_line(g)}") for g in grants.get(r.name, []))
    other = [d for d in res.diagnostics if not any(str(d.file) == r.source for r in res.rows)]
    lines.extend(("red", f"! {escape_controls(d.one_line())}") for d in other)
    return _emit(json, {"agents": [{**asdict(r), "grant_diagnostics": grants.get(r.name, [])}
                                   for r in res.rows],
                        "diagnostics": [d.to_dict() for d in res.diagnostics]}, lines)


def _grant_line(g: dict) -> str:
    """A declared capability this machine cannot give, as spawn would warn it."""
    return f"{g['dimension']} {g['name']}: {escape_controls(g['message'])} (spawn would go on without it)"


def show(name: str, json: bool = False) -> int:
    from zapcli.definitions.manage import show_agent

    res = show_agent(name, _ws())
    d = res.definition
    lines = [("bold", f"[SubAgent] {res.row.name} [{res.row.layer}] {res.row.source}"),
             ("", f"  enabled: {res.row.enabled}   model: {res.row.model or '-'} ({res.row.model_origin})")]
    if d is not None:
        lines += [("", f"  description: {escape_controls(d.description)}"),
                  ("", f"  tools: {', '.join(d.tools) or '(none)'}"),
                  ("", f"  skills: {', '.join(d.skills) or '(none)'}   memory: {d.memory}   maxTurns: {d.max_turns}"),
                  ("", f"  mcp servers: {', '.join(d.mcp_servers) or '(none)'}   knowledge: "
                       f"{', '.join(k.name for k in d.knowledge) or '(none)'}"),
                  ("dim", "  prompt:"), *[("", "    " + escape_controls(x)) for x in d.prompt.splitlines()]]
    lines += [("red", f"  ! {escape_controls(x.one_line())}") for x in res.diagnostics]
    grant_diags: list[dict] = []
    if d is not None:
        from zapcli.backends.resolve import grant_problems

        grant_diags = grant_problems(d, _ws())
        lines += [("yellow", f"  ! {_grant_line(g)}") for g in grant_diags]
    return _emit(json, {"agent": asdict(res.row), "definition": d.to_dict() if d else None,
                        "model_override": res.model_override,
                        "diagnostics": [x.to_dict() for x in res.diagnostics],
                        "grant_diagnostics": grant_diags}, lines)


def save(file: str, scope: str = "workspace", json: bool = False) -> int:
    from zapcli.definitions.manage import save_agent

    res = save_agent(Path(file), scope, _ws())
    lines = [("green", f"[SubAgent] saved '{res.name}' to {res.path} ({res.scope})"
                       + (" — replaced the previous file" if res.replaced else ""))]
    lines += [("dim", f"  removed old file {p}") for p in res.removed]
    lines += [("yellow", f"  note: also defined in {p}") for p in res.duplicates]
    return _emit(json, asdict(res), lines)


def delete(name: str, scope: str | None = None, json: bool = False) -> int:
    from zapcli.definitions.manage import delete_agent

    res = delete_agent(name, _ws(), scope=scope)
    lines = [("yellow", f"[SubAgent] deleted '{res.name}' ({res.layer}: {res.path})")]
    if res.now_effective:
        verb = "now resolves" if res.was_effective else "still resolves"
        lines.append(("dim", f"  '{res.name}' {verb} to {res.now_effective}"))
    return _emit(json, asdict(res), lines)


def switch(name: str, enable: bool, json: bool = False) -> int:
    from zapcli.definitions.manage import disable_agent, enable_agent

    res = (enable_agent if enable else disable_agent)(name, _ws())
    word = "enabled" if res.enabled else "disabled"
    return _emit(json, asdict(res), [("", f"[SubAgent] '{res.name}' {word}" + ("" if res.changed else " (no change)"))])


def model(name: str, model: str | None = None, clear: bool = False, json: bool = False) -> int:
    from zapcli.definitions.manage import set_agent_model

    if clear and model:
        raise UsageError("give a MODEL or --clear, not both")
    if not clear and not model:
        raise UsageError(f"give the MODEL '{name}' should use (e.g. zapcli agents model {name} "
                         "gpt-4o-mini), or --clear to drop its override")
    res = set_agent_model(name, None if clear else model, _ws())
    text = f"model override for '{res.name}' cleared" if res.model is None else f"'{res.name}' now uses {res.model}"
    return _emit(json, asdict(res), [("", f"[SubAgent] {text} (machine-local)")])


def copy(name: str, to: str = "system", as_: str | None = None, force: bool = False, json: bool = False) -> int:
    from zapcli.definitions.manage import copy_agent

    res = copy_agent(name, _ws(), to=to, new_name=as_, force=force)
    return _emit(json, asdict(res), [("green", f"[SubAgent] copied '{res.source}' to {res.path} as '{res.name}'")])
