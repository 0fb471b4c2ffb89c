"""The fast path must agree with typer on every command line it accepts, and
decline (fall back to typer) on everything unusual."""

from __future__ import annotations

import pytest

from zapcli.cli import app as app_module
from zapcli.cli import fastpath, gen

ACCEPTED = [
    ["spawn", "--cli", "sh", "--", "echo hi"],
    ["spawn", "--cli=sh", "--timeout", "2.5", "--after", "sa_20261130_00000000", "--after",
     "sa_20261130_00000001", "task"],
    ["spawn", "-"],
    ["spawn", "--json", "--max-tokens", "100", "--unattended", "--", "--looks-like-an-option"],
    ["poll", "sa_20261130_00000000", "x", "--wait-secs", "3"],
    ["poll", "--no-wait", "--json", "a"],
    ["wait", "a", "b", "--any", "--timeout", "1"],
    ["list"], ["list", "--all", "--status", "running"],
    ["kill", "a", "--grace", "0"], ["kill", "--all"],
    ["output", "a", "--stderr", "-f"], ["replay", "a", "--raw", "--since", "3"],
    ["run", "--subagent", "--id", "sa_20261130_00000000"], ["gc", "--dry-run"], ["session", "--json"],
]

DECLINED = [
    [], ["--help"], ["spawn", "--help"], ["spawn"], ["spawn", "--bogus", "x"], ["poll"],
    ["poll", "a", "--wait-secs", "abc"], ["spawn", "--timeout"], ["nosuchcommand"],
    ["spawn", "a", "b"], ["spawn", "-x"], ["list", "--all=yes"], ["--version"],
]


def typer_params(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict:
    captured: dict = {}

    def fake_run(name, params):
        captured.update(name=name, params=dict(params))

    monkeypatch.setattr(app_module, "_run", fake_run)
    app_module.app(args=argv, prog_name="zapcli", standalone_mode=False)
    return captured


@pytest.mark.parametrize("argv", ACCEPTED, ids=lambda a: " ".join(a) or "empty")
def test_fast_path_matches_typer(argv, monkeypatch):
    parsed = fastpath.parse(argv)
    assert parsed is not None
    cmd, params = parsed
    expected = typer_params(argv, monkeypatch)
    assert expected["name"] == cmd
    norm = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in expected["params"].items()}
    assert params == norm


@pytest.mark.parametrize("argv", DECLINED, ids=lambda a: " ".join(a) or "empty")
def test_fast_path_declines_unusual_lines(argv):
    assert fastpath.parse(argv) is None


GROUP_LINES = [
    ["agents", "list"], ["agents", "list", "--json"], ["agents", "show", "explorer", "--json"],
    ["agents", "save", "a.yaml", "--scope", "system"], ["agents", "delete", "x", "--scope=workspace"],
    ["agents", "enable", "x"], ["agents", "disable", "x", "--json"], ["agents", "model", "x", "m"],
    ["agents", "model", "x", "--clear"],
    ["agents", "copy", "explorer", "--to", "workspace", "--as", "mine", "--force"],
    ["worktree", "list"], ["worktree", "rm", "a", "b", "--force"],
    ["board", "claim", "--wait", "2.5"], ["board", "add", "t", "--needs", "a", "--needs", "b"],
    ["board", "done", "t1", "--fence", "3"],
]


@pytest.mark.parametrize("argv", GROUP_LINES, ids=" ".join)
def test_a_group_command_reaches_the_same_function_with_the_same_parameters(argv, monkeypatch):
    """The fast path calls a group command's function (`list_` for `list`)
    with what it parsed; typer's sub-app calls the same function: both must
    arrive alike, or the fast path and `--help`'s line would differ."""
    from importlib import import_module

    parsed = fastpath.parse(argv)
    assert parsed is not None, argv
    module = import_module(f"zapcli.cli.commands.{argv[0]}")
    name = argv[1] if hasattr(module, argv[1]) else argv[1] + "_"
    calls: list[dict] = []
    monkeypatch.setattr(module, name, lambda **kw: calls.append(kw) or 0)
    assert fastpath.run(argv) == 0
    app_module.app(args=argv, prog_name="zapcli", standalone_mode=False)
    fast, slow = ({k: (list(v) if isinstance(v, tuple) else v) for k, v in c.items()} for c in calls)
    assert fast == slow


def test_generated_files_are_current():
    """argspec, completions and the man page are generated from the typer app."""
    assert gen.main(["check"]) == 0, "run `make completions man` (python -m zapcli.cli.gen all)"


def test_every_command_is_in_the_man_page_and_completions():

    man = gen.MAN_PAGE.read_text()
    for section in ("EXIT STATUS", "ENVIRONMENT", "FILES"):
        assert f".SH {section}" in man
    names = list(gen.commands()) + [f"{g} {sub}" for g, subs in gen.groups().items() for sub in subs]
    assert "agents list" in names and "tool-schema" in names
    for cmd in names:
        assert f"zapcli {cmd}" in man
        for comp in gen.COMPLETIONS.values():
            assert cmd.split()[-1] in comp.read_text()
