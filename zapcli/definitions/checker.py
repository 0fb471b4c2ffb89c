"""Reading a definition's YAML node tree with diagnostics at line:col: the
`Checker` every key's validation uses, how a YAML value reads in words, and
the key a misspelt one most likely meant.
Imports yaml, and the definitions room's toolnames (what is a close match).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from zapcli.definitions.model import Diagnostic
from zapcli.definitions.toolnames import closest

# Keys other tools use, suggested when a close match (`closest`) would not find them.
_KEY_ALIASES = {
    "allowedtools": "tools", "allowed_tools": "tools", "allowed-tools": "tools",
    "tool": "tools", "max_turns": "maxTurns", "max-turns": "maxTurns",
    "maxturns": "maxTurns", "turns": "maxTurns", "system_prompt": "prompt",
    "systemprompt": "prompt", "instructions": "prompt", "mcpservers": "mcp",
    "mcp_servers": "mcp", "servers": "mcp", "skill": "skills", "environment": "env",
    "knowledgebase": "knowledge", "kb": "knowledge", "desc": "description",
    "sandbox_mode": "sandbox", "sandboxing": "sandbox", "permissions": "sandbox",
    "net": "network", "internet": "network", "writable_roots": "writable",
    "writeable": "writable", "write": "writable", "labels": "board",
}
STR_TAG, BOOL_TAG, INT_TAG, NULL_TAG = ("tag:yaml.org,2002:" + t for t in ("str", "bool", "int", "null"))


def suggest_key(key: str, keys: tuple[str, ...]) -> str | None:
    """The closest valid key for a misspelt one (`allowedTools` → `tools`), or None."""
    low = key.lower()
    if low in _KEY_ALIASES and _KEY_ALIASES[low] in keys:
        return _KEY_ALIASES[low]
    return closest(key, list(keys))


def describe(node: yaml.Node) -> str:
    """How YAML read a value, in words: `the boolean false (\"no\")`, `a list`, …"""
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if node.tag == BOOL_TAG:
        value = node.value.lower() in ("yes", "true", "on", "y")
        return f"the boolean {str(value).lower()} (`{node.value}`)"
    if node.tag == NULL_TAG:
        return "nothing (null)"
    if node.tag == STR_TAG:
        text = node.value if len(node.value) <= 60 else node.value[:59] + "…"
        return f"the text {text!r}"
    kind = node.tag.rsplit(":", 1)[-1]
    return f"the {'number' if kind in ('int', 'float') else kind} {node.value}"


MAX_MESSAGE = 240  # characters of one diagnostic message

class Checker:
    """Collects diagnostics for one file while reading its node tree."""

    def __init__(self, file: str):
        self.file = file
        self.diags: list[Diagnostic] = []

    def bad(self, node: yaml.Node | None, message: str, hint: str = "") -> None:
        line, col = (node.start_mark.line + 1, node.start_mark.column + 1) if node else (1, 1)
        if len(message) > MAX_MESSAGE:  # quoted file content (a symlink to any file) stays short
            message = message[:MAX_MESSAGE - 1] + "…"
        self.diags.append(Diagnostic(self.file, line, col, message, hint))

    def mapping(self, node: yaml.Node, where: str, keys: tuple[str, ...]) -> dict[str, Any]:
        """Keys → (key node, value node); unknown and duplicate keys are diagnostics."""
        out: dict[str, Any] = {}
        if not isinstance(node, yaml.MappingNode):
            self.bad(node, f"{where} must be a mapping of keys, not {describe(node)}")
            return out
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == "<<":
                self.bad(key_node, "YAML merge keys (<<) are not supported", "write the keys out")
                continue
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != STR_TAG:
                self.bad(key_node, f"{where}: keys must be plain names, not {describe(key_node)}")
                continue
            key = key_node.value
            if key in out:
                first = out[key][0].start_mark.line + 1
                self.bad(key_node, f"key '{key}' is given twice (first on line {first})",
                         "keep one of them; YAML would silently use the last")
            elif key not in keys:
                near = suggest_key(key, keys)
                if key.lower().replace("_", "") == "allowedtools":
                    self.bad(key_node, f"unknown key '{key}' (did you mean 'tools'?); it grants "
                             "nothing: only the tools listed under `tools` are given",
                             "rename it to `tools`")
                else:
                    self.bad(key_node, f"unknown key '{key}'" + (
                        f" (did you mean '{near}'?)" if near else ""),
                        f"rename it to `{near}`" if near else f"valid keys: {', '.join(keys)}")
            out.setdefault(key, (key_node, value_node))
        return out

    def text(self, node: yaml.Node, key: str, hint: str = "") -> str | None:
        if isinstance(node, yaml.ScalarNode) and node.tag == STR_TAG:
            return str(node.value)
        self.bad(node, f"`{key}` must be text, not {describe(node)}",
                 hint or (f"quote it: {key}: \"{node.value}\"" if isinstance(
                     node, yaml.ScalarNode) and node.tag != NULL_TAG else ""))
        return None

    def names(self, node: yaml.Node, key: str, pattern: re.Pattern[str], example: str
              ) -> list[tuple[str, yaml.Node]] | None:
        """A list of names → [(name, node)], or None after a diagnostic."""
        if not isinstance(node, yaml.SequenceNode):
            hint = f"write it as a list: {key}: [{example}]"
            if isinstance(node, yaml.ScalarNode) and node.tag == STR_TAG and node.value.strip():
                parts = [p for p in re.split(r"[,\s]+", node.value) if p]
                hint = f"write it as a list: {key}: [{', '.join(parts)}]"
            self.bad(node, f"`{key}` must be a list, not {describe(node)}", hint)
            return None
        out: list[tuple[str, yaml.Node]] = []
        for item in node.value:
            if not (isinstance(item, yaml.ScalarNode) and item.tag == STR_TAG):
                self.bad(item, f"each entry of `{key}` must be a name, not {describe(item)}")
            elif not pattern.match(item.value):
                self.bad(item, f"{item.value!r} is not a valid name in `{key}`",
                         f"use letters, digits, '-', '_' or '.' (e.g. {example})")
            else:
                out.append((item.value, item))
        return out


