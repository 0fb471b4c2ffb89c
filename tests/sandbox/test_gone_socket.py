"""A listening socket that goes away between the look at the host's sockets
and bwrap's mount over it (`zapcli.sandbox.sockets`: with the network off,
each one outside the hidden folders is covered with /dev/null). The start
is made again with a fresh look — but bubblewrap 0.8 names the path it could
not mount over as `/newroot/PATH` (or `at PATH`), and only the second form
was recognized: under a full run, another test's socket going away failed a
sandbox start ("the sandbox could not be set up … /newroot/…: Unable to
mount source on destination"). Real bubblewrap, a real socket made and
removed in a loop by a thread."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import pytest

from tests.sandbox.conftest import needs_bwrap
from zapcli.sandbox.bwrap import covered, on_a_gone_socket

pytestmark = needs_bwrap


def _churn(path: str, stop: threading.Event) -> None:
    while not stop.is_set():
        s = socket.socket(socket.AF_UNIX)
        with contextlib.suppress(OSError):
            s.bind(path)
            s.listen(1)
        s.close()
        with contextlib.suppress(OSError):
            os.unlink(path)


@pytest.mark.alone  # its churning socket is covered by every other sandbox starting meanwhile
def test_a_start_over_a_socket_that_went_away_is_made_again(box):
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="zapcli-gone-"))  # not a hidden folder
    stop = threading.Event()
    thread = threading.Thread(target=_churn, args=(str(folder / "s.sock"), stop), daemon=True)
    thread.start()
    failed: list[str] = []
    try:
        for _ in range(25):
            b = box()
            out = folder / "out"
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                proc = b.sandbox.run(["sh", "-c", "echo ran"], str(b.ws), {"PATH": os.environ["PATH"]}, fd)
                proc.wait(30)
            except OSError as exc:
                failed.append(str(exc))
            finally:
                os.close(fd)
                b.close()
    finally:
        stop.set()
        thread.join()
        shutil.rmtree(folder, ignore_errors=True)
    assert not failed, f"{len(failed)} of 25 starts failed: {failed[:2]}"


def test_each_way_bubblewrap_names_a_gone_path_is_known():
    """bubblewrap 0.8's words for a path that went away, as it printed them
    here (the race above, run by hand), for the socket a line covers."""
    line = ["bwrap", "--ro-bind", "/dev/null", "/var/s.sock", "--", "true"]
    assert covered(line) == ["/var/s.sock"]
    for said in ("bwrap: Can't bind mount /oldroot/dev/null on /newroot/var/s.sock: Unable to "
                 "mount source on destination: No such file or directory",
                 "bwrap: Can't create file at /var/s.sock: No such device or address",
                 'bwrap: Can\'t bind mount /oldroot/dev/null on /newroot/var/s.sock: Unable to '
                 'remount destination "/newroot/var/s.sock" with correct flags: Invalid argument'):
        assert on_a_gone_socket(line, f"bubblewrap said: {said}"), said
    assert not on_a_gone_socket(line, "bwrap: Can't create file at /var/s.sock2: Read-only")
