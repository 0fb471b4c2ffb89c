"""C14 — tool names (CASES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zapcli.definitions import parse_definition, resolve
from zapcli.errors import ZapcliError


def parse(body: str):
    return parse_definition("name: t\ndescription: test\n" + body, "t.yaml")


def test_names_resolve_case_insensitively_to_canonical_deduplicated() -> None:
    definition, diags = parse("tools: [read, GREP, Bash, Read]\n")
    assert diags == []
    assert definition.tools == ("read", "grep", "bash")


def test_webfetch_canonical_spelling() -> None:
    definition, _ = parse("tools: [webfetch, WEBSEARCH, Task_Output]\n")
    assert definition.tools == ("WebFetch", "WebSearch", "task_output")


def test_misspelt_tool_is_a_diagnostic_naming_it_and_suggesting() -> None:
    definition, diags = parse("tools: [Read, Serch]\n")
    assert definition is None  # never a quiet run with fewer tools
    assert len(diags) == 1
    text = str(diags[0])
    assert text.startswith("t.yaml:3:15:")
    assert "'Serch'" in text and "did you mean 'grep'?" in text


@pytest.mark.parametrize("wrong, near", [("Reed", "read"), ("bassh", "bash"),
                                         ("Web_Fetch", "WebFetch"), ("TodoWrite", "todo"),
                                         ("MultiEdit", "edit")])
def test_suggestions(wrong: str, near: str) -> None:
    _, diags = parse(f"tools: [{wrong}]\n")
    assert f"did you mean '{near}'?" in diags[0].message


def test_allowed_tools_is_an_unknown_key_never_all_tools() -> None:
    definition, diags = parse("allowedTools: [Read]\n")
    assert definition is None
    assert len(diags) == 1
    assert str(diags[0]).startswith("t.yaml:3:1: unknown key 'allowedTools' (did you mean 'tools'?)")


def test_empty_tools_means_none_and_missing_tools_means_none() -> None:
    assert parse("tools: []\n")[0].tools == ()
    assert parse("")[0].tools == ()


@pytest.mark.parametrize("name", ["memory_write", "mcp_call", "kb_search", "ask_user",
                                  "mcp__github__create_issue", "subagent"])
def test_never_grantable_names_are_refused_with_a_reason(name: str) -> None:
    definition, diags = parse(f"tools: [read, {name}]\n")
    assert definition is None
    assert "never grantable" in diags[0].message


def test_resolve_reports_the_misspelt_tool(ws: Path, write) -> None:
    write(ws / ".zapcli" / "subagents", "s.yml", "name: s\ndescription: d\ntools: [Read, Serch]\n")
    with pytest.raises(ZapcliError) as info:
        resolve("s", ws)
    assert "s.yml:3:15: unknown tool 'Serch' (did you mean 'grep'?)" in info.value.message
