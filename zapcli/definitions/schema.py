"""The definition schema (docs/explanation/rules.md#definition-format): node tree → Definition, or Diagnostics at line:col.
Imports yaml, zapcli.definitions.{checker, model, toolnames, yamlload}.

Strict on purpose: an unknown key, a duplicate key or a value of the wrong
YAML type makes the definition invalid (it is never run with defaults). Every
problem in the file is reported, each where it sits.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from zapcli.definitions import toolnames
from zapcli.definitions.checker import BOOL_TAG, INT_TAG, STR_TAG, Checker, describe
from zapcli.definitions.model import (
    DEFAULT_MAX_TURNS,
    MEMORY_MODES,
    Definition,
    Diagnostic,
    KnowledgeSource,
    knowledge_path_problem,
)
from zapcli.definitions.yamlload import compose_text

KEYS = ("name", "description", "tools", "skills", "mcp", "knowledge", "memory",
        "maxTurns", "model", "env", "prompt", "cli", "team", "sandbox", "board")
SANDBOX_KEYS = ("network", "writable", "sockets", "scratch_size")
BOARD_EXAMPLE = "board: {labels: [review]}"
MAX_LABEL = 64  # as a task's label
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
ITEM_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # skill, server, knowledge names
ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_NAME = 64
MAX_SKILLS = 16
MAX_TURNS_LIMIT = 1000

def _tools(c: Checker, node: yaml.Node) -> tuple[str, ...]:
    entries = c.names(node, "tools", re.compile(r"^\S+$"), "read, grep")
    out: list[str] = []
    for name, item in entries or ():
        canonical = toolnames.canonical_tool(name)
        if canonical is None:
            reason = toolnames.never_grantable_reason(name)
            if reason:
                c.bad(item, f"tool '{name}' is never grantable: {reason}")
                continue
            near = toolnames.suggest_tool(name)
            c.bad(item, f"unknown tool '{name}'" + (f" (did you mean '{near}'?)" if near else ""),
                  f"grantable tools: {', '.join(toolnames.GRANTABLE)}")
        elif canonical not in out:
            out.append(canonical)
    return tuple(out)


def _dedup(entries: list[tuple[str, yaml.Node]] | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for name, _ in entries or ()))


def _knowledge(c: Checker, node: yaml.Node) -> tuple[KnowledgeSource, ...]:
    if not isinstance(node, yaml.SequenceNode):
        c.bad(node, f"`knowledge` must be a list of {{name, path}}, not {describe(node)}",
              "knowledge: [{name: docs, path: \"docs/**/*.md\"}]")
        return ()
    out: list[KnowledgeSource] = []
    for item in node.value:
        fields = c.mapping(item, "each knowledge entry", ("name", "path"))
        if not isinstance(item, yaml.MappingNode):
            continue
        missing = [k for k in ("name", "path") if k not in fields]
        if missing:
            c.bad(item, f"knowledge entry lacks {' and '.join(missing)}",
                  "knowledge: [{name: docs, path: \"docs/**/*.md\"}]")
            continue
        name = c.text(fields["name"][1], "name")
        path = c.text(fields["path"][1], "path")
        if name is None or path is None:
            continue
        problem = knowledge_path_problem(path)
        if not ITEM_RE.match(name):
            c.bad(fields["name"][1], f"{name!r} is not a valid knowledge name",
                  "use letters, digits, '-', '_' or '.'")
        elif any(k.name == name for k in out):
            c.bad(fields["name"][1], f"knowledge name '{name}' is given twice")
        elif problem:
            c.bad(fields["path"][1], f"knowledge path {path!r} is refused: {problem}",
                  "use a glob relative to the workspace, e.g. docs/**/*.md")
        else:
            out.append(KnowledgeSource(name, path))
    return tuple(out)


def _memory(c: Checker, node: yaml.Node) -> str | None:
    if isinstance(node, yaml.ScalarNode) and node.tag == STR_TAG and node.value in MEMORY_MODES:
        return str(node.value)
    if isinstance(node, yaml.ScalarNode) and node.tag == BOOL_TAG:
        off = node.value.lower() in ("no", "false", "off", "n")
        c.bad(node, f"`memory: {node.value}` is YAML's boolean {str(not off).lower()}, "
              "not a memory mode", "write `memory: none`" if off else
              "write `memory: private` or `memory: shared`")
        return None
    c.bad(node, f"`memory` must be one of none, private, shared; not {describe(node)}")
    return None


CLI_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
def _check_fields(c: Checker, f: dict[str, Any]) -> dict[str, Any]:
    v: dict[str, Any] = {}
    if "name" in f:
        name = c.text(f["name"][1], "name")
        if name is not None and (not NAME_RE.match(name) or len(name) > MAX_NAME):
            c.bad(f["name"][1], f"name {name!r} is not valid: use lower-case letters, digits "
                  "and '-', starting with a letter or digit", f"e.g. name: {_slug(name)}")
        elif name is not None:
            v["name"] = name
    if "description" in f:
        desc = c.text(f["description"][1], "description")
        if desc is not None and not desc.strip():
            c.bad(f["description"][1], "`description` is empty",
                  "say in one line what it does and when to use it")
        elif desc is not None:
            v["description"] = desc.strip()
    if "tools" in f:
        v["tools"] = _tools(c, f["tools"][1])
    if "skills" in f:
        skills = c.names(f["skills"][1], "skills", ITEM_RE, "pdf-tools")
        v["skills"] = _dedup(skills)
        if len(v["skills"]) > MAX_SKILLS:
            c.bad(f["skills"][1], f"{len(v['skills'])} skills declared; at most {MAX_SKILLS}")
    if "mcp" in f:
        mcp = c.mapping(f["mcp"][1], "`mcp`", ("servers",))
        if isinstance(f["mcp"][1], yaml.MappingNode) and "servers" not in mcp:
            c.bad(f["mcp"][1], "`mcp` lacks `servers`", "mcp: {servers: [github]}")
        if "servers" in mcp:
            v["mcp_servers"] = _dedup(c.names(mcp["servers"][1], "servers", ITEM_RE, "github"))
    if "knowledge" in f:
        v["knowledge"] = _knowledge(c, f["knowledge"][1])
    if "memory" in f:
        v["memory"] = _memory(c, f["memory"][1])
    if "maxTurns" in f:
        node = f["maxTurns"][1]
        turns = _as_int(node)
        ok = turns is not None
        turns = turns or 0
        if not ok or not 1 <= turns <= MAX_TURNS_LIMIT:
            c.bad(node, f"`maxTurns` must be a whole number from 1 to {MAX_TURNS_LIMIT}, "
                  f"not {describe(node)}")
        v["max_turns"] = turns
    if "model" in f:
        model = c.text(f["model"][1], "model")
        if model is not None and not model.strip():
            c.bad(f["model"][1], "`model` is empty", "remove the key to use the session default")
        v["model"] = model
    if "env" in f:
        v["env"] = _dedup(c.names(f["env"][1], "env", ENV_RE, "GITHUB_TOKEN"))
    if "prompt" in f:
        v["prompt"] = c.text(f["prompt"][1], "prompt", "write the prompt as a block: prompt: |")
    _runs_on(c, f, v)
    return v


def _runs_on(c: Checker, f: dict[str, Any], v: dict[str, Any]) -> None:
    """`cli` (the backend), `team` (the board and message tools), `sandbox`,
    `board` (the task labels it serves)."""
    if "cli" in f:
        cli = c.text(f["cli"][1], "cli")
        if cli is not None and not CLI_RE.match(cli):
            c.bad(f["cli"][1], f"`cli: {cli}` is not a backend name",
                  "name one of the backends `zapcli doctor` lists, e.g. cli: sh")
        elif cli is not None:
            v["cli"] = cli
    if "team" in f:
        node = f["team"][1]
        if isinstance(node, yaml.ScalarNode) and node.tag == BOOL_TAG:
            v["team"] = node.value.lower() in ("yes", "true", "on", "y")
        else:
            c.bad(node, f"`team` must be true or false, not {describe(node)}",
                  "team: true gives it the session's board and message tools")
    if "sandbox" in f:
        from zapcli.definitions.sandbox_schema import sandbox

        v["sandbox"] = sandbox(c, f["sandbox"][1])
    if "board" in f:
        v["board_labels"] = _board(c, f["board"][1])


def _board(c: Checker, node: yaml.Node) -> tuple[str, ...]:
    """`board: {labels: [...]}`: the task labels its claims serve."""
    fields = c.mapping(node, "`board`", ("labels",))
    if "labels" not in fields:
        if isinstance(node, yaml.MappingNode) and not fields:  # else: an unknown key, said
            c.bad(node, "`board` lacks `labels`", BOARD_EXAMPLE)
        return ()
    value = fields["labels"][1]
    if not isinstance(value, yaml.SequenceNode):
        c.bad(value, f"`board.labels` must be a list of task labels, not {describe(value)}",
              BOARD_EXAMPLE)
        return ()
    labels: list[str] = []
    for item in value.value:
        text = item.value if isinstance(item, yaml.ScalarNode) and item.tag == STR_TAG else None
        if text is None or not text.strip() or len(text) > MAX_LABEL or "\n" in text:
            c.bad(item, f"each entry of `board.labels` must be a task label (one line of 1 to "
                  f"{MAX_LABEL} characters), not {describe(item)}", BOARD_EXAMPLE)
        elif text not in labels:
            labels.append(text)
    return tuple(labels)


def _as_int(node: yaml.Node) -> int | None:
    if not (isinstance(node, yaml.ScalarNode) and node.tag == INT_TAG):
        return None
    try:
        return int(node.value.replace("_", ""), 10)
    except ValueError:
        return None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "my-agent"


def validate_node(root: yaml.Node, file: str, *, layer: str = "workspace",
                  source: str | None = None) -> tuple[Definition | None, list[Diagnostic]]:
    """Check a composed definition. Returns (Definition, []) or (None, diagnostics)."""
    c = Checker(file)
    fields = c.mapping(root, "a definition", KEYS)
    if not isinstance(root, yaml.MappingNode):
        return None, c.diags
    for required in ("name", "description"):
        if required not in fields:
            c.bad(root, f"missing required key '{required}'",
                  "a definition needs `name:` and `description:`")
    values = _check_fields(c, fields)
    if c.diags:
        return None, sorted(c.diags, key=lambda d: (d.line, d.column))
    return Definition(
        name=values["name"], description=values["description"],
        tools=values.get("tools", ()), skills=values.get("skills", ()),
        mcp_servers=values.get("mcp_servers", ()), knowledge=values.get("knowledge", ()),
        memory=values.get("memory", "none"), max_turns=values.get("max_turns", DEFAULT_MAX_TURNS),
        model=values.get("model"), env=values.get("env", ()), prompt=values.get("prompt", ""),
        cli=values.get("cli"), team=values.get("team", False), sandbox=values.get("sandbox"),
        board_labels=values.get("board_labels", ()),
        layer=layer, source=source if source is not None else file,
        declared=frozenset(fields),
    ), []


def parse_definition(text: str, file: str, *, layer: str = "workspace",
                     source: str | None = None) -> tuple[Definition | None, list[Diagnostic]]:
    """YAML text → (Definition, []) or (None, diagnostics naming file, line, column)."""
    root, diags = compose_text(text, file)
    if root is None:
        return None, diags
    return validate_node(root, file, layer=layer, source=source)
