"""What an agent CLI's adapter knows cannot work is refused at spawn, like a
missing CLI: one line naming what to pass or set, exit 1, nothing created
(tryout: opencode without --model was accepted and failed later with
"Unexpected server error"; codex, claude and gemini without a key failed
seconds later with the CLI's own message)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.backends import clitest as ct

AUTH = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
        "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY",
        "GEMINI_API_KEY")


def _bare(zap, tmp_path: Path) -> None:
    """No key of any CLI, and a HOME without a .env."""
    for key in AUTH:
        zap.env.pop(key, None)


def _nothing_created(zap) -> bool:
    folder = zap.home / "subagents"
    return not folder.exists() or not list(folder.iterdir())


@pytest.mark.parametrize("cli, args, words", [
    ("opencode", (), "opencode needs a model: pass --model NAME"),
    ("codex", ("--model", "gpt-5.5"), "set it"),
    ("claude", (), "set ANTHROPIC_API_KEY"),
    ("gemini", ("--model", "gemini-2.5-flash"), "GEMINI_API_KEY is not set"),
])
def test_refused_at_spawn_with_what_to_pass(zap, tmp_path, cli, args, words):
    ct.configure(zap, cli)
    _bare(zap, tmp_path)
    if cli == "opencode":
        zap.env["OPENAI_API_KEY"] = "sk-test"  # only the model is missing
    proc = zap("spawn", "--cli", cli, *args, "--", "say hi")
    assert proc.returncode == 1, (proc.returncode, proc.out, proc.err)
    assert words in proc.err and len(proc.err.strip().splitlines()) == 1, proc.err
    assert proc.out == "" and _nothing_created(zap)


def test_a_key_in_a_gemini_env_file_or_a_wrapper_is_not_refused(zap, tmp_path):
    _bare(zap, tmp_path)
    ct.configure(zap, "gemini")
    (zap.cwd / ".env").write_text("GEMINI_API_KEY=from-dotenv\n")
    proc = zap("spawn", "--cli", "gemini", "--model", "gemini-2.5-flash", "--timeout", "5",
               "--", "say hi")
    assert proc.returncode == 0, proc.err
    os.unlink(zap.cwd / ".env")
    wrapper = tmp_path / "my-codex"  # another program name: it may bring its own key
    wrapper.write_text("#!/bin/sh\nexit 0\n")
    wrapper.chmod(0o755)
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    (folder / "config.yaml").write_text(f"backends:\n  codex:\n    command: {wrapper}\n")
    proc = zap("spawn", "--cli", "codex", "--timeout", "5", "--", "say hi")
    assert proc.returncode == 0, proc.err


def test_a_gemini_env_file_below_the_repository_in_cwd_is_seen(zap, tmp_path):
    """The CLI looks for .env from where it runs (--cwd), not from the top of
    the repository holding it."""
    import subprocess

    _bare(zap, tmp_path)
    ct.configure(zap, "gemini")
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pkg" / ".env").write_text("GEMINI_API_KEY=from-dotenv\n")
    proc = zap("spawn", "--cli", "gemini", "--model", "gemini-2.5-flash", "--timeout", "5",
               "--cwd", str(repo / "pkg"), "--", "say hi")
    assert proc.returncode == 0, proc.err
    proc = zap("spawn", "--cli", "gemini", "--model", "gemini-2.5-flash", "--timeout", "5",
               "--cwd", str(repo), "--", "say hi")
    assert proc.returncode == 1 and "GEMINI_API_KEY is not set" in proc.err
    # the first subagent's sandbox holds an empty .env at the repository's top while it runs
    # (a placeholder): it names no key, and the spawn is refused all the same (a full run
    # failed on that race)
    (repo / ".env").write_text("")
    proc = zap("spawn", "--cli", "gemini", "--model", "gemini-2.5-flash", "--timeout", "5",
               "--cwd", str(repo), "--", "say hi")
    assert proc.returncode == 1 and "GEMINI_API_KEY is not set" in proc.err


def test_a_gemini_env_file_that_is_no_file_is_refused_without_a_wait(zap, tmp_path):
    """The .env gemini would read is read by zapcli too (its key is passed
    in; the sandbox shows the file empty): a FIFO agent work made in its
    place (`--cwd` below the held top) is no key, and no read that never ends."""
    _bare(zap, tmp_path)
    ct.configure(zap, "gemini")
    os.mkfifo(zap.cwd / ".env")
    proc = zap("spawn", "--cli", "gemini", "--model", "gemini-2.5-flash", "--", "say hi",
               timeout=30)
    assert proc.returncode == 1 and "GEMINI_API_KEY is not set" in proc.err, proc.err
