"""Options more than one command declares (`--json`), and the help texts
derived from the registries (`--cli`, `--executor`). Imports typer; the
registries when a help text is asked for. `zapcli.cli.app` and
`zapcli.cli.groups` both take them from here."""

from __future__ import annotations

import typer

JSON = typer.Option(False, "--json", help="Print one JSON document (stable snake_case keys).", metavar="")


def backends_help() -> str:
    """--cli's help, from the backend registry: each built-in that is not an
    agent CLI with its summary, then the agent CLIs."""
    from zapcli.backends import registry

    every = {name: registry.get(name) for name in registry.BUILTIN}
    own = [f"{n} ({b.summary}{', default' if n == registry.DEFAULT else ''})"
           for n, b in every.items() if not b.event_format]
    clis = [n for n, b in every.items() if b.event_format]
    return (f"Backend: {', '.join(own)}, or an agent CLI: {', '.join(clis)}; or a plugin's, or "
            "one config.yaml's backends: defines (zapcli doctor lists them). Default: the --agent "
            f"definition's cli:, else {registry.DEFAULT}.")


def executors_help() -> str:
    """--executor's help, from the executor registry."""
    from zapcli import executors

    where = ", ".join(f"{n} ({executors.get(n).summary})" for n in executors.BUILTIN)
    return f"Where it runs: {where}, or a plugin's; config executor. Default: {executors.DEFAULT}."


def hide_type_labels() -> None:
    """Help shows each parameter's metavar (TASK, IDS, N), never typer's type
    labels (`<str>`, `<bool>`, `<list[str]>`) beside it; its usage line writes
    an argument as it is typed and as the docs and man page write it (TASK,
    [TASK], IDS...), not typer's `{TASK}` for a required one."""
    import typer.core as tc

    def usage_name(self: tc.TyperArgument) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")

    tc.TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]

    option_type = tc.TyperOption.display_type_rich
    tc.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
    tc.TyperOption.display_type_rich = (  # type: ignore[method-assign]
        lambda self, ctx: None if self.is_flag or self.count else option_type(self, ctx))

