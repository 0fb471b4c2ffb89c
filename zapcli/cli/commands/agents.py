"""`zapcli agents ...`: list, show, save, delete, enable, disable, model, copy.

Calls `zapcli.ops.agents` and `zapcli.definitions.manage` and renders with
`zapcli.render.agents`; each subcommand is the function of its name here
(`list_` for `list`), which both the fast path and the typer sub-app in
`zapcli.cli.groups` call.
"""

from __future__ import annotations

from pathlib import Path

from zapcli.cli.output import emit, warn
from zapcli.paths import workspace_of
from zapcli.render import agents as render


def _ws() -> Path:
    return workspace_of(Path.cwd())


def list_(json: bool = False) -> int:
    from zapcli.ops.agents import list_agents

    res = list_agents(_ws())
    _say_untrusted(res)
    emit(json, render.list_doc, render.list_lines, res)
    return 0


def _say_untrusted(res: object) -> None:
    """What the workspace's trust left out: one line on stderr, as spawn,
    run and doctor say it (the --json document holds it too)."""
    found = getattr(res, "untrusted", None)
    if found:
        warn(found["notice"])


def show(name: str, json: bool = False) -> int:
    from zapcli.ops.agents import show_agent

    res = show_agent(name, _ws())
    _say_untrusted(res)
    emit(json, render.show_doc, render.show_lines, res)
    return 0


def save(file: str, scope: str = "workspace", json: bool = False) -> int:
    from zapcli.definitions.manage import save_agent

    emit(json, render.as_doc, render.saved_lines, save_agent(Path(file), scope, _ws()))
    return 0


def delete(name: str, scope: str | None = None, json: bool = False) -> int:
    from zapcli.definitions.manage import delete_agent

    emit(json, render.as_doc, render.deleted_lines, delete_agent(name, _ws(), scope=scope))
    return 0


def enable(name: str, json: bool = False) -> int:
    from zapcli.definitions.manage import enable_agent

    emit(json, render.as_doc, render.switched_lines, enable_agent(name, _ws()))
    return 0


def disable(name: str, json: bool = False) -> int:
    from zapcli.definitions.manage import disable_agent

    emit(json, render.as_doc, render.switched_lines, disable_agent(name, _ws()))
    return 0


def model(name: str, model: str | None = None, clear: bool = False, json: bool = False) -> int:
    from zapcli.ops.agents import set_model

    emit(json, render.as_doc, render.model_lines, set_model(name, model, clear, _ws()))
    return 0


def copy(name: str, to: str = "system", as_: str | None = None, force: bool = False, json: bool = False) -> int:
    from zapcli.definitions.manage import copy_agent

    emit(json, render.as_doc, render.copied_lines,
         copy_agent(name, _ws(), to=to, new_name=as_, force=force))
    return 0
