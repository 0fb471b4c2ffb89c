"""The grantable set of built-in tools (docs/explanation/rules.md#built-in-tools, docs/explanation/rules.md#undeclared-means-unreachable): names, refusals, construction.
Imports: stdlib (zapcli.agent.types for annotations only); the tool modules only inside `Toolset` (cheap import).

`build_tools` makes fresh instances per loop: the todo list and the background
jobs of one loop are never another's. `use_skill` is in the grantable set but
is built by the capabilities layer (it needs the resolved skills), so
`build_tools` skips it; `WebSearch` is built only when a provider is configured.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Iterable

    from zapcli.agent.types import Tool
    from zapcli.tools.procs import JobRegistry
    from zapcli.tools.web import SearchProvider  # (query, n) -> [{title, url, snippet}]

GRANTABLE: tuple[str, ...] = ("bash", "task_output", "task_stop", "read", "write", "edit",
                              "glob", "grep", "WebFetch", "WebSearch", "use_skill", "todo")
BUILT_ELSEWHERE = frozenset({"use_skill"})
_CANONICAL = {name.lower(): name for name in GRANTABLE}

_ASK = "asking the user: a subagent runs unattended in the background; put open " \
       "questions in the final report instead"
_MCP = "raw MCP tools are reached only through the scoped gateway: declare " \
       "`mcp: {servers: [...]}` instead"
_MEMORY = "memory tools exist only through `memory: private|shared`; declare that instead"
_KB = "kb_search exists only through `knowledge: [{name, path}]`; declare that instead"
_UI = "a user-interface tool: it needs a person at a screen"
_DEFS = "definition-management tool: a subagent must not change what agents may do"
_SUB = "the subagent tool is the parent's own; a subagent cannot start subagents"

NEVER_GRANTABLE: dict[str, str] = {
    "ask_user": _ASK, "askuser": _ASK, "askuserquestion": _ASK, "ask_user_question": _ASK,
    "ask": _ASK, "question": _ASK,
    "mcp_search": _MCP, "mcp_describe": _MCP, "mcp_call": _MCP, "mcp": _MCP,
    "memory_write": _MEMORY, "memory_read": _MEMORY, "memory_search": _MEMORY,
    "memory": _MEMORY, "kb_search": _KB,
    "enterplanmode": _UI, "exitplanmode": _UI, "exit_plan_mode": _UI, "statusline": _UI,
    "notify": _UI, "open_browser": _UI,
    "agents": _DEFS, "save_agent": _DEFS, "delete_agent": _DEFS, "enable_agent": _DEFS,
    "disable_agent": _DEFS, "agents_save": _DEFS, "agents_delete": _DEFS,
    "agents_enable": _DEFS, "agents_disable": _DEFS, "agents_model": _DEFS,
    "subagents_list": _DEFS, "subagents_save": _DEFS, "subagents_delete": _DEFS,
    "subagent": _SUB, "task": _SUB, "agent": _SUB,
}


def canonical_name(name: str) -> str | None:
    """The canonical spelling of a grantable tool (`webfetch` → `WebFetch`), or None."""
    if not isinstance(name, str):
        return None
    return _CANONICAL.get(name.strip().lower())


def never_grantable_reason(name: str) -> str | None:
    """Why `name` can never be granted, or None when it is not on the refusal list.
    Raw MCP tool names (`mcp__server__tool`) are refused whatever the server."""
    key = name.strip().lower()
    if key.startswith("mcp__"):
        return _MCP
    return NEVER_GRANTABLE.get(key)


def available_tools(*, search_provider: SearchProvider | str | None = None) -> tuple[str, ...]:
    """The grantable tools present in this session's tool table: WebSearch only
    with a search provider. use_skill is listed — its presence is the
    capabilities layer's to decide (skills resolved), not this module's."""
    return tuple(n for n in GRANTABLE if n != "WebSearch" or search_provider is not None)


def search_provider() -> str | None:
    """The configured WebSearch provider (a URL template with `{query}`), if any."""
    import os

    return os.environ.get("ZAPCLI_SEARCH_URL") or None


class Toolset:
    """Fresh tool instances for one loop, sharing one background-job registry.
    Call `close()` when the loop ends: it stops the jobs still running."""

    def __init__(self, names: Iterable[str], *, search_provider: SearchProvider | str | None = None,
                 jobs: JobRegistry | None = None, fetch_timeout_s: float = 30.0):
        from zapcli.tools.procs import JobRegistry  # tools load only when built: the
        # parent side asks canonical_name() and must stay fast to import
        self.jobs = jobs if jobs is not None else JobRegistry()
        self.tools: list[Tool] = []
        seen: set[str] = set()
        for raw in names:
            name = canonical_name(raw)
            if name is None:
                why = never_grantable_reason(raw) if isinstance(raw, str) else None
                raise ValueError(f"{raw!r} is not a grantable built-in tool"
                                 + (f" ({why})" if why else f"; grantable: {', '.join(GRANTABLE)}"))
            if name in seen or name in BUILT_ELSEWHERE:
                continue
            seen.add(name)
            self.tools.append(self._build(name, search_provider, fetch_timeout_s))

    def _build(self, name: str, provider: SearchProvider | str | None,
               fetch_timeout_s: float) -> Tool:
        from zapcli.tools.files import EditTool, ReadTool, WriteTool
        from zapcli.tools.search import GlobTool, GrepTool
        from zapcli.tools.shell import BashTool, TaskOutputTool, TaskStopTool
        from zapcli.tools.todo import TodoTool
        from zapcli.tools.web import WebFetchTool, WebSearchTool

        if name == "bash":
            return BashTool(self.jobs)
        if name == "task_output":
            return TaskOutputTool(self.jobs)
        if name == "task_stop":
            return TaskStopTool(self.jobs)
        if name == "WebSearch":
            if provider is None:
                raise ValueError("WebSearch was granted but no search provider is "
                                 "configured; check available_tools() before granting")
            return WebSearchTool(provider, timeout_s=fetch_timeout_s)
        if name == "WebFetch":
            return WebFetchTool(timeout_s=fetch_timeout_s)
        simple = {"read": ReadTool, "write": WriteTool, "edit": EditTool, "glob": GlobTool,
                  "grep": GrepTool, "todo": TodoTool}
        return simple[name]()

    def by_name(self) -> dict[str, Tool]:
        return {t.spec.name: t for t in self.tools}

    def close(self) -> None:
        self.jobs.close()


def build_tools(names: Iterable[str], *, search_provider: SearchProvider | str | None = None,
                jobs: JobRegistry | None = None, fetch_timeout_s: float = 30.0) -> list[Tool]:
    """Fresh instances for a granted name list (any case; duplicates collapse).

    - `use_skill` is skipped: the capabilities layer builds it from resolved skills.
    - Names that are not grantable, and WebSearch without `search_provider`,
      raise ValueError: the grant must have been checked against
      `available_tools()` first, and a mismatch is a bug to surface, not to hide.
    - bash, task_output and task_stop share `jobs` (a new registry when None);
      pass your own registry to stop its jobs with `jobs.close()` when the loop
      ends (jobs are stopped at interpreter exit in any case), or use `Toolset`.
    """
    return Toolset(names, search_provider=search_provider, jobs=jobs,
                   fetch_timeout_s=fetch_timeout_s).tools
