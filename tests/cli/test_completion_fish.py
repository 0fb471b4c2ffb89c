"""The fish completion script in a real fish (`complete -C`, fish's own
completion engine): it loads without an error (it used to hold bash's
`${VAR:-default}`, which fish rejects, so ids and names never completed),
every command's options, the `--cli` values zapcli names, option values,
subcommands, definition names and subagent ids."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.cli.shells import fish_complete, needs_fish
from zapcli.cli import gen
from zapcli.cli.completion import public

pytestmark = [needs_fish, pytest.mark.xdist_group("shells")]
SCRIPT = gen.COMPLETIONS["fish"]
BUILTIN_CLIS = {"zapcli", "sh", "claude", "codex", "gemini", "opencode", "qwen", "pi"}


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


def _env(ws: Path, path: str = "/usr/bin:/bin") -> dict[str, str]:
    return {"PATH": path, "HOME": str(ws / "home"), "ZAPCLI_HOME": str(ws / "state"),
            "ZAPCLI_CONFIG_HOME": str(ws / "config"), "LANG": "C.UTF-8"}


def test_every_command_completes_its_options(ws: Path) -> None:
    spec = gen.argspec(with_groups=True)
    names = list(spec)
    lines = ["zapcli ", *(f"zapcli {g} " for g in gen.groups()), *(f"zapcli {n} --" for n in names)]
    answers = fish_complete(SCRIPT, lines, _env(ws), ws / "ws")
    top, groups, options = answers[0], answers[1:1 + len(gen.groups())], answers[1 + len(gen.groups()):]
    assert set(top) >= {*gen.commands(), *gen.groups()}, top
    for (group, subs), got in zip(gen.groups().items(), groups, strict=True):
        assert set(got) == set(subs), group
    want = {n: {o for o in public(spec[n])["options"] if o.startswith("--")} | {"--help"} for n in names}
    wrong = {n: sorted(set(got) ^ want[n]) for n, got in zip(names, options, strict=True)
             if set(got) != want[n]}
    assert not wrong, wrong
    assert "--subagent" not in answers[1 + len(gen.groups()) + names.index("run")]  # hidden: internal


def test_values_names_and_ids(ws: Path) -> None:
    lines = ["zapcli spawn --cli ", "zapcli run --approval ", "zapcli spawn --agent ",
             "zapcli agents show d", "zapcli poll ", "zapcli rm sa_", "zapcli continue ",
             "zapcli worktree rm ", "zapcli spawn --after ", "zapcli list --status aw",
             "zapcli completion install ", "zapcli completion show "]
    got = dict(zip(lines, fish_complete(SCRIPT, lines, _env(ws), ws / "ws"), strict=True))
    assert set(got["zapcli spawn --cli "]) == BUILTIN_CLIS  # zapcli not on PATH: the built-ins
    assert set(got["zapcli run --approval "]) == {"confirm", "workspace", "auto-edit", "full"}
    assert {"general", "explorer", "doc-checker", "mine"} <= set(got["zapcli spawn --agent "])
    assert got["zapcli agents show d"] == ["doc-checker"]
    for line in ("zapcli poll ", "zapcli rm sa_", "zapcli continue ", "zapcli worktree rm ",
                 "zapcli spawn --after "):
        assert got[line] == ["sa_20261130_0123abcd"], line
    assert got["zapcli list --status aw"] == ["awaiting_approval"]
    for line in ("zapcli completion install ", "zapcli completion show "):  # nothing, before
        assert set(got[line]) == {"bash", "zsh", "fish"}, line


def test_cli_values_come_from_the_zapcli_being_completed(ws: Path) -> None:
    (ws / "config" / "config.yaml").write_text(
        "backends:\n  mycli:\n    command: mycli\n    format: claude-stream-json\n")
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    clis, executors = fish_complete(SCRIPT, ["zapcli spawn --cli ", "zapcli spawn --executor "],
                                    _env(ws, path), ws / "ws")
    assert BUILTIN_CLIS | {"mycli"} <= set(clis), clis
    assert {"local", "ray"} <= set(executors)


def test_descriptions_are_short_beside_options_values_and_commands(ws: Path) -> None:
    """A new user's trial: `zapcli spawn --cli <Tab>` printed the option's whole
    help beside each value. Every description fish shows is one short phrase
    (`DESCRIBED_MAX` characters at most), cut where a person sees it was cut."""
    from zapcli.cli.completion import DESCRIBED_MAX

    lines = ["zapcli ", "zapcli spawn --", "zapcli spawn --cli ", "zapcli run --",
             "zapcli agents ", "zapcli spawn --approval "]
    answers = fish_complete(SCRIPT, lines, _env(ws), ws / "ws", described=True)
    long = [(line, row) for line, rows in zip(lines, answers, strict=True) for row in rows
            if len(row.partition("\t")[2]) > DESCRIBED_MAX]
    assert not long, long
    cli = dict(row.split("\t") for row in answers[2])
    assert set(cli) == BUILTIN_CLIS and cli["sh"].startswith("Backend"), cli
    spawn = dict(row.split("\t") for row in answers[1])
    assert spawn["--attempts"] == "Start N attempts at the task, each in its own worktree", spawn
