"""`worktree list` / `worktree rm`, and the tree lines `poll` and `gc` share."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines
from zapcli.render.docschema import stamp

STATE_STYLE = {"clean": "green", "merged": "green", "dirty": "yellow", "unpushed": "yellow", "missing": "red",
               "unknown": "red"}


def _label(t: Any) -> str:
    """The tree's state word; "merged" for one the listing found merged."""
    if t.state is None:
        return ""
    return "merged" if getattr(t, "merged", False) else t.state.label


def tree_doc(t: Any) -> dict[str, Any]:
    st = t.state.to_dict() if t.state is not None else None
    if st is not None:
        st["state"] = _label(t)
    return {"id": t.id, "ids": list(t.ids), "statuses": list(t.statuses), **t.receipt.to_dict(),
            "state": st, "in_use_by": t.in_use_by, "running": t.running}


def _state_words(t: Any) -> str:
    st = t.state
    words = _label(t) if st is not None else "?"
    if st is not None and st.reasons():
        words += f": {', '.join(st.reasons())}"
    if t.running:
        words += f"; its subagent {t.running[0]} is running"
    elif t.users:
        words += "; in use by " + ", ".join(f"{i} ({s})" for i, s, _o in t.users)
    return words


def list_lines(trees: list[Any]) -> Lines:
    noun = "worktree" if len(trees) == 1 else "worktrees"
    out: Lines = [("bold", f"[SubAgent] {len(trees)} subagent {noun}")]
    for t in trees:
        out.append(("", ""))
        label = _label(t)
        out.append((STATE_STYLE.get(label, ""), f"{t.id}: {_state_words(t)}"))
        out.append(("", f"  Path: {t.receipt.path}"))
        out.append(("dim", f"  Branch: {t.receipt.branch} (base {t.receipt.base[:12] or '?'}) "
                           f"of {t.receipt.repo}"))
        if len(t.ids) > 1:
            out.append(("dim", f"  Continued by: {' -> '.join(t.ids[1:])}"))
    return out


def list_doc(trees: list[Any]) -> dict[str, Any]:
    return stamp("worktrees", {"count": len(trees), "worktrees": [tree_doc(t) for t in trees]})


def rm_lines(res: Any) -> Lines:
    out: Lines = [("green", f"[SubAgent] removed the worktree {res.tree.receipt.path}")]
    if res.branch_deleted:
        out.append(("dim", f"  branch {res.tree.receipt.branch} deleted ({res.note or 'nothing beyond its base'})"))
    elif res.note:
        out.append(("yellow", f"  {res.note}"))
    if res.teardown:
        out.append(("yellow", f"  {res.teardown}"))
    return out


def _rm_entry(res: Any) -> dict[str, Any]:
    return {"removed": True, **tree_doc(res.tree), "branch_deleted": res.branch_deleted,
            "note": res.note or None, "teardown_error": res.teardown or None}


def rm_doc(res: Any) -> dict[str, Any]:
    return stamp("worktree-rm", _rm_entry(res))


def rm_each_lines(res: Any) -> Lines:
    """Several ids: each tree removed, as one id's (the refused ones are said
    on stderr, as rm's ids that do not exist)."""
    return [line for done in res.removed for line in rm_lines(done)]


def rm_each_doc(res: Any) -> dict[str, Any]:
    """Several ids: `removed` true when every tree went; each tree removed,
    and each id refused with why."""
    return stamp("worktree-rm", {"removed": not res.refused,
                                 "worktrees": [_rm_entry(done) for done in res.removed],
                                 "refused": [{"id": sid, "code": code, "message": message}
                                             for sid, (code, message) in res.refused.items()]})


def decision_lines(decisions: list[Any], dry_run: bool) -> Lines:
    verbs = {"remove": "would remove" if dry_run else "removed", "keep": "kept",
             "failed": "NOT removed"}
    out: Lines = []
    for d in decisions:
        style = {"remove": "dim", "keep": "yellow", "failed": "red"}[d.action]
        out.append((style, f"  worktree {d.tree.receipt.path}: {verbs[d.action]}: {d.reason}"))
        if d.branch_deleted:
            out.append(("dim", f"    branch {d.tree.receipt.branch} deleted"
                               + (f" ({d.branch_note})" if d.branch_note else "")))
    return out


def decision_doc(d: Any) -> dict[str, Any]:
    return {"id": d.tree.id, "path": d.tree.receipt.path, "branch": d.tree.receipt.branch,
            "action": d.action, "reason": d.reason, "branch_deleted": d.branch_deleted}
