"""The capability Tool objects: use_skill, kb_search, memory_read/search/write.
Imports zapcli.agent.types and this room; imported only where tools are built (the child).

Kept apart from skills/knowledge/memory so that the parent side (build_grant,
assemble_prompt at spawn) never imports zapcli.agent. Every tool is bound at
construction to what was granted; no argument can widen it. A file in a
writable root (a workspace skill, a knowledge source) is read through the
context's view (`zapcli.beneath`): no link out of the root, nothing of
zapcli's own folders.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.beneath import View
from zapcli.boundedread import read_at_most
from zapcli.capabilities.knowledge import source_files
from zapcli.capabilities.memory import MAX_READ, MAX_WRITE, MemoryStore
from zapcli.capabilities.skills import MAX_SKILL_BYTES, Skill, split_frontmatter
from zapcli.capabilities.textsearch import MAX_BYTES, MAX_HITS, MAX_LINE, search_files
from zapcli.definitions.model import KnowledgeSource


def _view(ctx: ToolContext, workspace: str) -> View:
    view = getattr(ctx, "view", None)
    if view is None:
        from zapcli.paths import control_roots, own_tree

        view = View((workspace or ctx.workspace,), control_roots(),
                    (own_tree(workspace or ctx.workspace) or "",))
    return view  # type: ignore[no-any-return]


def _read_in_view(view: View, path: str, limit: int) -> bytes:
    """At most `limit + 1` bytes of `path` as the view lets the agent see it."""
    with open(view.open_read(path), "rb") as fh:
        return fh.read(limit + 1)


class UseSkillTool:
    """`use_skill(name)`: the body of a granted skill's SKILL.md; nothing else is reachable."""

    def __init__(self, skills: tuple[Skill, ...]):
        self.skills = {s.name: s for s in skills}
        self.spec = ToolSpec(
            name="use_skill",
            description="Load a skill's instructions by name. Skills: "
                        + ", ".join(self.skills),
            parameters={"type": "object", "properties": {
                "name": {"type": "string", "enum": list(self.skills)}},
                "required": ["name"], "additionalProperties": False})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name = args.get("name")
        skill = self.skills.get(name) if isinstance(name, str) else None
        if skill is None:
            return ToolResult(False, f"skill {name!r} is not available to this subagent; "
                              f"available: {', '.join(self.skills) or 'none'}")
        view = _view(ctx, ctx.workspace)
        try:
            raw = _content(skill, Path(ctx.workspace), view)
        except OSError as exc:
            return ToolResult(False, f"cannot read the skill: {exc}" if str(exc).startswith(
                skill.path) else f"cannot read {skill.path}: {exc.strerror or exc}")
        if isinstance(raw, str):  # a workspace's own skill that changed since it was trusted
            return ToolResult(False, raw)
        text = raw[:MAX_SKILL_BYTES].decode("utf-8", "replace")
        try:
            _, body = split_frontmatter(text)
        except ValueError as exc:
            return ToolResult(False, str(exc))
        note = "\n[skill file cut at 64 KB]" if len(raw) > MAX_SKILL_BYTES else ""
        folder = str(Path(skill.path).parent)
        return ToolResult(True, f"# skill: {skill.name} (folder: {folder})\n\n{body.strip()}{note}")


def _content(skill: Skill, workspace: Path, view: View) -> bytes | str:
    """The skill's SKILL.md as it may be read now: a workspace's own only in
    the bytes its trust covers, else why not (text); another in a writable
    root as the view shows it (it could have become a link since spawn).
    Raises OSError."""
    from zapcli import trust

    prefix = trust.skill_roots(workspace).get(Path(skill.root))
    if prefix is None:
        return (_read_in_view(view, skill.path, MAX_SKILL_BYTES) if view.root_of(skill.path)
                else read_at_most(skill.path, MAX_SKILL_BYTES))
    unit = f"{prefix}/{Path(skill.path).parent.name}"
    verdict = trust.verdict(workspace)
    raw = verdict.read(unit)
    if raw is None:
        return (f"skill {skill.name!r} ({unit}) is not read: {verdict.why(unit)} (a person "
                f"can trust it again: zapcli trust {workspace})")
    return raw[:MAX_SKILL_BYTES + 1]


