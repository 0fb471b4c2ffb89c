"""The bash completion script, run by a real bash: commands, option values,
definition names (built-in, system and workspace) and subagent ids."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from zapcli.cli import gen

SCRIPT = gen.COMPLETIONS["bash"]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def complete(words: list[str], tmp_path: Path, path: str = "/usr/bin:/bin") -> list[str]:
    """COMPREPLY for the command line `words` (the last word is being typed),
    with `path` as PATH (by default one without zapcli on it)."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    script = (f"source {SCRIPT}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
              "_zapcli; printf '%s\\n' \"${COMPREPLY[@]}\"")
    env = {"PATH": path, "HOME": str(tmp_path / "home"),
           "ZAPCLI_HOME": str(tmp_path / "state"), "ZAPCLI_CONFIG_HOME": str(tmp_path / "config")}
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env,
                         cwd=tmp_path / "ws", timeout=30)
    assert res.returncode == 0, res.stderr
    return [line for line in res.stdout.splitlines() if line]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws" / ".zapcli" / "subagents").mkdir(parents=True)
    (tmp_path / "ws" / ".zapcli" / "subagents" / "doc-checker.yml").write_text("name: doc-checker\n")
    (tmp_path / "config" / "subagents").mkdir(parents=True)
    (tmp_path / "config" / "subagents" / "mine.yaml").write_text("name: mine\n")
    (tmp_path / "state" / "subagents").mkdir(parents=True)
    (tmp_path / "state" / "subagents" / "sa_20261130_0123abcd.jsonl").write_text("")
    return tmp_path


def test_commands_values_names_and_ids(ws: Path) -> None:
    assert {"spawn", "agents", "--version", "-h"} <= set(complete(["zapcli", ""], ws))
    # zapcli not on PATH: the built-in backends the script was generated with
    assert complete(["zapcli", "spawn", "--cli", ""], ws) == [
        "zapcli", "sh", "claude", "codex", "gemini", "opencode", "qwen", "pi"]
    names = complete(["zapcli", "spawn", "--agent", ""], ws)
    assert {"general", "explorer", "doc-checker", "mine"} <= set(names)
    assert "doc-checker" in complete(["zapcli", "agents", "show", "d"], ws)
    assert complete(["zapcli", "agents", "copy", "--"], ws) == sorted(
        complete(["zapcli", "agents", "copy", "--"], ws))
    assert {"--to", "--as", "--force"} <= set(complete(["zapcli", "agents", "copy", "--"], ws))
    assert complete(["zapcli", "poll", "sa_"], ws) == ["sa_20261130_0123abcd"]
    for words in (["zapcli", "rm", ""], ["zapcli", "continue", ""], ["zapcli", "worktree", "rm", ""],
                  ["zapcli", "spawn", "--after", ""], ["zapcli", "poll", "sa_20261130_0123abcd", ""]):
        assert complete(words, ws) == ["sa_20261130_0123abcd"], words
    assert complete(["zapcli", "send", "sa_20261130_0123abcd", ""], ws) == []  # TEXT: free text
    assert "--help" in complete(["zapcli", "poll", "--h"], ws)
    # what --help hides (the child form `run --subagent --id ID`) is not offered either
    assert {"--json", "--max-tokens"} <= set(complete(["zapcli", "run", "--"], ws))
    assert not {"--subagent", "--id"} & set(complete(["zapcli", "run", "--"], ws))
    for sub in ("install", "show"):  # new user, round 5: nothing completed here
        assert complete(["zapcli", "completion", sub, ""], ws) == ["bash", "zsh", "fish"], sub


def test_cli_and_executor_values_come_from_zapcli_itself(ws: Path) -> None:
    """#24.9: `--cli` completes every backend — the built-ins, the plugins
    installed beside zapcli, and the ones config.yaml's `backends:` defines —
    by asking the zapcli being completed (`zapcli __complete cli`)."""
    import os
    import sys

    (ws / "config" / "config.yaml").write_text(
        "backends:\n  mycli:\n    command: mycli\n    format: claude-stream-json\n")
    bindir = str(Path(sys.executable).parent)  # the venv's bin, where its zapcli is
    path = f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    names = complete(["zapcli", "spawn", "--cli", ""], ws, path)
    assert names[:8] == ["zapcli", "sh", "claude", "codex", "gemini", "opencode", "qwen", "pi"], names
    assert "mycli" in names
    assert complete(["zapcli", "spawn", "--cli", "my"], ws, path) == ["mycli"]
    assert {"local", "ray"} <= set(complete(["zapcli", "spawn", "--executor", ""], ws, path))

