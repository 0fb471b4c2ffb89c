"""Knowledge (docs/explanation/rules.md#undeclared-means-unreachable): workspace globs, `read` required, kb_search and its budgets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zapcli.agent.types import ToolContext
from zapcli.capabilities import build_grant, open_tools
from zapcli.capabilities.captools import KbSearchTool
from zapcli.capabilities.knowledge import source_files
from zapcli.definitions import Definition, KnowledgeSource


def ctx(ws: Path) -> ToolContext:
    return ToolContext(str(ws), str(ws))


@pytest.fixture
def docs(ws: Path) -> Path:
    folder = ws / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("intro\nthe retry policy uses backoff\nunrelated\n")
    (folder / "sub" / "b.md").write_text("retry\nretry policy retry policy\n")
    (folder / "c.txt").write_text("retry policy in text\n")
    return folder


def search(ws: Path, query: str, **limits) -> str:
    tool = KbSearchTool(ws, (KnowledgeSource("docs", "docs/**/*.md"),), **limits)
    result = tool.run({"query": query}, ctx(ws))
    assert result.ok
    return result.content


def test_ranked_path_line_hits(ws: Path, docs: Path) -> None:
    lines = search(ws, "retry policy").splitlines()
    assert lines[0] == "docs/sub/b.md:2: retry policy retry policy"
    assert "docs/a.md:2: the retry policy uses backoff" in lines
    assert not any("c.txt" in line for line in lines)


def test_requires_read(ws: Path, docs: Path, define) -> None:
    grant = build_grant(define("tools: [grep]\nknowledge: [{name: docs, path: docs}]\n"), ws)
    assert grant.knowledge == () and "kb_search" not in grant.tool_names()
    assert grant.diagnostics[0]["dimension"] == "knowledge"
    assert "`read`" in grant.diagnostics[0]["message"]


def test_granted_with_read(ws: Path, docs: Path, define) -> None:
    grant = build_grant(define("tools: [read]\nknowledge: [{name: docs, path: docs}]\n"), ws)
    assert grant.tool_names() == ["read", "kb_search"]
    tool = open_tools(grant).tools[0]
    assert "docs/c.txt:1: retry policy in text" in tool.run({"query": "retry"}, ctx(ws)).content


def test_no_matching_files_is_a_diagnostic(ws: Path, define) -> None:
    grant = build_grant(define("tools: [read]\nknowledge: [{name: k, path: 'nothing/*.md'}]\n"), ws)
    assert grant.knowledge == () and "matches no files" in grant.diagnostics[0]["message"]


def test_escaping_globs_are_refused_even_from_a_record(ws: Path) -> None:
    definition = Definition("x", "d", tools=("read",),
                            knowledge=(KnowledgeSource("up", "../*"),
                                       KnowledgeSource("abs", "/etc/*")))
    grant = build_grant(definition, ws)
    assert grant.knowledge == ()
    assert all("refused" in d["message"] for d in grant.diagnostics)


def test_symlink_out_of_the_workspace_is_skipped(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret retry\n")
    (ws / "docs").mkdir()
    os.symlink(outside, ws / "docs" / "link.md")
    assert source_files(ws, KnowledgeSource("d", "docs/*.md")) == []


def test_hit_budget_is_said(ws: Path) -> None:
    (ws / "docs").mkdir()
    (ws / "docs" / "many.md").write_text("".join(f"match line {i}\n" for i in range(120)))
    out = search(ws, "match").splitlines()
    assert len([line for line in out if line.startswith("docs/")]) == 50
    assert out[-1] == "[truncated: 120 lines matched; showing the best 50 (hit budget 50)]"


def test_line_budget_cuts_at_400_characters(ws: Path) -> None:
    (ws / "docs").mkdir()
    (ws / "docs" / "long.md").write_text("needle " + "x" * 1000 + "\n")
    out = search(ws, "needle").splitlines()
    hit = out[0].split(": ", 1)[1]
    assert len(hit) == 400 and hit.endswith("…")
    assert "[1 hit line(s) cut at 400 characters (…)]" in out


def test_byte_budget_8_mib_is_said(ws: Path) -> None:
    (ws / "docs").mkdir()
    block = ("filler text line\n" * 1000).encode()  # 17 KB
    for name in ("a", "b", "c"):  # 3 × 3.3 MiB > 8 MiB
        with open(ws / "docs" / f"{name}.md", "wb") as fh:
            for _ in range(200):
                fh.write(block)
    (ws / "docs" / "c.md").open("ab").write(b"needle at the very end\n")
    out = search(ws, "needle")
    assert "docs/c.md" not in out
    assert ("[truncated: stopped after reading 8 MiB; 2 of 3 file(s) searched in full, 1 in part;"
            in out)


def test_small_budgets_and_binary(ws: Path) -> None:
    (ws / "docs").mkdir()
    (ws / "docs" / "bin.md").write_bytes(b"\0\0 needle")
    (ws / "docs" / "z.md").write_text("needle here\n")
    out = search(ws, "needle", max_bytes=1024)
    assert "docs/z.md:1: needle here" in out and "[1 binary file(s) skipped]" in out


def test_bad_arguments(ws: Path, docs: Path) -> None:
    tool = KbSearchTool(ws, (KnowledgeSource("docs", "docs"),))
    assert not tool.run({"query": "  "}, ctx(ws)).ok
    assert "no knowledge source named" in tool.run({"query": "x", "source": "nope"}, ctx(ws)).content
    assert "no lines match" in tool.run({"query": "zzzz"}, ctx(ws)).content


def test_whole_words_rank_above_parts_of_words(tmp_path: Path) -> None:
    """Tryout: kb_search "kill" put `skills: [release-notes]` first."""
    from zapcli.capabilities.textsearch import search_files

    doc = tmp_path / "doc.md"
    doc.write_text("skills: [release-notes]\nzapcli kill stops a subagent\n", encoding="utf-8")
    result = search_files([("doc.md", doc)], "kill")
    assert [line for _, line, _ in result.hits] == [2, 1]


def test_a_query_without_words_says_so(tmp_path: Path) -> None:
    """Tryout: `.*` answered "no lines match '.*' in 0 file(s)" beside three files."""
    from zapcli.capabilities.textsearch import search_files

    doc = tmp_path / "doc.md"
    doc.write_text("anything\n", encoding="utf-8")
    text = search_files([("doc.md", doc)], ".*").render(".*")
    assert "has no words to search for" in text
