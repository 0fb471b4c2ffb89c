"""Every tool input schema zapcli publishes passes Anthropic's tool input
rules, and the `subagent` tool (`zapcli tool-schema`, `zapcli run`) OpenAI's
strict function-calling rules too, checked against the rules as documented
(OpenAI: Structured Outputs "Supported schemas"; Anthropic: tool use
"input_schema" and Structured Outputs "JSON Schema limitations"). The MCP
tools' schemas are plain instead (only what is needed is required, no
nullable types), which MCP clients that check arguments need (Gemini CLI)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from zapcli.toolapi.schema import action_schema, subagent_schema, tool_schema
from zapcli.toolapi.spec import ACTIONS

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # both vendors' tool-name rule
TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
# OpenAI strict mode: the keywords it supports (anything else is rejected)
OPENAI_KEYWORDS = {"type", "description", "properties", "required", "additionalProperties",
                   "items", "enum", "const", "anyOf", "$ref", "$defs", "pattern", "format",
                   "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                   "minItems", "maxItems", "title", "default"}
# Anthropic strict tool use: no numeric or string-length bounds, minItems only 0/1
ANTHROPIC_UNSUPPORTED = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                         "multipleOf", "minLength", "maxLength", "maxItems", "uniqueItems",
                         "patternProperties", "propertyNames", "oneOf", "not", "if", "then", "else"}
OPENAI_LIMITS = {"properties": 5000, "depth": 10, "enum_values": 1000, "string_chars": 120_000}


def _nodes(schema: Any, depth: int = 1) -> list[tuple[dict[str, Any], int]]:
    out = [(schema, depth)]
    for sub in (schema.get("properties") or {}).values():
        out += _nodes(sub, depth + 1)
    if isinstance(schema.get("items"), dict):
        out += _nodes(schema["items"], depth + 1)
    for sub in schema.get("anyOf") or []:
        out += _nodes(sub, depth + 1)
    return out


def openai_strict_problems(name: str, schema: dict[str, Any]) -> list[str]:
    bad = [] if NAME.match(name) else [f"name {name!r}"]
    if schema.get("type") != "object" or "anyOf" in schema:
        bad.append("the root must be an object, not anyOf")
    props = chars = enums = 0
    for node, depth in _nodes(schema):
        unknown = set(node) - OPENAI_KEYWORDS
        bad += [f"unsupported keyword {k}" for k in sorted(unknown)]
        types = node.get("type")
        types = types if isinstance(types, list) else [types] if types else []
        bad += [f"type {t}" for t in types if t not in TYPES]
        if "object" in types:
            keys = list(node.get("properties") or {})
            props += len(keys)
            chars += sum(len(k) for k in keys)
            if node.get("additionalProperties") is not False:
                bad.append("an object without additionalProperties: false")
            if sorted(node.get("required") or []) != sorted(keys):
                bad.append("every property must be in required (optional = nullable)")
        if "enum" in node:
            enums += len(node["enum"])
            chars += sum(len(str(v)) for v in node["enum"])
            if "null" in types and None not in node["enum"]:
                bad.append("a nullable enum must list null")
        if depth > OPENAI_LIMITS["depth"]:
            bad.append(f"nested deeper than {OPENAI_LIMITS['depth']}")
    if props > OPENAI_LIMITS["properties"] or enums > OPENAI_LIMITS["enum_values"]:
        bad.append("over OpenAI's size limits")
    if chars > OPENAI_LIMITS["string_chars"]:
        bad.append("over OpenAI's total string length")
    return bad


def anthropic_problems(name: str, schema: dict[str, Any]) -> list[str]:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    bad = [] if NAME.match(name) else [f"name {name!r}"]
    if schema.get("type") != "object":
        bad.append("input_schema must have type object at the root")
    bad += [f"{k} at the top level" for k in ("oneOf", "allOf", "anyOf") if k in schema]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        bad.append(f"not a valid JSON Schema: {exc.message}")
    for node, _depth in _nodes(schema):
        bad += [f"{k} (unsupported by strict tool use)" for k in ANTHROPIC_UNSUPPORTED & set(node)]
        if node.get("type") == "object" and node.get("additionalProperties") is not False:
            bad.append("an object without additionalProperties: false")
        if node.get("minItems", 0) not in (0, 1):
            bad.append("minItems other than 0 or 1")
    return bad


SCHEMAS = [("subagent", tool_schema()["function"]["parameters"]),
           ("subagent(run)", subagent_schema(run=True))]
MCP_SCHEMAS = [(a.name, action_schema(a)) for a in ACTIONS]


@pytest.mark.parametrize(("name", "schema"), SCHEMAS, ids=[n for n, _ in SCHEMAS])
def test_schema_passes_both_rule_sets(name, schema):
    tool = name.split("(")[0]
    assert openai_strict_problems(tool, schema) == []
    assert anthropic_problems(tool, schema) == []


@pytest.mark.parametrize(("name", "schema"), MCP_SCHEMAS, ids=[n for n, _ in MCP_SCHEMAS])
def test_mcp_schema_is_plain_and_passes_anthropics_rules(name, schema):
    assert anthropic_problems(name, schema) == []
    # Claude Code names an MCP tool mcp__<server>__<tool>: still a valid name
    assert NAME.match(f"mcp__zapcli__{name}")
    for prop in schema["properties"].values():
        assert "null" not in str(prop["type"]) and None not in prop.get("enum", [])
    # not the strict shape: what may be left out is not required
    assert "every property must be in required (optional = nullable)" in openai_strict_problems(
        name, schema) or len(schema["required"]) == len(schema["properties"])


def test_the_checkers_can_fail():
    loose = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}},
             "required": []}
    assert "every property must be in required (optional = nullable)" in openai_strict_problems("x", loose)
    assert "an object without additionalProperties: false" in openai_strict_problems("x", loose)
    assert "minimum (unsupported by strict tool use)" in anthropic_problems("x", loose)
    assert anthropic_problems("bad name!", {"anyOf": []})[:2] == [
        "name 'bad name!'", "input_schema must have type object at the root"]
