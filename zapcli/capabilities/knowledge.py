"""Knowledge sources (docs/explanation/rules.md#undeclared-means-unreachable): which files a workspace-relative glob covers.
Imports zapcli.definitions.model; the kb_search tool lives in captools.

Never preloaded: the prompt lists one line per source and `kb_search(query)`
scans the matching files on demand within the budgets of textsearch. Absolute
and escaping globs are refused; a match that resolves outside the workspace
(a symlink) is skipped.
"""

from __future__ import annotations

from pathlib import Path

from zapcli.definitions.model import KnowledgeSource, knowledge_path_problem

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


def prompt_lines(sources: tuple[KnowledgeSource, ...]) -> list[str]:
    return [f"- {s.name}: {s.path}" for s in sources]
