"""`agents …`: definitions, one at a time or all, and what each change did."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from zapcli.render.common import Lines, one_line
from zapcli.render.docschema import stamp
from zapcli.render.text import escape_controls


def _grant_line(g: dict[str, str]) -> str:
    """A declared capability this machine cannot give, as spawn would warn it."""
    return f"{g['dimension']} {g['name']}: {escape_controls(g['message'])} (spawn would go on without it)"


def _origin(row: Any, res: Any) -> str:
    """Where the row's model comes from; the session's, by where it is set."""
    if row.model_origin == "session":
        return getattr(res, "session_model_from", "session")
    return str(row.model_origin)


def list_lines(res: Any) -> Lines:
    rows = res.listing.rows
    out: Lines = [("bold", f"[SubAgent] {len(rows)} definitions")]
    for r in rows:
        state = "invalid" if not r.valid else "enabled" if r.enabled else "disabled"
        style = "red" if not r.valid else "dim" if not r.enabled else ""
        out.append((style, f"{r.name}  [{r.layer}] {state}  model: {r.model or '-'} ({_origin(r, res)})"))
        out.append(("dim", f"  {one_line(r.description, 100)}"))
        out.append(("dim", f"  {r.source}" + (f"  shadows {', '.join(r.shadows)}" if r.shadows else "")))
        out.extend(("red", f"  ! {escape_controls(d)}") for d in r.diagnostics)
        out.extend(("yellow", f"  ! {_grant_line(g)}") for g in res.grants.get(r.name, []))
    other = [d for d in res.listing.diagnostics if not any(str(d.file) == r.source for r in rows)]
    out.extend(("red", f"! {escape_controls(d.one_line())}") for d in other)
    return out  # what the workspace's trust left out goes to stderr (cli.commands.agents)


def list_doc(res: Any) -> dict[str, Any]:
    return stamp("agents", {"agents": [{**asdict(r), "grant_diagnostics": res.grants.get(r.name, [])}
                       for r in res.listing.rows],
            "diagnostics": [d.to_dict() for d in res.listing.diagnostics],
            "untrusted": res.untrusted})


def _state(row: Any) -> str:
    """What `spawn --agent` would do with it: an invalid file is never run,
    whatever its machine-local switch says."""
    if not row.valid:
        return "invalid: not loaded, spawn refuses it until the file is fixed"
    return "enabled" if row.enabled else f"disabled (zapcli agents enable {row.name})"


def _team_line(d: Any) -> Lines:
    """What it works with on its session's board: the team tools, the labels it serves."""
    said = (["board and message tools (team: true)"] if d.team else []) + (
        [f"serves task labels: {', '.join(d.board_labels)}"] if d.board_labels else [])
    return [("", f"  team: {'; '.join(said)}")] if said else []


def show_lines(res: Any) -> Lines:
    row, d = res.shown.row, res.shown.definition
    out: Lines = [("bold", f"[SubAgent] {row.name} [{row.layer}] {row.source}"),
                  ("red" if not row.valid else "", f"  {_state(row)}   model: {row.model or '-'} "
                                                    f"({_origin(row, res)})")]
    if d is not None:
        out += [("", f"  description: {escape_controls(d.description)}"),
                ("", f"  tools: {', '.join(d.tools) or '(none)'}"),
                *_team_line(d),
                ("", f"  skills: {', '.join(d.skills) or '(none)'}   memory: {d.memory}   maxTurns: {d.max_turns}"),
                ("", f"  mcp servers: {', '.join(d.mcp_servers) or '(none)'}   knowledge: "
                     f"{', '.join(k.name for k in d.knowledge) or '(none)'}"),
                ("dim", "  prompt:"), *[("", "    " + escape_controls(x)) for x in d.prompt.splitlines()]]
    out += [("red", f"  ! {escape_controls(x.one_line())}") for x in res.shown.diagnostics]
    out += [("yellow", f"  ! {_grant_line(g)}") for g in res.grant_diagnostics]
    return out


def show_doc(res: Any) -> dict[str, Any]:
    d = res.shown.definition
    return stamp("agent", {"agent": asdict(res.shown.row), "definition": d.to_dict() if d else None,
            "model_override": res.shown.model_override,
            "diagnostics": [x.to_dict() for x in res.shown.diagnostics],
            "grant_diagnostics": res.grant_diagnostics, "untrusted": res.untrusted})


def saved_lines(res: Any) -> Lines:
    out: Lines = [("green", f"[SubAgent] saved '{res.name}' to {res.path} ({res.scope})"
                            + (" — replaced the previous file" if res.replaced else ""))]
    out += [("dim", f"  removed old file {p}") for p in res.removed]
    out += [("yellow", f"  note: also defined in {p}") for p in res.duplicates]
    return out


def deleted_lines(res: Any) -> Lines:
    out: Lines = [("yellow", f"[SubAgent] deleted '{res.name}' ({res.layer}: {res.path})")]
    if res.now_effective:
        verb = "now resolves" if res.was_effective else "still resolves"
        out.append(("dim", f"  '{res.name}' {verb} to {res.now_effective}"))
    return out


def switched_lines(res: Any) -> Lines:
    word = "enabled" if res.enabled else "disabled"
    return [("", f"[SubAgent] '{res.name}' {word}" + ("" if res.changed else " (no change)"))]


def model_lines(res: Any) -> Lines:
    text = (f"model override for '{res.name}' cleared" if res.model is None
            else f"'{res.name}' now uses {res.model}")
    return [("", f"[SubAgent] {text} (machine-local)")]


def copied_lines(res: Any) -> Lines:
    return [("green", f"[SubAgent] copied '{res.source}' to {res.path} as '{res.name}'")]


def as_doc(res: Any) -> dict[str, Any]:
    """The document of a change (save, delete, switch, model, copy): its result as is."""
    return stamp("agent-change", asdict(res))
