"""Delegation never widens, at spawn: a child starts within what its spawner
holds, or with the person's approval, or not at all.

Imports `zapcli.capabilities.delegation` (what a spawn record reaches, and
what one reaches beyond another), `zapcli.trail` (the spawner's record),
`zapcli.errors`. Every spawn passes here (`zapcli.ops.spawn.prepare`):
the `subagent` tool of `zapcli run` (spawns, forks, attempts), MCP `spawn`
and `zapcli call` inside a subagent's work, `continue`. Its spawner is the
one given (a run gives its own fields), else the subagent whose work this
is (the marker its commands carry), else nobody. A model's spawn from
outside zapcli (MCP `spawn`, `zapcli call`; `within_the_user`) is still
bounded by the person's own settings: their approval mode is its ceiling
and it works in the server's workspace or their `writable_roots`. The
sandbox, which hides zapcli's state from a subagent's commands, and the
approval of each command are what stop a command that drops the marker.
"""

from __future__ import annotations

import os

from zapcli.errors import NotFound, ZapcliError

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; spawn is on the hot path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def spawner_of(given: dict[str, Any] | None) -> dict[str, Any] | None:
    """The spawn-record fields whose grant bounds this spawn: the ones given
    (`zapcli run`), else those of the subagent whose work this is (its
    marker: a `zapcli call` or MCP server a subagent's tool started)."""
    if given is not None:
        return given
    marker = os.environ.get("ZAPCLI_SUBAGENT_ID", "")
    if not marker.startswith("sa_"):
        return None
    from zapcli.trail.reader import load

    try:
        return dict(load(marker).spawn.raw)
    except (NotFound, OSError):
        return None


def within_spawner(given: dict[str, Any] | None, ask: Callable[[str], tuple[bool, str]] | None,
                   child: dict[str, Any]) -> None:
    """Delegation never widens: a child that would hold what its spawner does
    not (tools, MCP servers, the network, commands outside the sandbox, where
    it writes, a looser approval mode) starts only with the person's approval
    (`ask`); else ZapcliError, saying what the model may do."""
    spawner = spawner_of(given)
    if spawner is None:
        return
    from zapcli.capabilities.delegation import holding, reach_of, wider

    mine, theirs = reach_of(spawner), reach_of(child)
    more = wider(mine, theirs, own_tree=(child.get("worktree") or {}).get("path"))
    if not more:
        return
    what = f"{theirs.label} would hold more than {mine.label}, which starts it: {'; '.join(more)}"
    ok, why = _asked(ask, what)
    if not ok:
        raise ZapcliError(f"not started: {what}. A subagent holds at most what its spawner holds; "
                          f"a person must approve more, and did not ({why}). Start one within "
                          f"what you hold ({holding(mine)}) — fork keeps your own definition — "
                          "or finish and say in your report what needs a person's approval",
                          code="widens")


def saved_widens(args: dict[str, Any], bound: dict[str, Any]) -> list[str]:
    """What a definition about to be saved (`yaml` text or `fields`, as
    `subagents_save` and the `agents_save` action take it) holds beyond
    `bound`; [] when within, or when it does not parse (the save refuses it)."""
    from zapcli.capabilities.delegation import reach_of, wider
    from zapcli.definitions.schema import parse_definition
    from zapcli.ops.agents import fields_to_yaml

    try:
        text = str(args["yaml"]) if args.get("yaml") is not None else fields_to_yaml(args["fields"])
        definition, _diags = parse_definition(text, "<yaml>", layer="workspace")
    except Exception:  # noqa: BLE001 - the save reports what is wrong with it
        return []
    if definition is None:
        return []
    child = {**bound, "cli": definition.cli or "zapcli", "definition": definition.to_dict(),
             "grant": {}, "agent": definition.name}
    return wider(reach_of(bound), reach_of(child))


def save_within_spawner(args: dict[str, Any], given: dict[str, Any] | None,
                        ask: Callable[[str], tuple[bool, str]] | None) -> None:
    """`agents_save` from inside a subagent's work (MCP, `zapcli call`): a
    definition with more than that subagent holds is saved only with the
    person's approval; else ZapcliError saying why."""
    spawner = spawner_of(given)
    more = saved_widens(args, spawner) if spawner is not None else []
    if not more:
        return
    what = f"the definition would hold more than the subagent saving it: {'; '.join(more)}"
    ok, why = _asked(ask, what)
    if not ok:
        raise ZapcliError(f"not saved: {what}; a person must approve that, and did not ({why}). "
                          "Save one within what you hold, or say in your report what a person "
                          "should save", code="widens")


def within_the_user(settings: Any, approval: str | None, cwd: str | None, here: str,
                    ask: Callable[[str], tuple[bool, str]] | None) -> None:
    """A spawn a model asks for from outside zapcli (MCP `spawn`, `zapcli
    call`): the person's own approval mode (their config.yaml, or
    ZAPCLI_APPROVAL for the server) is its ceiling, and it works inside
    the server's workspace (`here`) or the person's `writable_roots`. More
    starts only with the person's approval (`ask`: the MCP client's user);
    else ZapcliError saying how to allow it. Nothing is created either way."""
    from pathlib import Path

    from zapcli.approvals import MODES

    more = []
    ceiling = settings.approval if settings.approval in MODES else "workspace"
    if approval in MODES and MODES.index(approval) > MODES.index(ceiling):
        more.append(f"approval mode {approval} (yours: {ceiling})")
    if cwd:
        where = (Path(here) / os.path.expanduser(cwd)).resolve()
        roots = [Path(here).resolve(),
                 *(Path(os.path.expanduser(r)).resolve() for r in settings.writable_roots)]
        if not any(where == r or r in where.parents for r in roots):
            more.append(f"cwd {where} (outside the workspace {roots[0]}"
                        + (" and your writable_roots)" if len(roots) > 1 else ")"))
    if not more:
        return
    what = f"a spawn asked for more than your settings allow: {'; '.join(more)}"
    ok, why = _asked(ask, what)
    if not ok:
        raise ZapcliError(f"not started: {what}. A model's spawn is held to your approval mode "
                          "and workspace; a person must approve more, and did not "
                          f"({why}). Leave `approval` and `cwd` out, or raise your own "
                          "setting (approval: in your config.yaml, ZAPCLI_APPROVAL, or "
                          "writable_roots)", code="widens")


def _asked(ask: Callable[[str], tuple[bool, str]] | None, what: str) -> tuple[bool, str]:
    """The person's answer to a widening (`ask`: whoever can approve here),
    or no when nobody can be asked."""
    return ask(what) if ask is not None else (False, "nobody here can approve it")
