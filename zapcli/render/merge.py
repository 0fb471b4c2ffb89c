"""`merge` (and the merge half of `pick`)."""

from __future__ import annotations

from zapcli.render.common import Lines
from zapcli.render.docschema import stamp
from zapcli.render.text import escape_controls

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

HOW_WORDS = {"fast-forward": "fast-forwarded", "merge": "merged (a merge commit)",
             "squash": "squashed into one commit", "rebase": "rebased, then fast-forwarded"}


def lines(res: Any) -> Lines:
    if getattr(res, "outcome", "merged") == "up_to_date":
        return _up_to_date(res)
    n = len(res.files)
    out: Lines = [("green", f"[SubAgent] {res.id} merged into {res.into} of {res.repo}: "
                            f"{HOW_WORDS.get(res.how, res.how)}, {n} file{'s' if n != 1 else ''} "
                            f"changed")]
    out.append(("dim", f"  {res.into}: {res.previous[:12]} -> {res.commit[:12]}"))
    if res.committed_work:
        out.append(("dim", f"  its uncommitted work was committed on its branch {res.branch} first"))
    if res.stale.get("base_moved"):
        count = res.stale.get("commits_since_base") or 0
        out.append(("yellow", f"  Note: {res.into} had moved since the base "
                              f"({count} commit{'s' if count != 1 else ''}); the work was merged "
                              "on top of it"))
    if getattr(res, "recovered", None):
        out.append(("yellow", f"  Note: {res.recovered}"))
    if getattr(res, "interrupted", False):
        out.append(("yellow", "  Note: the interrupt came while the checkout was being moved; "
                              "the merge was finished whole"))
    if res.warning:
        out.append(("yellow", f"  Warning: {res.warning}"))
    control = list(getattr(res, "control_files", []) or [])
    if control:
        out.append(("yellow", f"  Control files changed, as you allowed: "
                              f"{', '.join(escape_controls(p) for p in control[:20])}"))
    for path in res.files[:20]:
        out.append(("", f"  {escape_controls(path)}"))
    if n > 20:
        out.append(("dim", f"  … and {n - 20} more"))
    return out


def _up_to_date(res: Any) -> Lines:
    out: Lines = []
    if getattr(res, "recovered", None):
        out.append(("yellow", f"Note: {res.recovered}"))
    out.append(("green", f"[SubAgent] {res.id}: nothing to merge, {res.into} already has all of "
                         f"it (up to date)"))
    out.append(("dim", f"  {res.into} of {res.repo} stays at {res.commit[:12]}"))
    return out


def doc(res: Any) -> dict[str, Any]:
    outcome = getattr(res, "outcome", "merged")
    return stamp("merge", {
        "id": res.id, "merged": outcome == "merged", "outcome": outcome, "how": res.how, "repo": res.repo, "into": res.into,
        "commit": res.commit, "previous": res.previous, "branch": res.branch,
        "files": list(res.files), "committed_work": res.committed_work, "stale": res.stale,
        "warning": res.warning, "recovered": getattr(res, "recovered", None),
        "interrupted": bool(getattr(res, "interrupted", False)), "control_files": list(getattr(res, "control_files", []))})
