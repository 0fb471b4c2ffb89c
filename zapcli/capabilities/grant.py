"""Definition → Grant (docs/explanation/rules.md#undeclared-means-unreachable): what a subagent may reach, and the tools that reach it.
Imports zapcli.definitions and this room: skills, knowledge, memory and the MCP configs only
for what a definition declares; captools/mcp_gateway (zapcli.agent, mcp) lazily.

`build_grant` runs in the parent at spawn (no processes started, `mcp` not
imported) and is frozen into the spawn record with `to_dict`; the child reads
it back with `from_dict` and calls `open_tools` to build the capability tools
(use_skill, kb_search, mcp_*, memory_*), which starts the MCP servers.
Undeclared means unreachable: every declared-but-unavailable item is a
diagnostic `{dimension, name, message}`, never a silent drop.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from zapcli.definitions.model import MEMORY_MODES, Definition, KnowledgeSource
from zapcli.definitions.toolnames import GRANTABLE, canonical_tool, never_grantable_reason
from zapcli.plain import field, plain

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.agent.types import Approver
    from zapcli.capabilities import skills as sk
    from zapcli.capabilities.mcpconfig import ServerConfig

SKILL_TOOLS = ("use_skill",)
KNOWLEDGE_TOOLS = ("kb_search",)
MCP_TOOLS = ("mcp_search", "mcp_describe", "mcp_call")
MEMORY_TOOLS = ("memory_read", "memory_search", "memory_write")
TEAM_TOOLS = ("board", "message")  # `team: true`: built by the caller (zapcli.team), not here


def _diag(dimension: str, name: str, message: str) -> dict[str, str]:
    return {"dimension": dimension, "name": name, "message": message}


@plain
class Grant:
    """What one subagent is granted. `tools` are built-in tool names (canonical, in
    declared order, never `use_skill`); the capability tools follow from the rest."""

    name: str
    workspace: str
    tools: tuple[str, ...] = ()
    skills: tuple[sk.Skill, ...] = ()
    knowledge: tuple[KnowledgeSource, ...] = ()
    memory: str = "none"
    memory_dir: str | None = None
    mcp_servers: tuple[str, ...] = ()
    mcp_configs: dict[str, ServerConfig] = field(default_factory=dict)
    diagnostics: list[dict[str, str]] = field(default_factory=list)
    team: bool = False  # the session's board and message tools

    def tool_names(self) -> list[str]:
        """The exact tool list the model sees, in catalog order."""
        names = list(self.tools)
        names += list(SKILL_TOOLS) if self.skills else []
        names += list(KNOWLEDGE_TOOLS) if self.knowledge else []
        names += list(MCP_TOOLS) if self.mcp_servers else []
        names += list(MEMORY_TOOLS) if self.memory != "none" else []
        names += list(TEAM_TOOLS) if self.team else []
        return names

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready frozen form (no secret env values; see ServerConfig.frozen)."""
        return {
            "name": self.name, "workspace": self.workspace, "tools": list(self.tools),
            "skills": [s.to_dict() for s in self.skills],
            "knowledge": [{"name": k.name, "path": k.path} for k in self.knowledge],
            "memory": self.memory, "memory_dir": self.memory_dir,
            "mcp": {"servers": list(self.mcp_servers),
                    "configs": [c.frozen() for c in self.mcp_configs.values()]},
            "tool_names": self.tool_names(), "diagnostics": list(self.diagnostics),
            **({"team": True} if self.team else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grant:
        """Rebuild from `to_dict()`. Raises ValueError on a malformed record."""
        try:
            mcp = data.get("mcp") or {}
            configs: list[ServerConfig] = []
            if mcp.get("configs"):
                from zapcli.capabilities.mcpconfig import ServerConfig

                configs = [ServerConfig.thaw(c) for c in mcp["configs"]]
            skills: tuple[sk.Skill, ...] = ()
            if data.get("skills"):
                from zapcli.capabilities import skills as sk

                skills = tuple(sk.Skill(**s) for s in data["skills"])
            memory = data.get("memory") or "none"
            if memory not in MEMORY_MODES:
                raise ValueError(f"memory mode {memory!r}")
            return cls(
                name=data["name"], workspace=data["workspace"], tools=tuple(data.get("tools") or ()),
                skills=skills,
                knowledge=tuple(KnowledgeSource(k["name"], k["path"])
                                for k in data.get("knowledge") or ()),
                memory=memory, memory_dir=data.get("memory_dir"),
                mcp_servers=tuple(mcp.get("servers") or ()),
                mcp_configs={c.name: c for c in configs},
                diagnostics=list(data.get("diagnostics") or ()), team=data.get("team") is True)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed frozen grant: {exc}") from None


def _grant_tools(definition: Definition, available: set[str]
                 ) -> tuple[tuple[str, ...], list[dict[str, str]]]:
    granted: list[str] = []
    diags: list[dict[str, str]] = []
    for name in definition.tools:
        canonical = canonical_tool(name)
        if canonical is None:
            reason = never_grantable_reason(name) or "it is not a grantable tool"
            diags.append(_diag("tools", name, f"`{name}` refused: {reason}"))
        elif canonical == "use_skill":
            if not definition.skills:
                diags.append(_diag("tools", name, "use_skill has nothing to load: the "
                                   "definition declares no skills"))
        elif canonical not in available:
            diags.append(_diag("tools", canonical, f"`{canonical}` is declared but not available "
                               "in this session's tool table" + (
                                   " (no search provider is configured: set ZAPCLI_SEARCH_URL)"
                                   if canonical == "WebSearch" else "")))
        elif canonical not in granted:
            granted.append(canonical)
    return tuple(granted), diags


def _grant_knowledge(definition: Definition, workspace: Path, tools: tuple[str, ...]
                     ) -> tuple[tuple[KnowledgeSource, ...], list[dict[str, str]]]:
    from zapcli.capabilities import knowledge as kb  # each module only for what is declared

    granted: list[KnowledgeSource] = []
    diags: list[dict[str, str]] = []
    for source in definition.knowledge:
        if "read" not in tools:
            diags.append(_diag("knowledge", source.name, "knowledge needs the `read` tool to "
                               "open what kb_search finds; add read to `tools`"))
            continue
        try:
            files = kb.source_files(workspace, source)
        except ValueError as exc:
            diags.append(_diag("knowledge", source.name, str(exc)))
            continue
        if not files:
            diags.append(_diag("knowledge", source.name,
                               f"path {source.path!r} matches no files in the workspace"))
            continue
        granted.append(source)
    return tuple(granted), diags


def build_grant(definition: Definition, workspace: Path, *,
                available_tools: Iterable[str] | None = None) -> Grant:
    """Resolve every dimension of `definition` for `workspace`.

    `available_tools`: names in the session's tool table (default: every
    grantable tool). Starts nothing and never imports `mcp`. Never raises for
    unavailable items: they become `grant.diagnostics`.
    """
    available = {canonical_tool(t) or t for t in (GRANTABLE if available_tools is None
                                                  else available_tools)}
    tools, diags = _grant_tools(definition, available)
    skills: list[sk.Skill] = []
    if definition.skills:
        from zapcli.capabilities import skills as sk

        skills, found_diags = sk.find_skills(definition.skills, workspace)
        diags += found_diags
    knowledge: tuple[KnowledgeSource, ...] = ()
    if definition.knowledge:
        knowledge, k_diags = _grant_knowledge(definition, workspace, tools)
        diags += k_diags
    configs: dict[str, ServerConfig] = {}
    if definition.mcp_servers:
        from zapcli.capabilities.mcpconfig import load_servers, missing_message

        all_configs, config_diags = load_servers(workspace)
        diags += config_diags
        for server in definition.mcp_servers:
            if server in all_configs:
                configs[server] = all_configs[server]
            else:
                diags.append(_diag("mcp", server, missing_message(server, workspace)))
    folder = None
    if definition.memory != "none":
        from zapcli.capabilities import memory as mem

        folder = mem.memory_dir(workspace, definition.memory, definition.name)
    return Grant(
        name=definition.name, workspace=str(workspace), tools=tools, skills=tuple(skills),
        knowledge=knowledge, memory=definition.memory,
        memory_dir=str(folder) if folder else None, mcp_servers=definition.mcp_servers,
        mcp_configs=configs, diagnostics=diags, team=definition.team)


@plain
class CapabilityTools:
    """The capability tools of a grant (in `grant.tool_names()` order after the
    built-ins), diagnostics found while opening them, and `close()`."""

    tools: list[Any]
    diagnostics: list[dict[str, str]]
    gateway: Any = None

    def close(self) -> None:
        if self.gateway is not None:
            self.gateway.close()


def open_tools(grant: Grant, *, approver: Approver | None = None, start_mcp: bool = True,
               mcp_start_timeout: float = 30.0) -> CapabilityTools:
    """Build use_skill / kb_search / mcp_* / memory_* for `grant`. With `start_mcp`
    the declared servers start now, and a server that fails is a diagnostic (the
    gateway stays mounted). `approver` decides off-allowlist MCP calls."""
    from zapcli.capabilities import captools

    tools: list[Any] = []
    diags: list[dict[str, str]] = []
    gateway = None
    workspace = Path(grant.workspace)
    if grant.skills:
        tools.append(captools.UseSkillTool(grant.skills))
    if grant.knowledge:
        tools.append(captools.KbSearchTool(workspace, grant.knowledge))
    if grant.mcp_servers:
        from zapcli.capabilities.mcp_gateway import McpGateway, gateway_tools

        gateway = McpGateway(grant.mcp_servers, grant.mcp_configs, workspace,
                             start_timeout=mcp_start_timeout)
        if start_mcp:
            diags += gateway.start()
        tools += gateway_tools(gateway, approver)
    if grant.memory != "none" and grant.memory_dir:
        tools += captools.memory_tools(Path(grant.memory_dir), workspace)
    return CapabilityTools(tools, diags, gateway)
