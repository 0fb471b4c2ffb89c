"""The parent agent's definition tools (`zapcli run` only): `subagents_list`,
`subagents_save`, `subagents_delete` — the `zapcli agents list|save|delete`
operations, through the same code path, so a definition the agent writes is
the file a person would have saved.

Imports `zapcli.ops.agents`, `zapcli.definitions.manage`, `zapcli.render`,
`zapcli.agent.types`. Saving and deleting are configuration changes: the
run's approver asks for them (`zapcli.approvals`, kind `config`). No
subagent can be granted them (the never-grantable list). `save_preview`
(also `zapcli.definitions.schema`) is what the terminal shows with the
question for a save: file, REPLACES, grant, YAML or diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.errors import ZapcliError
from zapcli.render import agents as render
from zapcli.render.common import plain

SCOPE = {"type": "string", "enum": ["workspace", "system"],
         "description": "workspace (.zapcli/subagents, travels with the repository) or system "
                        "(the user's own, on this machine). Default workspace."}


class SubagentsList:
    spec = ToolSpec("subagents_list", "Every subagent definition: name, layer, source file, "
                    "enabled, effective model, tools and the other declared dimensions, "
                    "diagnostics, and each layer's folder.",
                    {"type": "object", "properties": {}, "additionalProperties": False})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from zapcli.definitions import discover
        from zapcli.ops.agents import layer_folders, list_agents

        workspace = Path(ctx.workspace)
        res = list_agents(workspace)
        doc = render.list_doc(res)
        catalog = discover(workspace)
        for row in doc["agents"]:
            definition = catalog.get(row["name"]) if row["valid"] else None
            row["declares"] = definition.to_dict() if definition is not None else None
        doc["folders"] = layer_folders(workspace)
        return ToolResult(True, json.dumps(doc, indent=1, default=str))


class SubagentsSave:
    spec = ToolSpec("subagents_save", "Create or update a subagent definition, exactly as "
                    "`zapcli agents save` does: validated (`<yaml>:line:column` diagnostics with "
                    "did-you-mean), built-in names refused. Give the YAML text or the fields. "
                    "It can be spawned on your next turn.",
                    {"type": "object", "properties": {
                        "yaml": {"type": "string", "description": "The definition as YAML text."},
                        "fields": {"type": "object", "description": "The definition as fields "
                                   "(name, description, tools, prompt, ...) instead of yaml."},
                        "scope": SCOPE,
                        "replaces": {"type": "string", "description": "The name this definition "
                                     "had before, when you rename it: its old file is removed."}},
                     "additionalProperties": False})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from zapcli.ops.agents import fields_to_yaml, save_text

        text, fields = args.get("yaml"), args.get("fields")
        if (text is None) == (fields is None):
            return ToolResult(False, "give exactly one of `yaml` (the definition's text) or "
                                     "`fields` (its keys as an object)")
        if fields is not None:
            text = fields_to_yaml(fields)
        try:
            res = save_text(str(text), str(args.get("scope") or "workspace"),
                            Path(ctx.workspace), replaces=args.get("replaces"))
        except ZapcliError as exc:
            return ToolResult(False, exc.for_tool())
        return ToolResult(True, plain(render.saved_lines(res)))


class SubagentsDelete:
    spec = ToolSpec("subagents_delete", "Delete a custom subagent definition (never a built-in).",
                    {"type": "object", "properties": {
                        "name": {"type": "string", "description": "The definition's name."},
                        "scope": SCOPE},
                     "required": ["name"], "additionalProperties": False})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from zapcli.definitions.manage import delete_agent

        try:
            res = delete_agent(str(args["name"]), Path(ctx.workspace), scope=args.get("scope"))
        except ZapcliError as exc:
            return ToolResult(False, exc.for_tool())
        return ToolResult(True, plain(render.deleted_lines(res)))


def list_shown(content: str) -> list[str] | None:
    """`subagents_list`'s document as the run's stream shows it: one line a
    definition (name, layer, state, model, tools); the model reads it whole.
    None when it is not that document (then it is shown as it is)."""
    try:
        rows = json.loads(content).get("agents")
    except (ValueError, AttributeError):
        return None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return None
    out = [f"{len(rows)} definitions:"]
    for r in rows:
        tools = (r.get("declares") or {}).get("tools") or []
        state = " invalid" if not r.get("valid") else "" if r.get("enabled") else " disabled"
        out.append(f"{r.get('name')} ({r.get('layer')}){state} model {r.get('model') or '-'}; "
                   f"tools {', '.join(map(str, tools)) or 'none'}")
    return out


# How the run's stream shows a tool's result, by tool name, when not line by line
SHOWN = {"subagents_list": list_shown}

PREVIEW_LINES = 40


def _bounded(lines: list[str], limit: int = PREVIEW_LINES) -> list[str]:
    more = [f"  │ … {len(lines) - limit} more lines"] if len(lines) > limit else []
    return ["  │ " + line for line in lines[:limit]] + more


def _grant(definition: Any) -> list[str]:
    """The facts of what the definition may do, one line each."""
    def listed(items: Any) -> str:
        return ", ".join(str(x) for x in items) if items else "none"

    facts = [f"    tools: {listed(definition.tools)}",
             f"    mcp servers: {listed(definition.mcp_servers)}", f"    env: {listed(definition.env)}"]
    if definition.cli:
        facts.append(f"    runs on: {definition.cli}")
    if definition.knowledge or definition.memory != "none":
        facts.append(f"    knowledge: {listed(k.name for k in definition.knowledge)}; "
                     f"memory: {definition.memory}")
    return facts


def save_preview(args: dict[str, Any], workspace: str) -> str:
    """What a `subagents_save` approval is about, for the person asked: the
    file it writes (and whether it REPLACES one), the grant, and the YAML (a
    diff when it replaces a file), bounded. Read-only; never raises."""
    import difflib

    from zapcli.definitions.manage import replaced_file, scope_dir
    from zapcli.definitions.schema import parse_definition
    from zapcli.ops.agents import fields_to_yaml

    try:
        text = str(args["yaml"]) if args.get("yaml") is not None else fields_to_yaml(args["fields"])
        scope = str(args.get("scope") or "workspace")
        folder = scope_dir(scope, Path(workspace))
        definition, diags = parse_definition(text, "<yaml>", layer=scope)
    except Exception as exc:  # noqa: BLE001 - the save itself will say what is wrong
        return f"  (no preview: {exc})"
    if definition is None:
        return "\n".join([f"  INVALID, the save will be refused ({len(diags)} problem(s))",
                          *_bounded(text.splitlines())])
    name = definition.name
    target = next((p for p in (folder / f"{name}.yml", folder / f"{name}.yaml") if p.exists()), None)
    lines = [f"  REPLACES {target}" if target else f"  new file {folder / f'{name}.yml'}"]
    old_name = args.get("replaces")
    gone = replaced_file(folder, name, old_name) if isinstance(old_name, str) else None
    if gone is not None:
        lines.append(f"  and removes {old_name!r} ({gone})")
    lines += ["  grants:", *_grant(definition)]
    if target is not None:
        try:
            before = target.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            before = []
        diff = list(difflib.unified_diff(before, text.splitlines(), str(target), "new", lineterm=""))
        lines += ["  changes:", *_bounded(diff or ["(no changes)"])]
    else:
        lines += ["  yaml:", *_bounded(text.splitlines())]
    return "\n".join(lines)


def definition_tools() -> tuple[Any, ...]:
    return (SubagentsList(), SubagentsSave(), SubagentsDelete())
