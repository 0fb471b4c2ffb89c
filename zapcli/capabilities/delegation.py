"""Delegation never widens: what a subagent (or a run) may reach, and what a
child it starts would reach beyond that.

Imports `zapcli.approvals` (the write ceiling of an approval mode) only. A
`Reach` is read from spawn-record fields — the frozen definition and grant,
the approval mode, the workspace and writable roots, the sandbox — the same
for the child being spawned, for a subagent whose work spawns (its spawn
record), and for a `zapcli run` (the same fields, made by the run). `wider`
names each capability the child would hold and its spawner does not: tools,
MCP servers, the network, commands outside the sandbox, where it writes
without asking, a looser approval mode. `zapcli.ops.spawn` asks the person
about a spawn that widens (or refuses it, saying what the model may do).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zapcli.approvals import MODES, write_ceiling

WRITERS = frozenset({"write", "edit", "bash"})  # tools that write beyond zapcli's own folders
# What a shell holds anyway: a file tool reads and writes only where its commands may (the
# writes and sandbox checks below compare those), and a fetch reaches only what its commands
# reach; so `bash` covers these, and `bash` with the network the web tools too.
BASH_COVERS = frozenset({"read", "write", "edit", "glob", "grep", "todo", "task_output",
                         "task_stop"})
NETWORK_COVERS = frozenset({"webfetch", "websearch"})


@dataclass(frozen=True)
class Reach:
    """What one subagent (or run) may reach. None: without bound (an agent CLI
    whose tools no definition restricts; writes anywhere)."""

    label: str  # "agent reader", "a shell command", "claude"
    tools: frozenset[str] | None
    mcp: frozenset[str] | None
    network: bool  # its commands reach the network
    sandboxed: bool  # its commands run in zapcli's sandbox
    writes: tuple[str, ...] | None  # where it writes without asking; None: anywhere
    approval: str | None  # its approval mode; None: a command (approved itself, as bash)


def _names(value: Any) -> frozenset[str]:
    return frozenset(v for v in value if isinstance(v, str)) if isinstance(value, list) else frozenset()


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def reach_of(fields: Mapping[str, Any]) -> Reach:
    """The reach of spawn-record `fields` (a subagent, a child being spawned, a run)."""
    cli = fields.get("cli") or "zapcli"
    declared = isinstance(fields.get("definition"), dict)
    definition, grant = _dict(fields.get("definition")), _dict(fields.get("grant"))
    mode = str(fields.get("approval")) if fields.get("approval") in MODES else "workspace"
    sandboxed = (fields.get("sandbox") or "off") != "off"
    workspace = str(fields.get("workspace") or "")
    roots = [str(r) for r in fields.get("writable_roots") or () if isinstance(r, str)]
    if cli == "sh":
        return Reach("a shell command", frozenset({"bash"}), frozenset(), not sandboxed, sandboxed,
                     tuple(r for r in (workspace, *roots) if r) if sandboxed else None, None)
    servers = _names(_dict(grant.get("mcp")).get("servers") or _dict(definition.get("mcp")).get("servers"))
    if cli != "zapcli":  # an agent CLI: its own tools (a definition restricts them), its own network
        label = f"{cli} (agent {definition.get('name')})" if declared else str(cli)
        return Reach(label, _names(definition.get("tools")) if declared else None, servers, True,
                     False, None, mode)
    tools = _names(grant.get("tool_names") or grant.get("tools") or definition.get("tools"))
    network = "bash" in tools and (_dict(definition.get("sandbox")).get("network") is True
                                   or not sandboxed)
    ceiling, _protected = write_ceiling(mode, workspace, tuple(roots))
    writes = ceiling if tools & WRITERS else ()  # None (anywhere) when its mode lets edits anywhere
    name = definition.get("name") or fields.get("agent") or "general"
    return Reach(f"agent {name}", tools, servers, network, sandboxed, writes, mode)


def _under(path: str, roots: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def wider(spawner: Reach, child: Reach, *, own_tree: str | None = None) -> list[str]:
    """What `child` would hold that `spawner` does not, one phrase each
    (empty: within). `own_tree`: the child's own git worktree, a copy it may
    write (its work reaches the checkout only through a merge, which asks)."""
    out: list[str] = []
    if spawner.tools is not None:
        held = {t.lower() for t in spawner.tools}
        if "bash" in held:
            held |= BASH_COVERS | (NETWORK_COVERS if spawner.network else frozenset())
        if child.tools is None:
            out.append(f"every tool {child.label} has")
        elif extra := sorted((t for t in child.tools if t.lower() not in held), key=str.lower):
            out.append("tools " + ", ".join(extra))
    if spawner.mcp is not None and (child.mcp is None or child.mcp - spawner.mcp):
        out.append("MCP servers " + (", ".join(sorted(child.mcp - spawner.mcp))
                                     if child.mcp is not None else "of its own"))
    if child.network and not spawner.network:
        out.append("the network")
    runs_commands = child.tools is None or "bash" in child.tools
    if runs_commands and spawner.sandboxed and not child.sandboxed:
        out.append("commands outside the sandbox")
    if spawner.writes is not None:
        if child.writes is None:
            out.append("writes anywhere without asking")
        else:
            places = [w for w in child.writes
                      if not _under(w, spawner.writes) and not (own_tree and _under(w, [own_tree]))]
            if places:
                out.append("writes in " + ", ".join(places))
    if (child.approval is not None and spawner.approval is not None
            and MODES.index(child.approval) > MODES.index(spawner.approval)):
        out.append(f"approval mode {child.approval} (yours: {spawner.approval})")
    return out


def holding(reach: Reach) -> str:
    """What `reach` holds, in a few words, for a question or a refusal."""
    tools = "any tool" if reach.tools is None else (
        "tools " + ", ".join(sorted(reach.tools, key=str.lower)) if reach.tools else "no tools")
    net = "the network" if reach.network else "no network"
    return f"{reach.label}: {tools}; {net}"
