"""`make demo` (#12.16): it runs end to end offline, leaves nothing running
and no folder behind by default; with KEEP it keeps its folders and ends with
a look-around command that works from a shell without the venv on PATH."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]


def _demo(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZAPCLI_")}
    env.update(TMPDIR=str(tmp_path), PYTHONPATH=str(REPO), NO_COLOR="1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", **extra)
    res = subprocess.run([sys.executable, "-m", "zapcli.demo"], env=env, cwd=REPO,
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=280)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Traceback" not in res.stderr, res.stderr
    return res


def _ours(tmp_path: Path) -> list[str]:
    """Processes still carrying a ZAPCLI_HOME under this test's folder."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.environ().get("ZAPCLI_HOME", "").startswith(str(tmp_path)):
                found.append(f"{proc.pid} {proc.info['cmdline']}")
        except (psutil.Error, OSError):
            continue
    return found


@pytest.mark.timeout(300)
def test_demo_leaves_nothing_behind(tmp_path):
    res = _demo(tmp_path)
    assert "# 4. parallel coding" in res.stdout and "--on-finish ran once for each" in res.stdout
    assert "Nothing is left running" in res.stdout and "make demo KEEP=1" in res.stdout
    # its commands are shown as a user types them (#24.9), not as this Python runs them
    assert "\n$ zapcli spawn --cli sh" in res.stdout and "\n$ zapcli list\n" in res.stdout
    # the tour says once how a new terminal finds what other sessions hold (#28 item 8)
    assert res.stdout.count("subagents in other sessions") == 1, res.stdout
    assert "$ ZAPCLI_SESSION=" in res.stdout and "zapcli list --all" in res.stdout
    assert f"$ {sys.executable}" not in res.stdout
    assert "# 5. a team on one task board" in res.stdout and "4 task(s): 4 done" in res.stdout
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("zapcli-demo-")]
    # it trusts its checkout in its own config folder first: the repository's definition is
    # used, so all four of the run's subagents start and complete, and no trust warning shows
    assert "\n$ zapcli trust " in res.stdout and "not trusted" not in res.stdout + res.stderr
    agent_part = res.stdout.split("# 2. the built-in agent")[1].split("# 3. another agent CLI")[0]
    spawned = re.findall(r'↳ subagent \{"action": "spawn", "agent": "([\w-]+)"', agent_part)
    assert sorted(spawned) == ["doc-reviewer", "explorer", "explorer", "explorer"], agent_part
    assert "! error" not in agent_part and "not started" not in agent_part, agent_part
    assert len(re.findall(r"│ \[SubAgent\] sa_\w+: completed", agent_part)) == 4, agent_part
    assert _ours(tmp_path) == []
    # it ends with the timeline of its own run, where it says, kept (self-contained)
    page = Path(re.search(r"timeline of this demo is at (\S+)", res.stdout).group(1))  # type: ignore[union-attr]
    assert page.parent == tmp_path and page.is_file()  # a name of its own, kept, and said so
    assert page.name.startswith("zapcli-timeline-demo-") and page.name != "zapcli-timeline-demo.html"
    assert f"it is kept after the demo: rm {page}" in res.stdout
    data = page.read_text()
    assert '"is_run": true' in data and data.count('"cli": "sh"') >= 5 and "Content-Security-Policy" in data


@pytest.mark.timeout(300)
def test_demo_kept_ends_with_a_command_that_works(tmp_path):
    res = _demo(tmp_path, ZAPCLI_DEMO_KEEP="1")
    try:
        hint = re.search(r"^#   (ZAPCLI_HOME=\S+ .* list --all)$", res.stdout, re.M)
        assert hint, res.stdout[-1000:]
        shell = subprocess.run(["sh", "-c", hint.group(1)], capture_output=True, text=True,
                               env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, timeout=60)
        assert shell.returncode == 0, shell.stderr
        assert "subagents across all sessions" in shell.stdout
        assert _ours(tmp_path) == []
    finally:
        for path in tmp_path.iterdir():
            if path.name.startswith("zapcli-demo-"):
                shutil.rmtree(path, ignore_errors=True)
