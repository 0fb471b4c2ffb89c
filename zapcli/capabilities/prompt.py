"""System prompt assembly (docs/explanation/rules.md#prompt-assembly): framework → catalog (skills, knowledge, MCP,
memory) → the definition's prompt. Imports this room and zapcli.definitions.model.

A dimension that is not granted contributes nothing at all — no heading, no
blank line — so a definition without it gets byte-for-byte the prompt it had
before that dimension existed (golden files in tests/capabilities/golden/).
"""

from __future__ import annotations

from pathlib import Path

from zapcli.capabilities import knowledge as kb
from zapcli.capabilities import memory as mem
from zapcli.capabilities import skills as sk
from zapcli.capabilities.grant import Grant
from zapcli.definitions.model import Definition

FRAMEWORK = """\
You are a zapcli subagent: a background worker started to do one task. Nobody \
watches you work and nobody can answer questions while you do, so decide for \
yourself and state the assumptions you made.

- Use only the tools you were given; anything else does not exist here.
- Work inside the workspace. Check by reading and running rather than guessing.
- When the task is done, answer without calling a tool. That answer is your \
report to whoever started you: lead with the result, then the evidence \
(file:line references, commands and their outcome), then anything left open."""


def skills_section(grant: Grant) -> str:
    if not grant.skills:
        return ""
    head = ("## Skills\nInstructions for specific kinds of work. When the task calls for "
            "one, load it with use_skill(name) and follow it.")
    return "\n".join([head, *sk.prompt_lines(grant.skills, Path(grant.workspace))])


def knowledge_section(grant: Grant) -> str:
    if not grant.knowledge:
        return ""
    head = ("## Knowledge\nReference sources in the workspace. Search them with "
            "kb_search(query); open a hit with read.")
    return "\n".join([head, *kb.prompt_lines(grant.knowledge)])


def mcp_section(grant: Grant) -> str:
    if not grant.mcp_servers:
        return ""
    head = ("## MCP servers\nExternal tools behind a gateway: find them with mcp_search, "
            "read a tool's parameters with mcp_describe, run one with mcp_call(server, tool, "
            "arguments). Tools that are not pre-approved wait for approval.")
    lines = [f"- {name}" + ("" if name in grant.mcp_configs else " (not configured)")
             for name in grant.mcp_servers]
    return "\n".join([head, *lines])


def memory_section(grant: Grant) -> str:
    if grant.memory == "none" or not grant.memory_dir:
        return ""
    return mem.prompt_section(Path(grant.memory_dir), grant.memory, Path(grant.workspace))


def catalog_sections(grant: Grant) -> list[str]:
    """The non-empty catalog sections, in the fixed order."""
    parts = [skills_section(grant), knowledge_section(grant), mcp_section(grant),
             memory_section(grant)]
    return [p for p in parts if p]


def assemble_prompt(definition: Definition, grant: Grant) -> str:
    """The system prompt: parts joined by one blank line, no trailing newline.

    Memory files are read now, so assemble in the child at start.
    """
    parts = [FRAMEWORK, *catalog_sections(grant)]
    own = definition.prompt.strip("\n")
    if own.strip():
        parts.append(own)
    return "\n\n".join(parts)
