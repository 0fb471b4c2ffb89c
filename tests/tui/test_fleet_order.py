"""`zapcli.tui.fleet`: the order of the table (needs input first — approval,
stalled, rate-limited, usage-limited — then running, queued, ended), the
filter's words, and the tree, on views made here (no terminal, no files)."""

from __future__ import annotations

from zapcli.lifecycle.status import View
from zapcli.trail.model import Status
from zapcli.tui import fleet
from zapcli.tui.fleet import Filter, Row


def _row(n: int, status: Status, **kw) -> Row:
    created = kw.pop("created", float(n))
    executor = kw.pop("executor", "local")
    view = View(id=f"sa_20260101_{n:08x}", status=status, session="s", cli=kw.pop("cli", "zapcli"),
                agent=kw.pop("agent", None), task=kw.pop("task", f"task {n}"), created="", **kw)
    return Row(view, executor, created_epoch=created)


def test_needs_input_first_then_running_queued_ended():
    rows = [
        _row(1, Status.COMPLETED, ended="2026-01-01T00:00:05.000000Z"),
        _row(2, Status.RUNNING),
        _row(3, Status.QUEUED),
        _row(4, Status.RUNNING, rate_limit={"until": 0}),
        _row(5, Status.AWAITING_APPROVAL, pending_approval={"req_id": "r1", "summary": "bash: x"}),
        _row(6, Status.RUNNING, stalled_s=300.0),
        _row(7, Status.QUEUED, held={"reason": "claude usage limit, resets 15:00"}),
        _row(8, Status.FAILED, reason="usage limit, resets 3pm (Europe/Warsaw)"),
        _row(9, Status.RUNNING),
        _row(10, Status.FAILED, reason="usage limit", continued_by="sa_20260101_00000011"),
        _row(11, Status.QUEUED, held={"kind": "usage_limit", "until": 1_900_000_000.0}),
    ]
    lines = fleet.flat(rows)
    labels = [line.label for line in lines if line.sid is None]
    assert labels == ["NEEDS INPUT (6)", "RUNNING (2)", "QUEUED (1)", "ENDED (2)"]
    order = [int(line.sid[-8:], 16) for line in lines if line.sid]
    assert order[:6] == [5, 6, 4, 7, 8, 11]  # approval, stalled, rate-limited, usage-limited
    assert order[6:9] == [9, 2, 3]  # running newest first, queued
    assert set(order[9:]) == {1, 10}  # ended (one continued after its limit: nothing to do)
    held = next(r for r in rows if r.id.endswith("b"))
    assert fleet.state_text(held).startswith("usage-limited, resets ")
    assert [fleet.state_text(r) for r in rows if r.id.endswith("5")] == ["awaiting approval"]


def test_the_filter_words():
    rows = [_row(1, Status.RUNNING, cli="claude", agent="explorer", task="map the auth module"),
            _row(2, Status.COMPLETED, cli="sh", task="make test"),
            _row(3, Status.AWAITING_APPROVAL, cli="zapcli", agent="fixer", task="fix the login",
                 executor="ray")]

    def hits(text: str) -> list[int]:
        f = Filter.parse(text)
        return [int(r.id[-8:], 16) for r in rows if f.matches(r)]

    assert hits("s:running") == [1]
    assert hits("s:run") == [1]
    assert hits("s:needs") == [3] and hits("s:approval") == [3] and hits("s:awaiting") == [3]
    assert hits("s:ended") == [2] and hits("s:live") == [1, 3]
    assert hits("a:explorer") == [1] and hits("a:fix") == [3]
    assert hits("c:claude") == [1] and hits("c:sh") == [2]
    assert hits("e:ray") == [3] and hits("e:local") == [1, 2]
    assert hits("auth") == [1] and hits("AUTH module") == [1]
    assert hits("!s:ended") == [1, 3] and hits("c:zapcli !a:explorer") == [3]
    assert hits("") == [1, 2, 3]
    assert hits("nothing-like-it") == []


def test_the_tree_nests_children_under_their_parent_and_a_run():
    root = _row(1, Status.RUNNING)
    kid_a = _row(2, Status.RUNNING, parent=root.id)
    kid_b = _row(3, Status.COMPLETED, parent=root.id)
    grandkid = _row(4, Status.AWAITING_APPROVAL, parent=kid_a.id,
                    pending_approval={"req_id": "r1", "summary": "x"})
    of_run = [_row(5, Status.RUNNING, parent="run_20260101_0000abcd"),
              _row(6, Status.RUNNING, parent="run_20260101_0000abcd")]
    orphan = _row(7, Status.COMPLETED, parent="sa_20260101_deadbeef")  # its parent not shown
    lines = fleet.tree([root, kid_a, kid_b, grandkid, *of_run, orphan])
    drawn = [(line.sid[-1] if line.sid else line.label, line.branch) for line in lines]
    # the tree with a row that needs input comes first
    assert drawn[:4] == [("1", ""), ("2", "├─ "), ("4", "│  └─ "), ("3", "└─ ")]
    assert drawn[4] == ("zapcli run run_20260101_0000abcd (2)", "")
    assert drawn[5:7] == [("5", "├─ "), ("6", "└─ ")]
    assert drawn[7] == ("7", "")


def test_the_worktree_column_says_what_became_of_each_tree(zap):
    """A new user's `top` said `sa_20261206_4…` in WORKTREE for every row
    (the id's branch, cut) and kept saying it for trees gc had removed."""
    from tests.parallel.conftest import git
    from zapcli.lifecycle.observe import observe

    git(zap.cwd, "init", "-q", "-b", "main")
    (zap.cwd / "README").write_text("base\n")
    git(zap.cwd, "add", "README")
    git(zap.cwd, "commit", "-q", "-m", "base")
    kept = zap.spawn_sh("echo kept > kept.txt", "--worktree")
    taken = zap.spawn_sh("echo taken > taken.txt", "--worktree")
    assert zap("wait", kept, taken).returncode == 0
    assert zap("merge", "--squash", taken).returncode == 0
    assert fleet.worktree_text(observe(kept)) == "ready"
    assert fleet.worktree_text(observe(taken)) == "merged"
    assert fleet.worktree_text(observe(taken), full=True) == "merged (squash)"
    assert zap("worktree", "rm", taken).returncode == 0
    assert fleet.worktree_text(observe(taken), full=True) == "merged (squash), removed"
    assert fleet.worktree_text(observe(taken)) == "removed"
    plain = zap.spawn_sh("true")
    assert fleet.worktree_text(observe(plain)) == "-"
