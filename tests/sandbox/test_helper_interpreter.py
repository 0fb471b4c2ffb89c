"""The sandbox's helper (`zapcli.sandbox.inner`, its pid 1) starts from
zapcli's own interpreter wherever that lies — a new user's finding: with
zapcli in a virtual environment under /tmp, a built-in agent whose
definition has a `sandbox:` block (the network off) could run no command
(`bwrap: execvp /tmp/…/venv/bin/python3: No such file or directory`): /tmp
is hidden with the network off (its sockets), the interpreter's real file
was kept in view, but the helper was started by the venv's link to it.
Real bubblewrap, a real link."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.sandbox.conftest import FOUND, needs_bwrap
from zapcli.sandbox.session import Sandbox

pytestmark = needs_bwrap


def test_a_helper_whose_interpreter_is_a_link_in_a_hidden_folder_starts(box):
    b = box()  # the network off: /tmp is hidden but for the workspace
    venv = Path(tempfile.mkdtemp(prefix="zapcli-venv-", dir="/tmp"))
    try:
        (venv / "bin").mkdir()
        python = venv / "bin" / "python3"
        python.symlink_to(os.path.realpath(sys.executable))
        sandbox = Sandbox(b.policy, FOUND.program, python=str(python))
        out = b.tmp / "out"
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            proc = sandbox.run(["sh", "-c", "echo ran"], str(b.ws), {"PATH": os.environ["PATH"]}, fd)
            assert proc.wait(30) == 0
        finally:
            os.close(fd)
            sandbox.close()
        assert out.read_text() == "ran\n"
    finally:
        python.unlink(missing_ok=True)
        (venv / "bin").rmdir()
        venv.rmdir()
