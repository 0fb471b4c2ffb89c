"""What a spawn freezes of the commands run on its subagent's events: the
on-finish command and the event hooks (`hooks:` in the user's own config,
`spawn --on-event EVENT=CMD`), checked before anything is created.

Whoever sees an occurrence later (the runner or the first zapcli command
that looks) runs what the spawn chose, never what a config says by then.
"""

from __future__ import annotations

from zapcli.errors import UsageError, param
from zapcli.ops.tasktext import require_utf8

TYPE_CHECKING = False  # `typing` costs start-up on spawn's path; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.config import Settings


def check(on_finish: str | None, on_event: dict[str, str] | None) -> None:
    """Raises UsageError for an event no hook can name, a command that is not
    text, or `finished` given twice (it is the on-finish command)."""
    if not on_event:
        return
    from zapcli.trail.events import EVENTS

    if on_finish is not None and "finished" in on_event:
        raise UsageError(f"{param('on_finish')} and {param('on_event')} finished=... both set the "
                         "command run when it ends; give one of them")
    for event, command in on_event.items():
        if event not in EVENTS:
            raise UsageError(f"{param('on_event')}: unknown event {event!r}; choose one of: "
                             f"{', '.join(EVENTS)}")
        require_utf8(f"{param('on_event')} {event}", command)


def frozen(on_finish: str | None, on_event: dict[str, str] | None,
           settings: Settings) -> dict[str, Any]:
    """The spawn record's `on_finish` and `hooks` fields: the spawn's own
    choice over the user's config; `EVENT=` (an empty command) turns one off."""
    out: dict[str, Any] = {}
    hooks = {**settings.hooks, **(on_event or {})}
    finished = hooks.pop("finished", None)
    hook = on_finish if on_finish is not None else finished if finished is not None \
        else settings.on_finish
    if hook is not None and hook.strip():
        out["on_finish"] = hook
    hooks = {event: command for event, command in hooks.items() if command.strip()}
    if hooks:
        out["hooks"] = hooks
    return out
