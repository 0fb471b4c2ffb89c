"""CappedFile on a disk that refuses writes: counts what was written and what
was kept truthfully, and never leaves a gap by resuming later."""

from __future__ import annotations

import os

from zapcli.ops.fold import Folded
from zapcli.render.common import folded_lines
from zapcli.supervisor.capture import CappedFile


def test_a_full_disk_is_counted_not_claimed(tmp_path):
    fd = os.open("/dev/full", os.O_WRONLY)
    capped = CappedFile(fd, [])
    capped.write(b"first\n")
    capped.write(b"second\n")
    assert (capped.written, capped.kept, capped.write_failed) == (13, 0, True)
    capped.close()


def test_incomplete_output_is_not_called_truncated_at_1_mb():
    lines = [text for _style, text in folded_lines(Folded("abc", "", 0, 200_000, 208_902))]
    assert lines[0] == ("  OUTPUT INCOMPLETE (208902 bytes written, 200000 kept: writing the "
                        "output file failed, e.g. a full disk)")
    capped = [text for _style, text in folded_lines(Folded("abc", "", 0, 1024 * 1024, 2_000_000))]
    assert capped[0] == "  OUTPUT TRUNCATED (2000000 bytes written, 1 MB kept)"


def test_only_a_possible_secret_start_is_held_and_idle_releases_it(tmp_path):
    """#14.1: a 21-byte key used to hold back 20 bytes of every write."""
    import time

    from zapcli.supervisor.capture import IDLE_RELEASE_S, CappedFile

    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    key = b"sk-abcdefghijklmnopqr"
    sink = CappedFile(fd, [key])
    sink.write(b"tick1 1\n")
    assert path.read_bytes() == b"tick1 1\n"  # nothing in it starts a secret: out at once
    sink.write(b"calling with sk-abc")
    assert path.read_bytes() == b"tick1 1\ncalling with "  # the start of the key waits...
    sink.write(b"defghijklmnopqr done\nwaiting sk")
    assert path.read_bytes() == b"tick1 1\ncalling with *** done\nwaiting "  # ...and is masked whole
    time.sleep(IDLE_RELEASE_S + 0.4)
    assert path.read_bytes().endswith(b"waiting sk")  # an idle subagent's last bytes appear
    sink.close()
