"""Help and parser errors (#12.17, #14.3): metavars not type labels, no
internal options, no empty error line, did-you-mean, hints that point the
right way."""

from __future__ import annotations


def test_help_shows_metavars_and_hides_internal_options(zap):
    for cmd in (("spawn",), ("poll",), ("run",), ("agents", "show"), ("kill",)):
        out = zap(*cmd, "--help", env={"COLUMNS": "120"}).out
        assert "<str>" not in out and "<bool>" not in out and "<list" not in out, (cmd, out)
    run = zap("run", "--help", env={"COLUMNS": "120"}).out
    assert "--subagent" not in run and "--id" not in run


def test_bare_commands_show_help_without_an_empty_error(zap):
    for cmd in ((), ("agents",)):
        res = zap(*cmd)
        assert "Usage" in res.out or "Usage" in res.err
        assert "error" not in res.err, res.err


def test_unknown_commands_get_a_did_you_mean(zap):
    assert "did you mean poll (one subagent) or list?" in zap("status").err
    assert "did you mean output?" in zap("logs").err
    assert zap("lst").err.count("Did you mean") + zap("lst").err.count("did you mean") == 1


def test_help_with_words_past_a_command_says_so_instead_of_ignoring_them(zap):
    """A new user's trial: `zapcli help spawn extra` showed spawn's help and
    said nothing of `extra`. Words that name no subcommand are an error
    (exit 2, no traceback) that says which help exists; a real path works."""
    for words, said in ((("spawn", "extra"), "`spawn` has no subcommands"),
                        (("agents", "nope"), "`agents` has no subcommand `nope`"),
                        (("agents", "save", "x"), "`agents save` has no subcommands")):
        res = zap("help", *words)
        assert res.returncode == 2 and said in res.err, (words, res.returncode, res.err)
        assert "Traceback" not in res.err and "Usage" not in res.out, res.out
    assert "zapcli help spawn shows its help" in zap("help", "spawn", "extra").err
    for words in (("spawn",), ("agents", "save"), ()):
        res = zap("help", *words)
        assert res.returncode == 0 and "Usage: zapcli" in res.out, (words, res.err)


def test_spawn_hints_point_the_right_way(zap):
    err = zap("spawn", "--cli", "sh", "--", "echo hi", "--json").err
    assert "put options (like --json) before --" in err
    err = zap("spawn", "--cli", "sh", "ls", "-la").err
    assert "No such option: -l" in err and "end the options with --" in err


def test_an_unknown_option_is_offered_only_options_that_look_like_it(zap):
    """User trials: `list --bogus` was offered `--long` — every option starts
    with `--`, and click's guess counted the dashes. Judged on the names:"""
    err = zap("list", "--bogus").err
    assert err == "zapcli: error: No such option: --bogus (see zapcli list --help)\n", err
    assert "(Possible options: --all)" in zap("list", "--al").err  # not --help, --long
    assert "(Possible options: --status)" in zap("list", "--stat").err  # not --watch
    assert "(Possible options: --json)" in zap("list", "--jsn").err


def test_a_number_option_given_something_else_says_so_in_words(zap):
    """A new user's trial: `--timeout abc` answered in the type checker's words
    ("Input should be a valid number, unable to parse string as a number")."""
    for args, said in ((("spawn", "--timeout", "abc", "--cli", "sh", "--", "true"),
                        "--timeout wants a number of seconds, not 'abc' (see zapcli spawn --help)"),
                       (("spawn", "--max-tokens=1.5", "--cli", "sh", "--", "true"),
                        "--max-tokens wants a whole number, not '1.5' (see zapcli spawn --help)"),
                       (("spawn", "--max-cost", "lots", "--cli", "sh", "--", "true"),
                        "--max-cost wants a number, not 'lots' (see zapcli spawn --help)")):
        res = zap(*args)
        assert res.returncode == 2 and res.err == f"zapcli: error: {said}\n", (args, res.err)
    assert zap.json("list")["subagents"] == []  # nothing was spawned


def test_the_man_page_names_every_command_without_json():
    """The man page said every command accepts --json; `top`, `help`, `mcp
    serve` and the completion scripts do not (a new user's trial). The fast
    path's table lists the top-level commands and the board's; the man
    page's sentence names each of them that has no --json."""
    from zapcli.cli import gen
    from zapcli.cli.argspec import SPEC

    page = gen.MAN_PAGE.read_text()
    without = [name for name, spec in SPEC.items() if "--json" not in spec.get("options", {})]
    assert without and all(f"\\fB{name}\\fR" in page for name in without), without
    assert "Every command accepts" not in page


def test_help_writes_each_usage_line_as_the_docs_and_man_page_do(zap):
    """A new user's trial: `--help` wrote `zapcli spawn [OPTIONS] {TASK}` where
    the docs and man page write `TASK` (typer braces a required argument). The
    usage line each command's `--help` prints is the one in
    docs/reference/commands.md, word for word: required, optional, variadic,
    two arguments and a group's command."""
    import re

    from zapcli.cli import gen

    docs = gen.REFERENCE.read_text()
    for cmd in (("spawn",), ("run",), ("poll",), ("wait",), ("continue",), ("agents", "show")):
        out = zap(*cmd, "--help", env={"COLUMNS": "120"}).out
        said = re.search(r"Usage: (zapcli .*?)\s*$", out, re.M)
        assert said and "{" not in said.group(1), (cmd, out)
        assert f"\n{said.group(1)}\n" in docs, (cmd, said.group(1))
