"""The typer command groups: `zapcli worktree …`, `zapcli agents …`,
`zapcli mcp …`, `zapcli trace …`, which `zapcli.cli.app` registers on its app.

Imports typer and `zapcli.cli.options` (the shared `--json` option); each
body hands its parameters to `zapcli.cli.commands`.
"""

from __future__ import annotations

from typing import Optional

import typer

from zapcli.cli.options import JSON

worktree_app = typer.Typer(help="The git worktrees of --worktree subagents.", no_args_is_help=True)


@worktree_app.command("list")
def worktree_list(json: bool = JSON) -> None:
    """Every subagent worktree with its state: clean, dirty, unpushed commits, in use."""
    from zapcli.cli.commands import worktree

    raise typer.Exit(worktree.list_(json=json))


@worktree_app.command("rm")
def worktree_rm(
    ids: list[str] = typer.Argument(..., help="Subagent ids whose worktrees to remove.", metavar="IDS"),
    force: bool = typer.Option(False, "--force", help="Also when dirty, unpushed or in use (never while its subagent runs).", metavar=""),
    json: bool = JSON,
) -> None:
    """Remove subagents' worktrees (and each branch that has nothing beyond its base).

    Each id answers on its own, as with rm: one refused (it holds work, is
    in use, has no worktree) is said on stderr and the others are still
    removed; the exit code is 1 when any was refused.
    """
    from zapcli.cli.commands import worktree

    raise typer.Exit(worktree.rm(ids=ids, force=force, json=json))


agents_app = typer.Typer(help="Manage subagent definitions (YAML) and their machine-local switches.",
                         no_args_is_help=True)


def _agents(fn: str, **params) -> None:
    from zapcli.cli.commands import agents

    raise typer.Exit(getattr(agents, fn)(**params))


@agents_app.command("list")
def agents_list(json: bool = JSON) -> None:
    """Every definition: name, layer, source file, enabled, effective model, diagnostics."""
    _agents("list_", json=json)


@agents_app.command("show")
def agents_show(name: str = typer.Argument(..., help="Definition name.", metavar="NAME"), json: bool = JSON) -> None:
    """One definition in full, with its diagnostics."""
    _agents("show", name=name, json=json)


@agents_app.command("save")
def agents_save(
    file: str = typer.Argument(..., help="A definition YAML file to validate and install.", metavar="FILE"),
    scope: str = typer.Option("workspace", "--scope", help="system (~/.config/zapcli) or workspace (.zapcli/).", metavar="SCOPE"),
    json: bool = JSON,
) -> None:
    """Validate FILE and install it into a scope (refused if invalid or named like a built-in)."""
    _agents("save", file=file, scope=scope, json=json)


@agents_app.command("delete")
def agents_delete(
    name: str = typer.Argument(..., help="Definition name.", metavar="NAME"),
    scope: Optional[str] = typer.Option(None, "--scope", help="system or workspace (default: the effective one).", metavar="SCOPE"),
    json: bool = JSON,
) -> None:
    """Delete a system or workspace definition file."""
    _agents("delete", name=name, scope=scope, json=json)


@agents_app.command("enable")
def agents_enable(name: str = typer.Argument(..., help="Definition name.", metavar="NAME"), json: bool = JSON) -> None:
    """Enable a definition on this machine."""
    _agents("enable", name=name, json=json)


@agents_app.command("disable")
def agents_disable(name: str = typer.Argument(..., help="Definition name.", metavar="NAME"), json: bool = JSON) -> None:
    """Disable a definition on this machine (spawn --agent NAME is then refused)."""
    _agents("disable", name=name, json=json)


@agents_app.command("model")
def agents_model(
    name: str = typer.Argument(..., help="Definition name.", metavar="NAME"),
    model: Optional[str] = typer.Argument(None, help="Model to use for it on this machine.", metavar="MODEL"),
    clear: bool = typer.Option(False, "--clear", help="Remove the override.", metavar=""),
    json: bool = JSON,
) -> None:
    """Set or clear a machine-local model override (the only change allowed on a built-in)."""
    _agents("model", name=name, model=model, clear=clear, json=json)


