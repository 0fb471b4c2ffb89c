"""Memory (docs/explanation/rules.md#undeclared-means-unreachable): bound directory, prompt budgets, tools, cross-process appends."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from zapcli.agent.types import ToolContext
from zapcli.capabilities import assemble_prompt, build_grant, open_tools
from zapcli.capabilities.captools import memory_tools
from zapcli.capabilities.memory import MemoryStore


def ctx(ws: Path) -> ToolContext:
    return ToolContext(str(ws), str(ws))


def tools_by_name(root: Path) -> dict:
    return {t.spec.name: t for t in memory_tools(root)}


def test_none_means_no_tools_and_nothing_injected(ws: Path, define) -> None:
    definition = define("memory: none\n")
    grant = build_grant(definition, ws)
    assert grant.tool_names() == [] and grant.memory_dir is None
    assert "Memory" not in assemble_prompt(definition, grant)


def test_private_and_shared_directories(ws: Path, define) -> None:
    private = build_grant(define("memory: private\n", name="rev"), ws)
    shared = build_grant(define("memory: shared\n"), ws)
    assert private.memory_dir == str(ws / ".zapcli" / "agent-memory" / "rev")
    assert shared.memory_dir == str(ws / ".zapcli" / "memory")
    assert private.tool_names() == ["memory_read", "memory_search", "memory_write"]
    assert len(open_tools(private).tools) == 3


@pytest.mark.parametrize("bad", ["../x.md", "a/b.md", "..", "/etc/passwd", "x\\y.md",
                                 "daily/x.md", "", ".hidden.md"])
def test_no_argument_can_redirect_the_directory(ws: Path, bad: str) -> None:
    root = ws / ".zapcli" / "memory"
    tools = tools_by_name(root)
    write = tools["memory_write"].run({"text": "x", "file": bad}, ctx(ws))
    read = tools["memory_read"].run({"file": bad}, ctx(ws))
    assert not write.ok
    assert not read.ok or (bad == "" and read.content == "memory is empty")  # "" lists
    assert not (ws / "x.md").exists() and not (ws / ".zapcli" / "x.md").exists()


def test_write_read_search_daily(ws: Path) -> None:
    root = ws / ".zapcli" / "memory"
    tools = tools_by_name(root)
    assert tools["memory_write"].run({"text": "likes tabs? no: spaces"}, ctx(ws)).ok
    assert tools["memory_write"].run({"text": "ran the flaky test", "daily": True}, ctx(ws)).ok
    assert tools["memory_write"].run({"text": "deploy notes", "file": "deploy"}, ctx(ws)).ok
    assert (root / "MEMORY.md").read_text() == "likes tabs? no: spaces\n"
    assert (root / "deploy.md").exists() and len(list((root / "daily").glob("*.md"))) == 1
    listing = tools["memory_read"].run({}, ctx(ws)).content.splitlines()
    assert "MEMORY.md" in listing and "deploy.md" in listing
    found = tools["memory_search"].run({"query": "flaky"}, ctx(ws)).content
    assert found.startswith("daily/") and ":1: ran the flaky test" in found
    assert tools["memory_write"].run({"text": "fresh", "replace": True}, ctx(ws)).ok
    assert tools["memory_read"].run({"file": "MEMORY.md"}, ctx(ws)).content == "fresh"


def test_injection_budgets(ws: Path, define) -> None:
    root = ws / ".zapcli" / "agent-memory" / "t"
    root.mkdir(parents=True)
    (root / "MEMORY.md").write_text("core facts\n")
    (root / "big.md").write_text("x" * 5000)
    for i in range(4):
        (root / f"n{i}.md").write_text(f"note {i} " + "y" * 3500)
    (root / "daily").mkdir()
    (root / "daily" / "2024-01-01.md").write_text("DAILY ONLY\n")
    definition = define("memory: private\n")
    prompt = assemble_prompt(definition, build_grant(definition, ws))
    assert "### MEMORY.md\ncore facts" in prompt
    assert "- big.md left out: 4.9 KB is over the 4 KB per-file budget; read it with memory_read" in prompt
    assert "note 0" in prompt and "note 1" in prompt and "note 2" in prompt
    assert "note 3" not in prompt
    assert "- n3.md left out: the 12 KB memory budget is used up; read it with memory_read" in prompt
    assert "DAILY ONLY" not in prompt and "xxxx" not in prompt


def test_empty_memory_still_has_its_section(ws: Path, define) -> None:
    definition = define("memory: shared\n")
    prompt = assemble_prompt(definition, build_grant(definition, ws))
    assert "## Memory\n" in prompt and ".zapcli/memory/" in prompt and "(memory is empty)" in prompt


WRITER = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from zapcli.agent.types import ToolContext
    from zapcli.capabilities.captools import memory_tools
    root, tag = Path(sys.argv[1]), sys.argv[2]
    write = [t for t in memory_tools(root) if t.spec.name == "memory_write"][0]
    ctx = ToolContext(str(root), str(root))
    sys.stdin.readline()  # start together
    for i in range(150):
        result = write.run({"text": f"{tag}-{i:03d}-" + tag * 6000, "file": "log.md"}, ctx)
        assert result.ok, result.content
""")


def test_appends_from_two_processes_never_interleave(ws: Path, tmp_path: Path) -> None:
    root = ws / ".zapcli" / "memory"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), str(root), tag], stdin=subprocess.PIPE,
                              text=True) for tag in ("A", "B")]
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        proc.stdin.close()
        assert proc.wait(timeout=120) == 0
    lines = (root / "log.md").read_text().splitlines()
    assert len(lines) == 300
    for line in lines:
        tag = line[0]
        assert line[1:].startswith("-") and line.endswith(tag * 6000) and len(line) == 6005 + 1
    for tag in "AB":  # each writer's own order is kept
        assert [line[:5] for line in lines if line[0] == tag] == [
            f"{tag}-{i:03d}" for i in range(150)]


def test_store_file_name_normalises() -> None:
    assert MemoryStore.file_name("notes") == "notes.md"
    with pytest.raises(ValueError):
        MemoryStore.file_name("../../etc/passwd")


def test_a_writer_waits_for_the_directory_lock(ws: Path, tmp_path: Path) -> None:
    from zapcli.locks import exclusive

    root = ws / ".zapcli" / "memory"
    root.mkdir(parents=True)
    script = tmp_path / "writer.py"
    script.write_text(WRITER.replace("range(150)", "range(1)"))
    with exclusive(root / ".memory.lock", 5):
        proc = subprocess.Popen([sys.executable, str(script), str(root), "C"],
                                stdin=subprocess.PIPE, text=True)
        proc.stdin.write("go\n")
        proc.stdin.close()
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.5)  # blocked on the lock we hold
        assert not (root / "log.md").exists()
    assert proc.wait(timeout=60) == 0
    assert (root / "log.md").read_text().startswith("C-000-")
