"""A `--worktree` agent and the repository's shared object store, tested as
an attacker would: real git, real bubblewrap, a real sandboxed `--cli sh`.

The store holds the user's history too, and git never re-hashes a loose
object when it checks a file out: an agent that could replace the blob of
`run.sh` on the user's branch would have the user's next `git checkout --
run.sh` (or `reset --hard`, a stash, a clone) write the agent's content with
no merge, no diff and no approval. So an agent may add objects, and never
change or remove one the repository already had: loose or packed. Won when
the user's checkout holds the agent's content, a file appears in `outside`,
or an object of the repository is gone or different.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.redteam.actors import Actor
from tests.redteam.harness import Keys, as_root, needs_setpriv
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap

# run in the tree by the sandboxed agent: overwrite the blob of run.sh (loose),
# then every pack file and every other object it can reach, and remove what it can
TAMPER = r"""
import glob, os, subprocess, zlib
h = subprocess.run(["git", "rev-parse", "HEAD:run.sh"], capture_output=True, text=True).stdout.strip()
common = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
                        capture_output=True, text=True).stdout.strip()
data = b"id > {OUT}/OBJ\n"
fake = zlib.compress(b"blob %d\0" % len(data) + data)
def attempt(what, act):
    try:
        act()
        print("done:", what)
    except OSError as exc:
        print("refused:", what, exc)
def put(f):
    os.makedirs(os.path.dirname(f), exist_ok=True)
    open(f + ".new", "wb").write(fake)
    os.replace(f + ".new", f)
# every folder the store can be seen through, and every object and pack found there
for objects in {os.path.join(common, "objects"), *glob.glob(common + "/objects/*/")}:
    for f in {os.path.join(objects, h[:2], h[2:]), *glob.glob(objects + "/??/*")}:
        attempt("write " + f, lambda f=f: put(f))
    for f in glob.glob(objects + "/pack/*"):
        attempt("write " + f, lambda f=f: open(f, "r+b").write(b"PACK"))
        attempt("remove " + f, lambda f=f: os.unlink(f))
    attempt("alternates in " + objects,
            lambda o=objects: open(os.path.join(o, "info", "alternates"), "w").write("/\n"))
"""


def _git(actor: Actor, *args: str) -> subprocess.CompletedProcess:
    return actor.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", *args])


def _objects(actor: Actor) -> dict[str, str]:
    """Every object of the repository and its content, as git reads them."""
    names = _git(actor, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").stdout.split()
    return {n: _git(actor, "cat-file", "-p", n).stdout for n in names}


def _attack(actor: Actor, outside: Path, packed: bool) -> None:
    w = actor.work
    _git(actor, "init", "-q")
    for name, text in (("run.sh", "echo safe\n"), ("other.txt", "two\n")):
        (w / name).write_text(text)
        actor.own(w / name)
    _git(actor, "add", "-A")
    _git(actor, "commit", "-qm", "one")
    (w / "later.txt").write_text("loose\n")
    actor.own(w / "later.txt")
    _git(actor, "add", "-A")
    _git(actor, "commit", "-qm", "two")
    if packed:
        _git(actor, "repack", "-adq")  # every object in a pack, none loose
    before = _objects(actor)
    code = TAMPER.replace("{OUT}", str(outside))
    sid = actor.spawn("--worktree", "--cli", "sh", "--sandbox", "--",
                      f"python3 - <<'PYEOF'\n{code}\nPYEOF\n"
                      "echo agent > made.txt && git add made.txt && "
                      "git -c user.name=a -c user.email=a@a commit -qm agent && echo committed")
    actor.wait(sid)
    said = actor("output", sid).out + actor("output", "--stderr", sid).out
    (w / "run.sh").write_text("echo my local edit\n")
    _git(actor, "checkout", "--", "run.sh")  # the user discards a local edit
    actor.run(["sh", "run.sh"])  # and runs their script
    assert (w / "run.sh").read_text() == "echo safe\n", f"the user's branch holds agent content: {said}"
    assert not (outside / "OBJ").exists()
    after = _objects(actor)
    assert {n: after.get(n) for n in before} == before, "an object of the repository changed or went"
    fsck = _git(actor, "fsck", "--full", "--no-dangling")
    assert fsck.returncode == 0, fsck.stderr
    # adding is allowed: the agent's commit is on its branch, whole, in the repository's store
    assert "committed" in said, said
    assert _git(actor, "show", f"zapcli/{sid}:made.txt").stdout == "agent\n"
    merged = actor("merge", sid)
    assert merged.returncode == 0, merged.err
    assert (w / "made.txt").read_text() == "agent\n" and (w / "run.sh").read_text() == "echo safe\n"


def test_a_worktree_agent_cannot_rewrite_a_loose_object_of_the_repository(zap, outside):
    _attack(Actor.root(zap), outside, packed=False)


def test_a_worktree_agent_cannot_rewrite_or_remove_a_pack_of_the_repository(zap, outside):
    _attack(Actor.root(zap), outside, packed=True)


@as_root
@needs_setpriv
def test_the_same_as_another_local_user(other_user, listener):
    """From a sandbox without root (a user namespace): the store stays the user's."""
    actor = Actor.user(other_user(Keys(), listener.url))
    _attack(actor, actor.outside(), packed=False)
