"""Generated artefacts, all derived from the typer app so they cannot drift:
`argspec` (the fast path's table), shell `completions`, the `man` page and
the top-level `--help` text (all carried by the package, in
zapcli/cli/share/), and the documentation site's command and tool
references (docs/reference/commands.md and tool-api.md, with the man page).

Usage: python -m zapcli.cli.gen argspec|completions|man|check. Tests run
`check` logic to prove every artefact is current.
"""

from __future__ import annotations

import inspect
import sys
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHARE = ROOT / "zapcli" / "cli" / "share"
COMPLETIONS = {"bash": SHARE / "completions" / "zapcli.bash", "zsh": SHARE / "completions" / "_zapcli",
               "fish": SHARE / "completions" / "zapcli.fish"}
MAN_PAGE = SHARE / "man" / "man1" / "zapcli.1"
HELP_TEXT = SHARE / "help.txt"  # `zapcli --help` to a pipe (`zapcli.cli.helptext`)
REFERENCE = ROOT / "docs" / "reference" / "commands.md"
TOOL_REFERENCE = ROOT / "docs" / "reference" / "tool-api.md"


def commands() -> dict[str, Any]:
    """{command name: wrapper function} in declaration order."""
    from zapcli.cli.app import app

    out: dict[str, Any] = {}
    for info in app.registered_commands:
        fn: Any = info.callback
        out[info.name or fn.__name__.rstrip("_")] = fn
    return out


def groups() -> dict[str, dict[str, Any]]:
    """{group name: {subcommand: wrapper}} for typer sub-apps (e.g. `agents`)."""
    from zapcli.cli.app import app

    out: dict[str, dict[str, Any]] = {}
    for group in app.registered_groups:
        sub: Any = group.typer_instance
        out[str(group.name)] = {(c.name or c.callback.__name__): c.callback for c in sub.registered_commands}
    return out


def group_help() -> dict[str, str]:
    """{group name: its help} for typer sub-apps."""
    from zapcli.cli.app import app

    return {str(g.name): str(g.typer_instance.info.help or "") for g in app.registered_groups
            if g.typer_instance is not None}


def usages() -> dict[str, str]:
    """{command: its usage line as `--help` prints it} ("group sub" for group
    commands), from click's own rendering of the typer app."""
    import typer.main

    from zapcli.cli.app import app

    root: Any = typer.main.get_command(app)
    context = root.context_class  # the click typer runs on (typer may carry its own)
    top = context(root, info_name="zapcli")
    out: dict[str, str] = {}

    def usage(cmd: Any, ctx: Any, path: list[str]) -> str:
        return " ".join(["zapcli", *path, *cmd.collect_usage_pieces(ctx)])

    for name, cmd in root.commands.items():
        ctx = context(cmd, info_name=name, parent=top)
        subs = getattr(cmd, "commands", None)
        if subs is None:
            out[name] = usage(cmd, ctx, [name])
        for sub, subcmd in (subs or {}).items():
            out[f"{name} {sub}"] = usage(subcmd, context(subcmd, info_name=sub, parent=ctx), [name, sub])
    return out


def _kind(hint: Any) -> tuple[str, bool]:
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Union:
        hint = next(a for a in args if a is not type(None))
    if typing.get_origin(hint) is list:
        return _kind(typing.get_args(hint)[0])[0], True
    return {str: "str", int: "int", float: "float", bool: "flag"}[hint], False


def argspec(with_groups: bool = False) -> dict[str, Any]:
    """The command table. `with_groups` adds "group sub" entries (docs only:
    the fast path handles top-level commands, typer the groups)."""
    from typer.models import ArgumentInfo, OptionInfo

    spec: dict[str, Any] = {}
    items = list(commands().items())
    if with_groups:
        items += [(f"{g} {n}", fn) for g, cmds in groups().items() for n, fn in cmds.items()]
    for name, fn in items:
        hints = typing.get_type_hints(fn)
        entry: dict[str, Any] = {"options": {}, "args": [], "defaults": {}, "help": inspect.getdoc(fn) or ""}
        for pname, param in inspect.signature(fn).parameters.items():
            info = param.default
            kind, multiple = _kind(hints[pname])
            if isinstance(info, OptionInfo):
                decls: Any = info.param_decls
                for decl in decls:
                    entry["options"][decl] = (pname, kind, multiple)
                entry["defaults"][pname] = info.default
                entry.setdefault("option_help", {})[decls[0]] = info.help or ""
                entry.setdefault("option_meta", {})[decls[0]] = info.metavar
                if info.hidden:  # not in --help, nor in the references made from this table
                    entry.setdefault("option_hidden", []).append(decls[0])
            elif isinstance(info, ArgumentInfo):
                required = info.default is ...
                entry["args"].append((pname, kind, -1 if multiple else 1, required))
                entry["defaults"][pname] = None if required else info.default
                entry.setdefault("arg_help", {})[pname] = info.help or ""
                entry.setdefault("arg_meta", {})[pname] = info.metavar
        spec[name] = entry
    return spec


# groups whose subcommands the fast path parses too ("board claim" is a worker's hot loop;
# `worktree list` and `worktree rm` are what a person runs after every --worktree subagent;
# `agents list` and `agents show` are what a person or a model runs before choosing one)
FAST_GROUPS = ("board", "worktree", "agents")


def render_argspec() -> str:
    import pprint

    every = argspec(with_groups=True)
    spec = {k: {kk: vv for kk, vv in v.items() if kk in ("options", "args", "defaults")}
            for k, v in every.items() if " " not in k or k.split()[0] in FAST_GROUPS}
    return ('"""GENERATED by `python -m zapcli.cli.gen argspec` from zapcli/cli/app.py: do not edit.\n\n'
            "The fast path's table: command -> options {flag: (dest, kind, multiple)},\n"
            'positional args [(dest, kind, nargs, required)], defaults."""\n\n'
            f"SPEC: dict = {pprint.pformat(spec, width=100, sort_dicts=False)}\n")


def _tool_page() -> str:
    from zapcli.cli import docpage
    from zapcli.toolapi.spec import ACTIONS

    return docpage.render_tools(ACTIONS)


def _help_text() -> str:
    from zapcli.cli import helptext

    return helptext.render()


def main(argv: list[str]) -> int:
    from zapcli.cli import completion, docpage, manpage

    targets: dict[str, Any] = {
        "argspec": [(ROOT / "zapcli/cli/argspec.py", render_argspec)],
        "completions": [(path, (lambda s=s: completion.render(s, argspec(with_groups=True))))
                        for s, path in COMPLETIONS.items()],
        "man": [(MAN_PAGE, lambda: manpage.render(argspec(with_groups=True))),
                (REFERENCE, lambda: docpage.render(argspec(with_groups=True), group_help(), usages())),
                (TOOL_REFERENCE, _tool_page), (HELP_TEXT, _help_text)],
    }
    wanted = argv[:1] or ["all"]
    if wanted[0] == "check":
        stale = [str(p) for group in targets.values() for p, fn in group
                 if not p.exists() or p.read_text(encoding="utf-8") != fn()]
        print("\n".join(stale) or "all generated files are current")
        return 1 if stale else 0
    for name, group in targets.items():
        if wanted[0] in (name, "all"):
            for path, fn in group:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(fn(), encoding="utf-8")
                print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
