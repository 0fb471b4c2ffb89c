"""The zsh completion script in a real zsh (on a pty, through zsh's own
completion system): every command's options, the `--cli` and `--executor`
values zapcli itself names, option values, subcommands, definition names and
subagent ids; loaded from `fpath` as `zapcli completion install zsh` sets it
up, and sourced after compinit."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.cli.shells import Zsh, needs_zsh
from zapcli.cli import gen
from zapcli.cli.completion import public

pytestmark = [needs_zsh, pytest.mark.xdist_group("shells")]
BUILTIN_CLIS = ["zapcli", "sh", "claude", "codex", "gemini", "opencode", "qwen", "pi"]


def _env(ws: Path, path: str = "/usr/bin:/bin") -> dict[str, str]:
    return {"PATH": path, "HOME": str(ws / "home"), "ZAPCLI_HOME": str(ws / "state"),
            "ZAPCLI_CONFIG_HOME": str(ws / "config"), "LANG": "C.UTF-8"}


def _fpath(ws: Path) -> str:
    return (f"fpath=({gen.COMPLETIONS['zsh'].parent} $fpath)\n"
            f"autoload -Uz compinit && compinit -u -d {ws}/zcompdump\n")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws" / ".zapcli" / "subagents").mkdir(parents=True)
    (tmp_path / "ws" / ".zapcli" / "subagents" / "doc-checker.yml").write_text("name: doc-checker\n")
    (tmp_path / "config" / "subagents").mkdir(parents=True)
    (tmp_path / "config" / "subagents" / "mine.yaml").write_text("name: mine\n")
    (tmp_path / "state" / "subagents").mkdir(parents=True)
    (tmp_path / "state" / "subagents" / "sa_20261130_0123abcd.jsonl").write_text("")
    (tmp_path / "home").mkdir()
    return tmp_path


def _long_options(entry: dict) -> set[str]:
    """What --help shows: not a hidden option (`run --subagent --id`, the child form)."""
    return {o for o in public(entry)["options"] if o.startswith("--")} | {"--help"}


def test_every_command_completes_its_options(ws: Path) -> None:
    """#31: zsh completed options for 16 of 44 commands (`_arguments` took the
    command's own name for its first argument)."""
    spec = gen.argspec(with_groups=True)
    with Zsh(_env(ws), ws / "ws", ws / "zsh", setup=_fpath(ws)) as zsh:
        top = zsh.complete("zapcli ")
        assert set(top) >= {*gen.commands(), *gen.groups(), "--help", "--version"}, top
        for group, subs in gen.groups().items():
            assert zsh.complete(f"zapcli {group} ") == list(subs), group
        missing = {}
        for name, entry in spec.items():
            got = set(zsh.complete(f"zapcli {name} --"))
            if got != _long_options(entry):
                missing[name] = sorted(got ^ _long_options(entry))
        assert not missing, missing


def test_values_names_and_ids(ws: Path) -> None:
    with Zsh(_env(ws), ws / "ws", ws / "zsh", setup=_fpath(ws)) as zsh:
        # zapcli not on PATH: the built-in backends the script was generated with
        assert zsh.complete("zapcli spawn --cli ") == BUILTIN_CLIS
        assert zsh.complete("zapcli run --approval ") == ["confirm", "workspace", "auto-edit", "full"]
        assert {"general", "explorer", "doc-checker", "mine"} <= set(zsh.complete("zapcli spawn --agent "))
        assert "doc-checker" in zsh.complete("zapcli agents show d")
        for line in ("zapcli poll ", "zapcli rm sa_", "zapcli continue ", "zapcli worktree rm ",
                     "zapcli spawn --after "):
            assert zsh.complete(line) == ["sa_20261130_0123abcd"], line
        assert zsh.complete("zapcli poll sa_20261130_0123abcd ") == ["sa_20261130_0123abcd"]
        assert zsh.complete("zapcli list --status aw") == ["awaiting_approval"]
        for sub in ("install", "show"):  # new user, round 5: nothing completed here
            assert zsh.complete(f"zapcli completion {sub} ") == ["bash", "zsh", "fish"], sub


def test_cli_values_come_from_the_zapcli_being_completed(ws: Path) -> None:
    """`--cli` offers every backend zapcli knows: the built-ins, the plugins
    installed beside it and config.yaml's `backends:`."""
    (ws / "config" / "config.yaml").write_text(
        "backends:\n  mycli:\n    command: mycli\n    format: claude-stream-json\n")
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    with Zsh(_env(ws, path), ws / "ws", ws / "zsh", setup=_fpath(ws)) as zsh:
        names = zsh.complete("zapcli spawn --cli ")
        assert names[:8] == BUILTIN_CLIS and "mycli" in names, names
        assert zsh.complete("zapcli spawn --cli my") == ["mycli"]
        assert {"local", "ray"} <= set(zsh.complete("zapcli spawn --executor "))


def test_sourced_after_compinit(ws: Path) -> None:
    """`source <(zapcli completion show zsh)` in a .zshrc works as well as fpath."""
    setup = (f"autoload -Uz compinit && compinit -u -d {ws}/zcompdump\n"
             f"source {gen.COMPLETIONS['zsh']}\n")
    with Zsh(_env(ws), ws / "ws", ws / "zsh", setup=setup) as zsh:
        assert zsh.complete("zapcli spawn --cli ") == BUILTIN_CLIS
        assert "--wait-secs" in zsh.complete("zapcli poll --")
