"""`zapcli continue ID TEXT` (docs/explanation/rules.md#parallel-coding): a finished subagent goes on as a new
subagent that has its whole conversation, then TEXT.

Imports `zapcli.ops.spawn`, `zapcli.lifecycle.observe`, `zapcli.trail`;
`zapcli.backends.resume` for an agent CLI. The new subagent is spawned like
any other (id at once, queue, deadline) with `continue_of: <old id>` and
what carries over, decided here and only here, for every backend: the old
one's frozen definition, model (`--model` to change it), grant, backend
(an agent CLI's frozen command), approval, unattended, token limit,
working directory, tree (`--worktree` carries over: same path and branch),
output schema and on-finish command. The old trail gets a `continued`
record naming the new id, so the ids are linked both ways. Never a
subagent that has not ended; never twice (two successors would share one
tree).

What continuing means per backend: `zapcli`: its runner rebuilds the
conversation from the old trail (`zapcli.backends.history`); `sh` is refused
(a shell command has no conversation: spawn a new one); an agent CLI resumes
its own session (docs/explanation/rules.md#agent-clis) in a copy of the old config home, once
`zapcli.backends.resume` has checked there is a session to resume.
"""

from __future__ import annotations

from typing import Any

from zapcli.errors import ZapcliError
from zapcli.lifecycle.observe import observe
from zapcli.ops.spawn import SpawnRequest, SpawnResult, spawn
from zapcli.trail import store
from zapcli.trail.model import SpawnRecord
from zapcli.trail.reader import load

# The frozen spawn-record fields a continuation takes as they are (the rest
# go through SpawnRequest below, so spawn checks them like any other).
CARRIED = ("agent", "model", "definition", "grant", "backend", "diagnostics", "output_schema",
           "sandbox", "trust")  # trust: the files its grant was made from, as they were then


def _refuse_backend(sid: str, cli: str) -> None:
    if cli == "sh":
        # what the subagent is, not how the command was typed: exit 1, as `send`
        # to it and `diff` of one without a worktree (docs/reference/exit-codes.md)
        raise ZapcliError(f"{sid} ran a shell command (--cli sh), which has no conversation to "
                          "continue; spawn a new subagent instead", code="wrong_backend")


def continue_(sid: str, text: str, *, model: str | None = None, timeout_s: float | None = None,
              on_finish: str | None = None) -> SpawnResult:
    """Start the successor of `sid`. Raises NotFound, UsageError, ZapcliError;
    nothing is created when it does."""
    sid = store.resolve(sid)
    view = observe(sid)
    _refuse_backend(sid, view.cli)
    if not view.terminal:
        steer = f"steer it with `zapcli send {sid} TEXT`, or " if view.cli == "zapcli" else ""
        raise ZapcliError(f"{sid} is still {view.status}; only a finished subagent can be "
                          f"continued: {steer}wait for it (zapcli wait) or stop it (zapcli kill) "
                          "first", code="not_finished")
    path = store.path_for(sid)
    with store.locked(path):  # two `continue` of one id at once: one wins
        s = load(sid)
        _refuse_backend(sid, s.spawn.cli)
        if s.continued_by:
            raise ZapcliError(f"{sid} was already continued as {s.continued_by}; continue that "
                              "one instead", code="already_continued")
        res = spawn(_request(s.spawn, sid, text, model=model, timeout_s=timeout_s,
                             on_finish=on_finish))
        store.append(path, "continued", {"by": res.id})
    return res


def _tree_tip(sid: str, old: SpawnRecord) -> dict[str, Any]:
    """Where a gone tree is made again from (C28): `{"tip": commit}` — the
    branch's last commit when zapcli removed the tree, or the base when no
    tree was ever made; {} while the tree or its branch exists. Raises
    ZapcliError, naming the missing path, when both went outside zapcli:
    the continuation would otherwise run without the first run's work."""
    from pathlib import Path

    from zapcli.worktrees import git as g

    r = g.Receipt.from_dict(old.worktree)
    if r is None or Path(r.path).is_dir() or r.repo_gone:
        return {}
    try:
        if g.branch_exists(r.checkout(), r.branch):
            return {}
    except g.GitError as exc:
        raise ZapcliError(f"{sid} cannot be continued in its tree: {exc.message}",
                          code="tree_gone") from None
    s = load(sid)
    removed = s.tree_removed
    if removed and isinstance(removed.get("tip"), str):
        return {"tip": removed["tip"]}
    if not (s.worktree or {}).get("ok"):
        return {"tip": r.base}  # never made: it starts where it would have
    raise ZapcliError(f"{sid} cannot be continued in its tree: {r.path} and its branch {r.branch} "
                      "were removed outside zapcli, and with them its first run's work; spawn a "
                      "new subagent instead", code="tree_gone")


def _request(old: SpawnRecord, sid: str, text: str, *, model: str | None,
             timeout_s: float | None, on_finish: str | None) -> SpawnRequest:
    """The spawn request of `sid`'s successor: what carries over (see the
    module docstring, event hooks included), with `--model`, `--timeout` and `--on-finish` given
    to `continue` instead where they are. Raises ZapcliError when an agent
    CLI has no session to resume."""
    inherit: dict[str, Any] = {k: old.raw[k] for k in CARRIED if k in old.raw}
    if model is not None:
        inherit["model"] = model
    if old.worktree is not None:
        inherit["worktree"] = {**old.worktree, "carried": True, **_tree_tip(sid, old)}
    if old.backend is not None:  # an agent CLI resumes its own session
        from zapcli.backends import resume

        resume.check(sid)
    inherit["continue_of"] = sid
    first = old.raw.get("trace")
    if isinstance(first, dict) and first.get("trace_id") and first.get("span_id"):  # its trace links to it
        inherit["trace_links"] = [{"trace_id": first["trace_id"], "span_id": first["span_id"],
                                   "relation": "continue_of"}]
    hook = old.on_finish if on_finish is None else on_finish
    from zapcli.trail.events import RULES  # its event hooks carry over, exactly as they were

    return SpawnRequest(
        task=text, cli=old.cli, timeout_s=timeout_s, approval=old.approval, cwd=old.cwd,
        unattended=old.unattended, max_tokens=old.max_tokens,
        on_finish=hook if isinstance(hook, str) else "", inherit=inherit,
        on_event={event: old.hooks.get(event, "") for event in RULES})
