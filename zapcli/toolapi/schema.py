"""JSON schemas generated from the declaration: the one `subagent` tool
(`zapcli tool-schema`, the tool of `zapcli run`) and one schema per action
(the MCP tools).

Imports `zapcli.toolapi.spec`. The `subagent` tool keeps to what OpenAI's
strict function calling and Anthropic's tool input rules both accept: an
object at the root, `additionalProperties: false`, every property listed in
`required` (an optional one is nullable: `["string", "null"]`), no numeric
or length bounds (ranges are in the descriptions and checked by `dispatch`).
An MCP tool's input schema is plain instead: only the parameters an action
cannot do without are `required`, and types are not nullable — MCP clients
that check arguments before calling (Gemini CLI) refuse a call that leaves
out an optional parameter listed as required.
"""

from __future__ import annotations

from typing import Any

from zapcli.toolapi.spec import ACTIONS, Action, Param

TOOL_NAME = "subagent"
DESCRIPTION = ("Run work in parallel background subagents (OS processes that keep running "
               "between calls). Spawn several at once (one call each, in the same message), then "
               "wait for them.")
RUN_NOTE = (" Finished subagents are also announced to you before your next turn; approvals "
            "your subagents ask for are decided by the person running zapcli.")


def param_schema(p: Param, run: bool = False) -> dict[str, Any]:
    """The nullable JSON schema of one parameter (null = not given)."""
    desc = (p.run_description if run and p.run_description else p.description)
    if p.required:
        desc = ("Required. " if not (run and p.run_description) else "") + desc
    schema: dict[str, Any] = {"type": [p.type, "null"], "description": desc}
    if p.type == "array":
        schema["items"] = {"type": "string"}
    if p.enum is not None:
        schema["enum"] = [*p.enum, None]
    return schema


def offered(action: Action, run: bool) -> tuple[Param, ...]:
    """The parameters a surface offers (`zapcli run` decides some itself)."""
    return tuple(p for p in action.params if not (run and p.name in action.run_hidden))


def plain_param_schema(p: Param) -> dict[str, Any]:
    """One parameter as an MCP tool declares it: its own type (an `object_ok`
    parameter takes the object or its JSON text), absent when not given."""
    schema: dict[str, Any] = {"type": ["object", p.type] if p.object_ok else p.type,
                              "description": p.description}
    if p.type == "array":
        schema["items"] = {"type": "string"}
    if p.enum is not None:
        schema["enum"] = list(p.enum)
    return schema


def action_schema(action: Action) -> dict[str, Any]:
    """One MCP tool's input schema: plain types, only what it needs required."""
    props = {p.name: plain_param_schema(p) for p in action.params}
    return {"type": "object", "properties": props,
            "required": [p.name for p in action.params if p.required],
            "additionalProperties": False}


def _merged(params: list[tuple[Action, Param]], run: bool, plain: bool = False) -> dict[str, Any]:
    """One property of the combined tool, used by several actions: the same
    type everywhere; its description says what it means for each action."""
    first = params[0][1]
    schema = plain_param_schema(first) if plain else param_schema(first, run)
    if len(params) > 1:
        schema["description"] = " ".join(
            f"{a.name}: {param_schema(p, run)['description']}" for a, p in params)
    else:
        schema["description"] = f"{params[0][0].name}: {param_schema(first, run)['description']}"
    return schema


def plain_subagent_schema() -> dict[str, Any]:
    """The `subagent` tool's parameters as an MCP tool declares them: only
    `action` required, the others of their own type and left out when not
    given (MCP clients that check arguments refuse a call that leaves out a
    parameter listed as required)."""
    by_param: dict[str, list[tuple[Action, Param]]] = {}
    for a in ACTIONS:
        for p in a.params:
            by_param.setdefault(p.name, []).append((a, p))
    doc = " ".join(f"{a.name}: {a.description}" for a in ACTIONS)
    props: dict[str, Any] = {"action": {"type": "string", "enum": [a.name for a in ACTIONS],
                                        "description": doc}}
    for name, uses in by_param.items():
        props[name] = _merged(uses, False, plain=True)
    return {"type": "object", "properties": props, "required": ["action"],
            "additionalProperties": False}


def subagent_schema(run: bool = False) -> dict[str, Any]:
    """The `subagent` tool's parameters: `action` plus every action's parameters."""
    actions = [a for a in ACTIONS if a.in_run or not run]
    by_param: dict[str, list[tuple[Action, Param]]] = {}
    for a in actions:
        for p in offered(a, run):
            by_param.setdefault(p.name, []).append((a, p))
    lines = " ".join(f"{a.name}: {(a.run_description if run and a.run_description else a.description)}"
                      for a in actions)
    props: dict[str, Any] = {"action": {"type": "string", "enum": [a.name for a in actions],
                                        "description": lines}}
    for name, uses in by_param.items():
        props[name] = _merged(uses, run)
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


def tool_schema(run: bool = False) -> dict[str, Any]:
    """The OpenAI function-tool form of the `subagent` tool (what
    `zapcli tool-schema` prints; `strict: true` holds for it)."""
    return {"type": "function", "function": {
        "name": TOOL_NAME, "description": DESCRIPTION + (RUN_NOTE if run else ""),
        "parameters": subagent_schema(run), "strict": True}}


FORMATS = ("openai", "responses", "anthropic", "mcp")


def tool_definition(fmt: str = "openai") -> dict[str, Any]:
    """The `subagent` tool as a framework declares a tool (`zapcli
    tool-schema --format`): `openai` Chat Completions' function tool (strict),
    `responses` the Responses API's function tool (strict), `anthropic` a
    Messages API tool (`input_schema`), `mcp` an MCP `Tool` (`inputSchema`,
    annotations; one tool for every action, where `zapcli mcp serve` serves
    one tool per action). A call's arguments, as JSON, are what `zapcli call`
    takes. Raises ValueError for another format."""
    if fmt == "openai":
        return tool_schema()
    if fmt == "responses":
        return {"type": "function", "name": TOOL_NAME, "description": DESCRIPTION,
                "parameters": subagent_schema(), "strict": True}
    if fmt == "anthropic":
        return {"name": TOOL_NAME, "description": DESCRIPTION, "input_schema": subagent_schema()}
    if fmt == "mcp":
        return {"name": TOOL_NAME, "title": "zapcli subagents", "description": DESCRIPTION,
                "inputSchema": plain_subagent_schema(),
                "annotations": {"title": "zapcli subagents", "readOnlyHint": False,
                                "destructiveHint": True, "idempotentHint": False,
                                "openWorldHint": True}}
    raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