class KbSearchTool:
    """`kb_search(query, source?)`: ranked `path:line: text` hits over the granted sources."""

    def __init__(self, workspace: Path, sources: tuple[KnowledgeSource, ...], *,
                 max_bytes: int = MAX_BYTES, max_hits: int = MAX_HITS, max_line: int = MAX_LINE):
        self.workspace = workspace
        self.sources = sources
        self.limits = {"max_bytes": max_bytes, "max_hits": max_hits, "max_line": max_line}
        names = ", ".join(s.name for s in sources)
        self.spec = ToolSpec(
            name="kb_search",
            description=(f"Search the knowledge sources ({names}) for lines matching a query. "
                         f"Returns up to {max_hits} ranked `path:line: text` hits; open a hit "
                         "with read. Says when a budget truncated the search."),
            parameters={"type": "object", "properties": {
                "query": {"type": "string", "description": "words to look for"},
                "source": {"type": "string", "enum": [s.name for s in sources],
                           "description": "search only this source"}},
                "required": ["query"], "additionalProperties": False})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResult(False, "kb_search needs a non-empty `query`")
        wanted = args.get("source")
        sources = [s for s in self.sources if wanted in (None, "", s.name)]
        if not sources:
            return ToolResult(False, f"no knowledge source named {wanted!r}; sources: "
                              + ", ".join(s.name for s in self.sources))
        files: dict[str, Path] = {}
        for source in sources:
            try:
                files.update(source_files(self.workspace, source))
            except ValueError as exc:
                return ToolResult(False, str(exc))
        view = _view(ctx, str(self.workspace))
        result = search_files(files.items(), query, **self.limits,
                              read=lambda path, n: _read_in_view(view, str(path), n))
        return ToolResult(True, result.render(query))




def _file_args(args: dict[str, Any]) -> tuple[str, bool]:
    daily = bool(args.get("daily"))
    if daily and not args.get("file"):
        return dt.date.today().isoformat() + ".md", True
    return MemoryStore.file_name(args.get("file", "MEMORY.md")), daily


class MemoryWriteTool:
    def __init__(self, store: MemoryStore):
        self.store = store
        self.spec = ToolSpec(
            name="memory_write",
            description="Save to memory. Appends `text` to a root file (default MEMORY.md, "
                        "shown in your prompt next run) or, with daily=true, to today's "
                        "daily/<date>.md (searchable only). replace=true rewrites the file.",
            parameters={"type": "object", "properties": {
                "text": {"type": "string"}, "file": {"type": "string"},
                "daily": {"type": "boolean"}, "replace": {"type": "boolean"}},
                "required": ["text"], "additionalProperties": False})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            return ToolResult(False, "memory_write needs non-empty `text`")
        if len(text.encode("utf-8")) > MAX_WRITE:
            return ToolResult(False, "text is over 64 KB; save a summary instead")
        try:
            name, daily = _file_args(args)
            path = self.store.write(name, text, daily=daily, replace=bool(args.get("replace")))
        except (ValueError, OSError) as exc:
            return ToolResult(False, str(exc))
        return ToolResult(True, f"saved to {path.relative_to(self.store.root)}")


class MemoryReadTool:
    def __init__(self, store: MemoryStore):
        self.store = store
        self.spec = ToolSpec(
            name="memory_read",
            description="Read a memory file (a root file, or with daily=true a daily/ file). "
                        "Without `file`, lists the memory files.",
            parameters={"type": "object", "properties": {
                "file": {"type": "string"}, "daily": {"type": "boolean"}},
                "additionalProperties": False})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if not args.get("file"):
            listing = [label for label, _ in self.store.files()]
            return ToolResult(True, "\n".join(listing) if listing else "memory is empty")
        try:
            name = MemoryStore.file_name(args["file"])
            raw = self.store.read(name, bool(args.get("daily")), MAX_READ)
        except ValueError as exc:
            return ToolResult(False, str(exc))
        except OSError:
            return ToolResult(False, f"no memory file {args['file']!r}; call memory_read "
                              "without `file` to list them")
        text = raw[:MAX_READ].decode("utf-8", "replace")
        return ToolResult(True, text + ("\n[cut at 64 KB]" if len(raw) > MAX_READ else ""))


class MemorySearchTool:
    def __init__(self, store: MemoryStore):
        self.store = store
        self.spec = ToolSpec(
            name="memory_search",
            description="Search every memory file, daily/ included, for a query; returns "
                        "ranked `file:line: text` hits.",
            parameters={"type": "object", "properties": {"query": {"type": "string"}},
                        "required": ["query"], "additionalProperties": False})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResult(False, "memory_search needs a non-empty `query`")
        return ToolResult(True, search_files(self.store.files(), query,
                                             read=self.store.read_label).render(query))


def memory_tools(root: Path, workspace: Path | None = None) -> list[Any]:
    """The three tools, bound to `root` in `workspace` (in catalog order:
    read, search, write)."""
    store = MemoryStore(root, workspace)
    return [MemoryReadTool(store), MemorySearchTool(store), MemoryWriteTool(store)]


