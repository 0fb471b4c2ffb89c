"""Knowledge sources (SPEC §8.4): workspace-relative globs and the `kb_search` tool.
Imports zapcli.agent.types, zapcli.definitions (model, schema), capabilities.textsearch.

Never preloaded: the prompt lists one line per source and `kb_search(query)`
scans the matching files on demand within the budgets of textsearch. Absolute
and escaping globs are refused; a match that resolves outside the workspace
(a symlink) is skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.capabilities.textsearch import MAX_BYTES, MAX_HITS, MAX_LINE, search_files
from zapcli.definitions.model import KnowledgeSource
from zapcli.definitions.schema import knowledge_path_problem

MAX_FILES = 10_000  # files per source considered by one search


def source_files(workspace: Path, source: KnowledgeSource) -> list[tuple[str, Path]]:
    """(workspace-relative label, absolute path) of the files a source covers, sorted.

    A glob matching a folder covers the files under it. Raises ValueError when
    the glob itself is refused (absolute, escaping the workspace).
    """
    problem = knowledge_path_problem(source.path)
    if problem:
        raise ValueError(f"knowledge path {source.path!r} is refused: {problem}")
    root = workspace.resolve()
    found: dict[str, Path] = {}
    try:
        matches = sorted(root.glob(source.path.rstrip("/") or "."))
    except (ValueError, OSError) as exc:
        raise ValueError(f"knowledge path {source.path!r} is not a usable glob: {exc}") from None
    for match in matches:
        candidates = sorted(match.rglob("*")) if match.is_dir() else [match]
        for path in candidates:
            if len(found) >= MAX_FILES:
                break
            try:
                real = path.resolve()
                if not path.is_file() or not real.is_relative_to(root):
                    continue
            except OSError:
                continue
            found.setdefault(str(real.relative_to(root)), real)
    return sorted(found.items())


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
        result = search_files(files.items(), query, **self.limits)
        return ToolResult(True, result.render(query))


def prompt_lines(sources: tuple[KnowledgeSource, ...]) -> list[str]:
    return [f"- {s.name}: {s.path}" for s in sources]
