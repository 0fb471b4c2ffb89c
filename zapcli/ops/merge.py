"""`zapcli merge ID [--squash | --rebase]`: a finished subagent's work into
the current branch of the checkout it was spawned from (docs/explanation/rules.md#parallel-coding, #23).

Imports `zapcli.lifecycle.treework`, `zapcli.ops.mergecheck` (what refuses it first),
`zapcli.worktrees`, `zapcli.trail`. Under the repository's worktree lock:
the work (its tree's snapshot: uncommitted work included) is merged in the
object store first; a conflict, uncommitted changes of the checkout in the
paths it would change, a detached HEAD or a merge in progress refuse it with
the files named and nothing changed on either side. So does a change to a
control file (`zapcli.control`: `.zapcli/`, `.envrc`, an agent CLI's project
settings, at any depth, and what the checkout's repository adds — its
hooks folder, included config, the programs its git settings run) unless
the person allows it: the caller passes
`allow_control` — True (`--allow-control-files`), or a question put to the
person with the files named. Only then does the uncommitted work become a
commit on the subagent's branch (so the branch holds everything that was
merged) and the checkout move forward to the result. A `merged` record in
the trail says what was merged, so `worktree rm` and `gc` know a squashed
branch was taken. Work the branch already has is no refusal: the result
says `up_to_date` and nothing moves (`_up_to_date`).

Reading the tree (a `git status` of all its files) takes as long as git's
own merge in a big repository, so it runs in a thread while the rest is
checked, and the merge of the branch's tip — what the work is when nothing
is uncommitted — is worked out meanwhile (`_guess`); it stands only when
the work turns out to be that very commit, else the merge is worked out
again for the work. Nothing is written for a clean tree but loose objects.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from zapcli import control
from zapcli.errors import ZapcliError
from zapcli.lifecycle import treework
from zapcli.ops.mergecheck import how_of, mergeable
from zapcli.ops.mergecheck import ready as ready
from zapcli.plain import field, plain, replace
from zapcli.trail import reader, store
from zapcli.worktrees import git as g
from zapcli.worktrees import merge as gm
from zapcli.worktrees import stale
from zapcli.worktrees.create import _locked
from zapcli.worktrees.snapshot import keep

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.worktrees.move import Recovered


@plain
class MergeResult:
    id: str
    how: str  # fast-forward | merge | squash | rebase
    repo: str
    into: str  # the checkout's branch
    commit: str  # its new HEAD
    previous: str  # its HEAD before
    branch: str  # the subagent's branch (it holds the work, uncommitted work committed)
    files: list[str] = field(default_factory=list)
    committed_work: bool = False  # the tree's uncommitted work became a commit on its branch
    stale: dict[str, Any] = field(default_factory=dict)  # the branch had moved since the base
    warning: str | None = None  # merged, but something after it did not go as planned
    control_files: list[str] = field(default_factory=list)  # changed control files, allowed
    recovered: str | None = None  # an earlier merge stopped halfway, and what was done about it
    interrupted: bool = False  # a Ctrl-C/SIGTERM/SIGHUP came while the checkout moved: finished
    outcome: str = "merged"  # merged | up_to_date (the branch already had all of it: nothing done)


Allow = bool | Callable[[list[str]], bool]  # True, or a question put to the person


def control_names() -> tuple[str, ...]:
    """Every control file name: the base list and what each backend (built-in
    or a plugin's) declares as its project settings (`control_files`)."""
    from zapcli.backends.registry import control_files

    return control_files()


def control_changes(files: list[str], names: tuple[str, ...] | None = None) -> list[str]:
    """The paths in `files` that are, or lie in, a control file — at any depth
    (direnv reads `.envrc` in every folder one enters; a nested `.zapcli/`
    is the workspace of whoever runs zapcli there)."""
    if not files:
        return []
    names = control_names() if names is None else names
    return [path for path in files if control.match(path, names, anywhere=True)]


def _refuse_control(sid: str, files: list[str], *, asked: bool = False) -> ZapcliError:
    shown = ", ".join(files[:20]) + (f" and {len(files) - 20} more" if len(files) > 20 else "")
    if asked:
        return ZapcliError(f"{sid} not merged: its changes to control files ({shown}) were not "
                           "allowed; nothing was changed", code="control_files")
    return ZapcliError(
        f"{sid} not merged: it changes control files — files other programs read as "
        f"configuration that runs commands: {shown}; nothing was changed. Look at them "
        f"(zapcli diff {sid}), then merge them yourself with zapcli merge {sid} "
        "--allow-control-files (zapcli pick: the same option)", code="control_files")


def _refused(sid: str, exc: gm.Refused, recovered: str | None = None, hint: str = "") -> ZapcliError:
    first = f"{recovered[0].upper()}{recovered[1:]}. " if recovered else ""
    after = "" if exc.code == "killed" else "; the checkout is unchanged"  # it says what it is
    return ZapcliError(f"{first}{sid} not merged: {exc.message}{after}{hint}", code=exc.code)


def _up_to_date(sid: str, how: str, work: treework.Work, co: gm.Checkout,
                recovered: str | None) -> MergeResult:
    """The checkout's branch already has all of the work (merged before, by
    zapcli or by hand): not a failure, as `git merge` says "Already up to
    date." and exits 0 — a script that merges again goes on. Nothing is
    changed, nothing recorded."""
    r = work.receipt
    return MergeResult(sid, how, r.repo, str(co.branch), co.head, co.head, r.branch,
                       recovered=recovered, outcome="up_to_date")


INTERRUPTS = ("SIGINT", "SIGTERM", "SIGHUP")
# Set by `zapcli merge`'s own process, which ends once it has said the result:
# interrupts stay held past a finished merge, so one that comes between the
# record and the printed result cannot end it unreported (exit 0, said merged).
HOLD_TO_EXIT = False


class _Held:
    """Ctrl-C, SIGTERM and SIGHUP held while the checkout moves and the
    merge is recorded (the main thread only: where Python takes them);
    `came`: one arrived meanwhile (it is taken, not delivered after)."""

    def __enter__(self) -> _Held:
        import signal

        self.came = False
        self.sigs = {getattr(signal, name) for name in INTERRUPTS}
        self.main = threading.current_thread() is threading.main_thread()
        if self.main:
            self.previous = signal.pthread_sigmask(signal.SIG_BLOCK, self.sigs)
        return self

    def take(self) -> None:
        """Take the interrupts that arrived: the merge is done whole."""
        import signal

        if self.main:
            while signal.sigtimedwait(self.sigs, 0) is not None:
                self.came = True

    def __exit__(self, kind: object, *exc: object) -> None:
        import signal

        if self.main and (kind is not None or not HOLD_TO_EXIT):
            # one that came while a refusal was made is delivered now
            signal.pthread_sigmask(signal.SIG_SETMASK, self.previous)


def _message(sid: str, s: reader.Summary, r: g.Receipt, how: str, co: gm.Checkout,
             source: str, snapshot: bool = False) -> str:
    """The merge commit's message (a squash's: `treework.squash_message`)."""
    if how != "squash":
        return f"Merge branch '{r.branch}'\n\n{treework.subject(s)} (subagent {sid})"
    assert co.place is not None
    return treework.squash_message(sid, s, r, co.place, source, snapshot)


def _checkout(sid: str, r: g.Receipt) -> gm.Checkout:
    """The checkout to merge into, or a refusal saying why not now."""
    try:
        co = gm.checkout(r.checkout())
    except g.GitError as exc:
        raise ZapcliError(f"{sid} not merged: git cannot read the checkout {r.repo}: "
                          f"{exc.message}") from None
    if co.branch is None:
        raise ZapcliError(f"{sid} not merged: the checkout {r.repo} is on a detached HEAD; check "
                          "out the branch to merge into first", code="detached")
    if co.busy:
        raise ZapcliError(f"{sid} not merged: the checkout {r.repo} is in the middle of {co.busy}; "
                          "finish or abort it first", code="busy")
    return co


def _on_branch(sid: str, work: treework.Work) -> None:
    r = work.receipt
    if work.snap is not None and not work.snap.on_branch:
        raise ZapcliError(f"{sid} not merged: its tree {r.path} is not on its branch {r.branch} "
                          f"(something checked out another); check out {r.branch} there, or "
                          "merge by hand", code="off_branch")


def merge(sid: str, *, squash: bool = False, rebase: bool = False,
          allow_control: Allow = False) -> MergeResult:
    """Merge the work of finished subagent `sid` (outcome `up_to_date`,
    nothing changed, when the branch already has it). Raises ZapcliError
    (nothing changed) when it cannot, or when it changes control files that
    `allow_control` does not allow."""
    how = how_of(squash, rebase)
    sid, s, r = treework.receipt(sid)
    early = (_Early(lambda: _work(sid, r, s))  # finished: its tree is ours to refresh
             if s.final is not None and not s.continued_by else None)
    mergeable(sid, r, s)
    with _locked(r):  # while `early` reads the tree: the checkout, and the merge of its branch
        co, recovered = _recover(sid, r, _checkout(sid, r))
        guess = _guess(sid, s, r, how, co) if early is not None else None
        work = early.result() if early is not None else _work(sid, r, s)
        said, finished = (recovered.said, recovered.finished) if recovered else (None, None)
        if finished is not None and finished[0].get("sid") == sid and finished[2] == co.head:
            return _finish_earlier(sid, work, co, finished, str(said))
        return _merge_locked(sid, how, work, co, said, guess, allow_control)


def _finish_earlier(sid: str, work: treework.Work, co: gm.Checkout,
                    finished: tuple[dict[str, str], str, str], said: str) -> MergeResult:
    """This very merge, stopped once git had moved the branch (before it was
    recorded): it is merged — recorded now, as it would have been then."""
    from zapcli.worktrees import move

    owner, old, new = finished
    assert co.place is not None
    files = move.changes(co.place, old, new)[0]
    plan = gm.Plan(owner.get("how") or "merge", new)
    return _record(sid, work, replace(co, head=old), plan, files, {}, [], said)


class _Early(threading.Thread):
    """What is worked out in a thread of its own while the rest is checked,
    not after: the work of a finished subagent (a full scan of its tree: as
    long as git's own merge takes in a big repository), and what `_decide`
    asks git besides the merge."""

    def __init__(self, make: Callable[[], Any]):
        super().__init__(name="merge-early", daemon=True)
        self.make = make
        self.value: Any = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.value = self.make()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            self.error = exc

    def result(self) -> Any:
        self.join()
        if self.error is not None:
            raise self.error
        return self.value


def _work(sid: str, r: g.Receipt, s: reader.Summary) -> treework.Work:
    """The work of `sid`, once the objects its sandbox wrote are in the
    repository, verified (`zapcli.worktrees.objects`): nothing of the tree's
    enters the checkout through an object only its own folder held."""
    from zapcli.worktrees.objects import bring_in

    try:
        bring_in(r)
    except (g.GitError, OSError) as exc:
        raise ZapcliError(f"{sid} not merged: the objects its sandbox wrote could not be brought "
                          f"into the repository: {getattr(exc, 'message', exc)}") from None
    return treework.of(sid, refresh=True, known=(s, r))


def _recover(sid: str, r: g.Receipt, co: gm.Checkout) -> tuple[gm.Checkout, Recovered | None]:
    """Put right an earlier merge into the checkout that was stopped halfway
    (`zapcli.worktrees.move`): the checkout as it is after, and what was done."""
    from zapcli.worktrees import move

    assert co.place is not None
    try:
        recovered = move.recover(co.place)
    except move.Busy as exc:
        raise ZapcliError(f"{sid} not merged: {exc}", code="busy") from None
    except g.GitError as exc:
        raise ZapcliError(f"{sid} not merged: an earlier merge into {r.repo} was stopped "
                          f"halfway, and putting it right failed: {exc.message}") from None
    return (_checkout(sid, r) if recovered else co), recovered


@plain
class _Decided:
    """A merge of `source` worked out in the object store, nothing moved yet."""

    source: str
    plan: gm.Plan
    result: str  # what the checkout's files will be: the plan's commit (rebase: the merged tree)
    files: list[str]  # the paths that change in the checkout
    diff: dict[str, list[str]]  # the same, by kind (the journal's)
    note: dict[str, Any]
    controlled: list[str]  # those that are control files (`control_changes`)


Guess = tuple[str, "_Decided | gm.Refused | g.GitError"]


def _decide(sid: str, s: reader.Summary, r: g.Receipt, how: str, co: gm.Checkout,
            source: str, snapshot: bool = False) -> _Decided:
    """The merge of `source` (the work's commit), decided. Raises gm.Refused
    (a conflict, nothing to merge) or GitError."""
    from zapcli.worktrees import move

    at = co.place
    assert at is not None
    moved = co.head != r.base
    # asked of git meanwhile, each its own process: the names the checkout's own repository
    # adds (its hooks folder, included config, the programs its git settings run), and how
    # HEAD and the work descend from the base
    names = _Early(lambda: control.of_root(co.repo, control_names()))
    descent = _Early(lambda: gm.ancestry(at, r.base, co.head, source)) if moved else None
    merged = gm.merge_tree(at, co.head, source) if moved else None
    known = descent.result() if descent is not None else None
    note = stale.note(r, None, co, known.since_base if known else None)
    if merged is not None:
        note.update(merges_cleanly=merged[0] is not None, conflicts=merged[1])
    plan = gm.plan(co, source, how, _message(sid, s, r, how, co, source, snapshot), moved=moved,
                   merged=merged, known=known)
    result = str(merged[0]) if how == "rebase" and merged else plan.commit
    files, diff = move.changes(at, co.head, result)
    # the names the checkout's own repository adds too: held in the tree, committed through
    # the index
    return _Decided(source, plan, result, files, diff, note, control_changes(files, names.result()))


def _guess(sid: str, s: reader.Summary, r: g.Receipt, how: str, co: gm.Checkout) -> Guess | None:
    """The merge decided for the tip of the tree's branch — what the work is
    when nothing is uncommitted — while the tree's status is read (the
    control files it changes found meanwhile too); used only
    if the work turns out to be that very commit (the tip is read from its
    ref file: git's answer is the status's). Not for a sandboxed tree
    (its objects are verified first: `_work`) nor a rebase (it works in the tree)."""
    from zapcli.worktrees.place import loose_ref

    if how == "rebase" or co.place is None or co.place.objects:
        return None
    tip = loose_ref(co.place.common_dir, f"refs/heads/{r.branch}")  # no git process: a guess
    if not tip:
        return None
    try:
        return tip, _decide(sid, s, r, how, co, tip)
    except (gm.Refused, g.GitError) as exc:
        return tip, exc


def _merge_locked(sid: str, how: str, work: treework.Work, co: gm.Checkout,
                  recovered: str | None, guess: Guess | None,
                  allow_control: Allow = False) -> MergeResult:
    r = work.receipt
    _on_branch(sid, work)
    source = work.commit
    assert source is not None
    if how == "rebase" and not work.tree_exists:
        raise ZapcliError(f"{sid} not merged: --rebase replays its branch in its tree, and its "
                          f"tree {r.path} is gone; merge or squash instead", code="no_tree")
    return _move(sid, how, work, co, recovered, allow_control,
                 guess[1] if guess is not None and guess[0] == source else None)


def _move(sid: str, how: str, work: treework.Work, co: gm.Checkout, recovered: str | None,
          allow_control: Allow, decided: _Decided | gm.Refused | g.GitError | None) -> MergeResult:
    r = work.receipt
    source = work.commit
    assert source is not None
    try:
        if decided is None:
            decided = _decide(sid, work.summary, r, how, co, source,
                              bool(work.snap and work.snap.uncommitted))
        if not isinstance(decided, _Decided):
            raise decided  # the same refusal as deciding now would give
        d = decided
        plan, files, controlled = d.plan, d.files, d.controlled
        if controlled and not (allow_control if isinstance(allow_control, bool)
                               else allow_control(controlled)):
            raise _refuse_control(sid, controlled, asked=not isinstance(allow_control, bool))
        if how == "rebase":
            gm.in_the_way(co, d.result)
            _keep(work)
            plan.commit = gm.rebase_in_tree(r.tree(), co.head)
    except gm.Refused as exc:
        if exc.code == "up_to_date":
            return _up_to_date(sid, how, work, co, recovered)
        hint = gm.by_hand(r, work.snap is not None and work.snap.uncommitted) \
            if exc.code == "conflict" else ""
        raise _refused(sid, exc, recovered, hint) from None
    except g.GitError as exc:
        raise ZapcliError(f"{sid} not merged: {exc.message}") from None
    with _Held() as held:  # from here on the merge is finished whole, then recorded
        try:  # git refuses, changing nothing, if a change is in the way
            gm.fast_forward(co, plan.commit, d.diff if d.result == plan.commit else None,
                            {"sid": sid, "how": plan.how})
        except gm.Refused as exc:
            raise _refused(sid, exc, recovered) from None
        except g.GitError as exc:
            raise ZapcliError(f"{sid} not merged: {exc.message}") from None
        res = _record(sid, work, co, plan, files, d.note, controlled, recovered)
        held.take()
    res.interrupted = held.came
    return res


def _record(sid: str, work: treework.Work, co: gm.Checkout, plan: gm.Plan, files: list[str],
            note: dict[str, Any], controlled: list[str], recovered: str | None) -> MergeResult:
    """The checkout has moved: the branch made to hold all that was merged,
    and a `merged` record in the trail."""
    r, how, at = work.receipt, plan.how, co.place
    assert at is not None
    warning = None
    if how != "rebase":
        warning = _keep(work, after=True)  # the branch holds all that was merged
    if how == "rebase":  # its commits replayed: the same files, asked again to be sure
        try:
            files = gm.touched(at, co.head, plan.commit)
        except g.GitError:
            pass
    source = work.commit
    committed = bool(work.snap and work.snap.uncommitted and warning is None)
    tip = plan.commit if how == "rebase" else source if committed or not work.snap else work.snap.head
    res = MergeResult(sid, plan.how, r.repo, str(co.branch), plan.commit, co.head, r.branch,
                      files, committed, note, warning, controlled, recovered)
    store.append(store.path_for(sid), "merged", {
        "how": plan.how, "repo": r.repo, "into": co.branch, "commit": plan.commit,
        "previous": co.head, "tip": tip, "files": len(files), "committed_work": committed,
        **({"control_files": controlled[:50]} if controlled else {})},
        sync=False)  # a hint for worktree rm: lost in a crash, a squashed branch is only kept
    return res


def _keep(work: treework.Work, *, after: bool = False) -> str | None:
    """Commit the tree's uncommitted work on its branch (the snapshot). After
    the checkout has moved, a failure is a warning (the work is merged, and
    still in the tree), not a refusal."""
    if work.snap is None or not work.snap.uncommitted:
        return None
    try:
        keep(work.receipt.tree(), work.receipt.branch, work.snap)
    except g.GitError as exc:
        if not after:
            raise
        return (f"its uncommitted work is merged, but could not be committed on its branch "
                f"({exc.message}); it is still in its tree")
    return None
