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


def _numbered(n: int) -> bytes:
    return b"".join(b"line %07d of the build log\n" % i for i in range(n))


def test_past_the_cap_the_first_and_last_parts_are_kept_whole_lines_and_one_marker(tmp_path):
    """Issue 28 item 5: the end of a big output is kept (on main only the
    first 1 MB was, and a build's summary line was lost)."""
    from zapcli.results import CAP_BYTES

    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sink = CappedFile(fd, [])
    data = _numbered(600_000)  # ~16 MB
    for at in range(0, len(data), 7001):  # writes that cut lines anywhere
        sink.write(data[at:at + 7001])
    sink.write(b"== 1234 passed in 5.20s ==\n")
    sink.close()
    kept = path.read_bytes()
    assert len(kept) <= CAP_BYTES
    assert sink.written == len(data) + 27 and sink.truncated
    lines = kept.split(b"\n")
    assert lines[-1] == b"" and lines[-2] == b"== 1234 passed in 5.20s =="
    markers = [ln for ln in lines if not ln.startswith((b"line ", b"== "))]
    assert len(markers) == 2 and markers[1] == b"", markers  # one marker line, then the final ""
    marker = markers[0]
    assert b"bytes of output left out" in marker and b"first and last" in marker, marker
    head, tail = kept.split(marker + b"\n")
    assert head.startswith(b"line 0000000 ") and head.endswith(b"\n")
    assert 480 * 1024 <= len(head) <= 600 * 1024
    assert 400 * 1024 <= len(tail) and tail.startswith(b"line ")
    whole = set(data.split(b"\n"))
    assert all(ln in whole for ln in head.split(b"\n") + tail.split(b"\n")[:-2]), "a line cut in half"
    dropped = sink.written - len(head) - len(tail)
    assert f"{dropped:,}".encode() in marker


def test_a_line_longer_than_a_part_is_cut_on_a_character(tmp_path):
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sink = CappedFile(fd, [])
    sink.write("é".encode() * 1_500_000)  # 3 MB, one line
    sink.close()
    kept = path.read_bytes()
    head, _marker, tail = kept.partition(b"\n")[0], None, kept.split(b"\n", 2)[-1]
    head.decode("utf-8")  # strict: never half a character
    tail.decode("utf-8")
    assert len(kept) <= 1024 * 1024 and kept.count(b"\n") == 2


def test_under_the_cap_everything_is_kept_as_written(tmp_path):
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sink = CappedFile(fd, [])
    data = _numbered(30_000)  # ~810 KB
    sink.write(data)
    sink.close()
    assert path.read_bytes() == data and not sink.truncated
