"""Prompt assembly (docs/explanation/rules.md#prompt-assembly) against golden files, and "undeclared changes no byte".

Regenerate after an intended change: ZAPCLI_UPDATE_GOLDEN=1 pytest tests/capabilities
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from zapcli.capabilities import FRAMEWORK, assemble_prompt, build_grant
from zapcli.capabilities import prompt as prompt_module
from zapcli.definitions import discover

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("ZAPCLI_UPDATE_GOLDEN") == "1"

OWN = "prompt: |\n  You check release notes.\n  Be brief.\n"
DIMENSIONS = {
    "skills": "skills: [pdf, charts]\n",
    "knowledge": "knowledge:\n  - {name: docs, path: 'docs/**/*.md'}\n  - {name: adr, path: adr}\n",
    "mcp": "mcp: {servers: [test, ghost]}\n",
    "memory": "memory: private\n",
}
SECTION = {"skills": "skills_section", "knowledge": "knowledge_section", "mcp": "mcp_section",
           "memory": "memory_section"}
TOOLS = {"skills": ["use_skill"], "knowledge": ["kb_search"],
         "mcp": ["mcp_search", "mcp_describe", "mcp_call"],
         "memory": ["memory_read", "memory_search", "memory_write"]}
CASES = {
    "bare": OWN,
    "no-prompt": "tools: [read]\n",
    "tools-only": "tools: [read, grep, bash]\n" + OWN,
    "skills-on": "tools: [read]\n" + DIMENSIONS["skills"] + OWN,
    "knowledge-on": "tools: [read]\n" + DIMENSIONS["knowledge"] + OWN,
    "mcp-on": "tools: [read]\n" + DIMENSIONS["mcp"] + OWN,
    "memory-on": "tools: [read]\n" + DIMENSIONS["memory"] + OWN,
    "memory-shared-empty": "tools: [read]\nmemory: shared\n" + OWN,
    "all-on": "tools: [read, grep]\n" + "".join(DIMENSIONS.values()) + OWN,
}


@pytest.fixture
def world(ws: Path, isolated: Path, make_skill) -> Path:
    """A workspace with every capability present, fixed contents."""
    make_skill(ws / ".zapcli" / "skills", "pdf", "Extract and summarise PDF files.")
    make_skill(isolated / "home" / ".claude" / "skills", "charts", "Draw charts from CSV data.")
    (ws / "docs").mkdir()
    (ws / "docs" / "guide.md").write_text("guide\n")
    (ws / "adr").mkdir()
    (ws / "adr" / "0001.md").write_text("decision\n")
    (ws / ".zapcli" / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"test": {"command": "true", "allow": ["echo"]}}}))
    memory = ws / ".zapcli" / "agent-memory" / "t"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- The release branch is `release/x`.\n")
    (memory / "style.md").write_text("Prefer short sentences.\n")
    (memory / "huge.md").write_text("z" * 5000)
    (memory / "daily").mkdir()
    (memory / "daily" / "2024-05-01.md").write_text("searchable only\n")
    return ws


def check_golden(name: str, prompt: str, tools: list[str]) -> None:
    prompt_file, tools_file = GOLDEN / f"{name}.prompt.txt", GOLDEN / f"{name}.tools.json"
    tools_text = json.dumps(tools, indent=1) + "\n"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        prompt_file.write_text(prompt, encoding="utf-8")
        tools_file.write_text(tools_text, encoding="utf-8")
    assert prompt_file.read_text(encoding="utf-8") == prompt, f"golden {prompt_file.name} differs"
    assert tools_file.read_text(encoding="utf-8") == tools_text, f"golden {tools_file.name} differs"


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_cases(world: Path, define, case: str) -> None:
    definition = define(CASES[case])
    grant = build_grant(definition, world)
    assert grant.diagnostics == ([] if "mcp" not in CASES[case] else
                                 [grant.diagnostics[0]])  # only `ghost` is unconfigured
    check_golden(case, assemble_prompt(definition, grant), grant.tool_names())


@pytest.mark.parametrize("name", ["general", "explorer", "code-reviewer", "test-runner", "fixer"])
def test_golden_builtins(world: Path, name: str) -> None:
    definition = discover(world).get(name)
    grant = build_grant(definition, world, available_tools=None)
    assert grant.diagnostics == []
    check_golden(f"builtin-{name}", assemble_prompt(definition, grant), grant.tool_names())


def test_without_any_dimension_it_is_framework_then_prompt(world: Path, define) -> None:
    definition = define("tools: [read]\n" + OWN)
    assert assemble_prompt(definition, build_grant(definition, world)) == (
        FRAMEWORK + "\n\nYou check release notes.\nBe brief.")


@pytest.mark.parametrize("dimension", sorted(DIMENSIONS))
def test_an_undeclared_dimension_changes_no_byte(world: Path, define, dimension: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    everything = define("tools: [read, grep]\n" + "".join(DIMENSIONS.values()) + OWN)
    without = define("tools: [read, grep]\n" + "".join(
        v for k, v in DIMENSIONS.items() if k != dimension) + OWN)
    full_grant, less_grant = build_grant(everything, world), build_grant(without, world)
    full_prompt = assemble_prompt(everything, full_grant)
    less_prompt = assemble_prompt(without, less_grant)
    section = getattr(prompt_module, SECTION[dimension])(full_grant)
    assert section and section in full_prompt
    assert less_prompt == full_prompt.replace("\n\n" + section, "", 1)
    assert less_grant.tool_names() == [t for t in full_grant.tool_names()
                                       if t not in TOOLS[dimension]]
    # As if the dimension had never been written: the code without it gives the same bytes.
    monkeypatch.setattr(prompt_module, SECTION[dimension], lambda grant: "")
    assert assemble_prompt(without, less_grant) == less_prompt


def test_catalog_order_is_fixed(world: Path, define) -> None:
    definition = define("tools: [read]\n" + "".join(reversed(list(DIMENSIONS.values()))) + OWN)
    prompt = assemble_prompt(definition, build_grant(definition, world))
    heads = [prompt.index(h) for h in ("## Skills", "## Knowledge", "## MCP servers", "## Memory",
                                       "You check release notes.")]
    assert heads == sorted(heads) and prompt.startswith(FRAMEWORK)
