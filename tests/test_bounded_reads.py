"""Files a user or a repository supplies are read at most limit + 1 bytes, and
only when they are regular files (zapcli.boundedread): a huge file, /dev/zero
or a FIFO is refused at once, in a process whose memory is capped, instead of
filling the machine's memory or hanging."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import REPO

MEMORY_CAP = 1 << 30  # address space of each zapcli process in these tests
HUGE = 3 << 30  # a sparse file: no disk used, but more than the cap to read whole


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _zap(zap, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "zapcli", *args], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, cwd=zap.cwd, env=zap.env,
                          preexec_fn=_capped)
    proc.out = proc.stdout.decode("utf-8", "replace")  # type: ignore[attr-defined]
    proc.err = proc.stderr.decode("utf-8", "replace")  # type: ignore[attr-defined]
    return proc


def _huge(path: Path, head: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(HUGE)
    return path


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _nothing_created(zap) -> bool:
    folder = zap.home / "subagents"
    return not folder.exists() or not list(folder.iterdir())


def test_an_output_schema_that_never_ends_is_refused(zap):
    for path, words in (("/dev/zero", "is a device, not a regular file"),
                        (str(_fifo(zap.cwd / "schema.fifo")), "is a FIFO"),
                        (str(_huge(zap.cwd / "big.json")), "larger than 32 KB")):
        proc = _zap(zap, "spawn", "--output-schema", path, "--cli", "sh", "--", "echo {}")
        assert proc.returncode == 2 and words in proc.err, (path, proc.returncode, proc.err)
    assert _nothing_created(zap)


def test_a_huge_definition_is_one_diagnostic_not_the_machines_memory(zap):
    _huge(zap.cwd / ".zapcli" / "subagents" / "huge.yml", b"name: huge\n")
    _fifo(zap.cwd / ".zapcli" / "subagents" / "pipe.yml")
    assert _zap(zap, "trust").returncode == 0  # hashes what a loader would read, never hangs
    proc = _zap(zap, "agents", "list")
    assert "larger than 256 KB" in proc.out + proc.err, (proc.returncode, proc.out, proc.err)
    assert "is a FIFO" in proc.out + proc.err
    save = _zap(zap, "agents", "save", str(zap.cwd / ".zapcli" / "subagents" / "huge.yml"))
    assert save.returncode == 1 and "larger than 256 KB" in save.err, save.err
    save = _zap(zap, "agents", "save", "/dev/zero")
    assert save.returncode == 1 and "is a device" in save.err, save.err


def test_config_and_mcp_json_that_never_end_are_problems_doctor_names(zap):
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    _fifo(config / "config.yaml")
    (config / "mcp.json").symlink_to("/dev/zero")
    proc = _zap(zap, "doctor", timeout=60)
    out = proc.out + proc.err
    assert "config.yaml" in out and "is a FIFO" in out, out
    assert "mcp.json" in out and "is a device" in out, out
    (config / "config.yaml").unlink()
    _huge(config / "config.yaml", b"executor: local\n")
    proc = _zap(zap, "spawn", "--cli", "sh", "--", "echo hi")
    assert proc.returncode != 0 and "larger than 256 KB" in proc.err, proc.err


SNIPPET = textwrap.dedent("""
    import sys
    from pathlib import Path
    from zapcli.agent.types import ToolContext
    from zapcli.capabilities.captools import memory_tools
    from zapcli.capabilities.memory import MemoryStore
    from zapcli.capabilities.skills import find_skills
    from zapcli.capabilities.textsearch import search_files

    ws = Path(sys.argv[1])
    skills, diags = find_skills(("huge", "pipe"), ws)
    print("skills", [s.name for s in skills], [d["message"] for d in diags])
    root = ws / ".zapcli" / "memory"
    kept, notes = MemoryStore(root).injection()
    print("memory", [name for name, _ in kept], notes)
    read = {t.spec.name: t for t in memory_tools(root)}["memory_read"]
    result = read.run({"file": "MEMORY"}, ToolContext(str(ws), str(ws)))
    print("memory_read", result.ok, len(result.content), result.content.endswith("[cut at 64 KB]"))
    hits = search_files([("pipe", ws / "kb.fifo"), ("notes", ws / "notes.md")], "needle")
    print("kb", hits.render("needle"))
""")


def test_skills_memory_and_knowledge_read_a_bounded_prefix(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _huge(ws / ".zapcli" / "skills" / "huge" / "SKILL.md",
          b"---\nname: huge\ndescription: a big skill\n---\nbody\n")
    _fifo(ws / ".zapcli" / "skills" / "pipe" / "SKILL.md")
    _huge(ws / ".zapcli" / "memory" / "MEMORY.md", b"remember this\n")
    _fifo(ws / "kb.fifo")
    (ws / "notes.md").write_text("the needle is here\n")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.yaml").write_text(f"trusted: [{ws}]\n")  # the user's own
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path),
           "ZAPCLI_HOME": str(tmp_path / "state"), "ZAPCLI_CONFIG_HOME": str(tmp_path / "cfg")}
    proc = subprocess.run([sys.executable, "-c", SNIPPET, str(ws)], capture_output=True,
                          text=True, timeout=30, env=env, preexec_fn=_capped)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert lines["skills"].startswith("['huge']") and "is a FIFO" in lines["skills"], proc.stdout
    assert "MEMORY.md left out" in lines["memory"], proc.stdout
    assert lines["memory_read"] == f"True {64 * 1024 + 15} True", proc.stdout
    assert "the needle is here" in proc.stdout


def test_a_task_or_call_on_stdin_that_never_ends_is_refused(zap):
    for args in (("run", "-"), ("call",)):
        with open("/dev/zero", "rb") as zero:
            proc = subprocess.run([sys.executable, "-m", "zapcli", *args], stdin=zero,
                                  capture_output=True, text=True, timeout=30, cwd=zap.cwd,
                                  env=zap.env, preexec_fn=_capped)
        assert proc.returncode == 2 and "the limit" in proc.stderr + proc.stdout, (args, proc.stderr)
