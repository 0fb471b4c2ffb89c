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