@agents_app.command("copy")
def agents_copy(
    name: str = typer.Argument(..., help="Definition to copy (a built-in's copy needs a name of its own: --as).", metavar="NAME"),
    to: str = typer.Option("system", "--to", help="Target scope: system (default: yours, every folder) or workspace.", metavar="SCOPE"),
    as_: Optional[str] = typer.Option(None, "--as", help="New name for the copy (needed for a built-in: no definition is named like one).", metavar="NAME"),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file.", metavar=""),
    json: bool = JSON,
) -> None:
    """Copy a definition (all dimensions) into a scope, to edit it there."""
    _agents("copy", name=name, to=to, as_=as_, force=force, json=json)


mcp_app = typer.Typer(help="zapcli as an MCP server, for Claude Code, Codex, Gemini CLI, Cursor and any MCP client.",
                      no_args_is_help=True)


@mcp_app.command("serve")
def mcp_serve(
    http: Optional[str] = typer.Option(None, "--http", help="Serve streamable HTTP on [HOST:]PORT (host 127.0.0.1 unless given) instead of stdio; every request needs the server's token (Authorization: Bearer; the file is named at start).", metavar="ADDR"),
    socket: Optional[str] = typer.Option(None, "--socket", help="Serve streamable HTTP on a unix socket at PATH, mode 0600 (this user only; no token).", metavar="PATH"),
    no_token: bool = typer.Option(False, "--no-token", help="With --http on a loopback address only: accept requests without the token (any local user could use the server).", metavar=""),
) -> None:
    """Serve zapcli's tools over MCP (stdio, streamable HTTP with --http, or a unix socket with --socket).

    The tools: spawn, poll, wait, list, kill, output, replay, send, diff, attempts, merge, pick, approve, deny, agents, usage, agents_save, agents_delete. Each connection is its own session unless ZAPCLI_SESSION is set. Over HTTP every request carries the token made at start (or ZAPCLI_MCP_TOKEN), as `Authorization: Bearer TOKEN`. It speaks MCP 2026-07-28 (server/discover, the version in each request) and the handshake revisions 2024-11-05 to 2025-11-25 (initialize), on one connection too.

    A shell command a client's model spawns (cli sh) runs in the sandbox, network off, with no key in its environment; `model_shell_sandbox: off` in your config.yaml turns the sandbox off (doctor says which)."""
    from zapcli.cli.commands import mcp

    raise typer.Exit(mcp.serve(http=http, socket_path=socket, no_token=no_token))


trace_app = typer.Typer(help="OpenTelemetry traces of subagent trees (OTEL_EXPORTER_OTLP_ENDPOINT).",
                        no_args_is_help=True)


@trace_app.command("export")
def trace_export(
    id: Optional[str] = typer.Argument(None, help="Subagent (or run) id: it and every subagent started from it.", metavar="ID"),
    session: Optional[list[str]] = typer.Option(None, "--session", help="Every subagent of session S instead (repeatable).", metavar="S"),
    json: bool = JSON,
) -> None:
    """Send a tree's spans to the OTLP collector now, made from its trails (nothing lost while it was down)."""
    from zapcli.cli.commands import trace

    raise typer.Exit(trace.export(id=id, session=session, json=json))


completion_app = typer.Typer(help="Shell completion for bash, zsh and fish: print the script, or install it.",
                             no_args_is_help=True)


@completion_app.command("show")
def completion_show(
    shell: str = typer.Argument(..., help="bash, zsh or fish.", metavar="SHELL"),
) -> None:
    """Print the completion script (e.g. `source <(zapcli completion show bash)`)."""
    from zapcli.cli.commands import completion

    raise typer.Exit(completion.show(shell=shell))


def _show_for(shell: str) -> None:
    def show() -> None:
        from zapcli.cli.commands import completion

        raise typer.Exit(completion.show(shell=shell))
    show.__doc__ = f"Print the {shell} completion script (as `zapcli completion show {shell}`)."
    completion_app.command(shell)(show)


for _shell in ("bash", "zsh", "fish"):  # `zapcli completion bash`, as gh and kubectl take it
    _show_for(_shell)


@completion_app.command("install")
def completion_install(
    shell: Optional[str] = typer.Argument(None, help="bash, zsh or fish (default: the one $SHELL names).", metavar="SHELL"),
    no_rc: bool = typer.Option(False, "--no-rc", help="zsh: do not add the fpath line to .zshrc; print it instead.", metavar=""),
    json: bool = JSON,
) -> None:
    """Put the completion script where the shell finds it (zsh: also puts that folder on fpath in .zshrc, once)."""
    from zapcli.cli.commands import completion

    raise typer.Exit(completion.install(shell=shell, no_rc=no_rc, json=json))
