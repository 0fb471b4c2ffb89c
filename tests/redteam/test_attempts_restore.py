"""The `attempts` check's tree put back as it was never touches a file
outside the tree.

The check runs sandboxed; the person's own zapcli then puts the tree back
(`zapcli.worktrees.untouched`), unsandboxed. A check that runs the
attempt's own script (an agent wrote it) may leave links where the
attempt's files and folders were, and a folder it cannot be removed from
(read-only, for a user without root): the restore could not unlink the
links, and then set the modes it had noted — the attempt's choice, setuid
and world-writable — through them, on the person's `~/.bashrc` and
`~/.ssh` (an adversary's review). The outside effect: the modes of those
files after the check. Real git, real bubblewrap, as root and as another
local user.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.redteam.actors import Actor
from tests.redteam.harness import Keys, as_root, needs_setpriv
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]


def _attack(actor: Actor, victim: Path) -> None:
    bashrc, ssh = victim / ".bashrc", victim / ".ssh"
    bashrc.write_text("echo hi\n")
    ssh.mkdir()
    os.chmod(bashrc, 0o644)
    os.chmod(ssh, 0o700)
    actor.own(victim)
    for args in (["init", "-q", "-b", "main"], ["-c", "user.name=u", "-c", "user.email=u@x",
                                               "commit", "-q", "--allow-empty", "-m", "one"]):
        assert actor.run(["git", *args]).returncode == 0
    # the attempt (an agent): a folder with a file and a folder whose modes it chose, and the
    # script the person's check will run
    task = ("mkdir -p a/d && echo x > a/q && chmod 4777 a/q && chmod 0777 a/d && "
            "printf '%s\\n' 'chmod u+w a' 'rm -f a/q' "
            f"'ln -s {bashrc} a/q' 'rmdir a/d' 'ln -s {ssh} a/d' 'chmod 0555 a' "
            "'echo tests pass' > test.sh")
    sid = actor.spawn("--cli", "sh", "--attempts", "1", "--sandbox", "--", task)
    assert actor.wait(sid) == "completed"
    checked = actor("attempts", sid, "--check", "sh test.sh")
    modes = {p.name: oct(stat.S_IMODE(os.stat(p).st_mode)) for p in (bashrc, ssh)}
    assert modes == {".bashrc": "0o644", ".ssh": "0o700"}, checked.out + checked.err
    assert "check: passed" in checked.out, checked.out + checked.err


def test_a_checks_links_never_carry_the_restore_outside(zap, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    _attack(Actor.root(zap), victim)


@as_root
@needs_setpriv
def test_the_same_as_another_local_user(other_user, listener):
    """Without root a read-only folder stops an unlink: the restore went on."""
    actor = Actor.user(other_user(Keys(), listener.url))
    victim = actor.work.parent / "victim"
    victim.mkdir()
    _attack(actor, victim)
