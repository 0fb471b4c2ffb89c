"""Folding: 2 KB head and tail, cut on UTF-8 boundaries, invalid bytes replaced."""

from __future__ import annotations

from zapcli.ops.fold import FOLD_BYTES, fold_file


def test_small_output_is_not_folded(tmp_path):
    p = tmp_path / "o"
    p.write_bytes(b"hello\n")
    f = fold_file(p, 6)
    assert (f.head, f.tail, f.folded_bytes, f.truncated) == ("hello\n", "", 0, False)


def test_multibyte_cuts_never_split_a_character(tmp_path):
    p = tmp_path / "o"
    data = ("x" + "€" * 3000).encode()
    p.write_bytes(data)
    f = fold_file(p, len(data))
    assert "\ufffd" not in f.head + f.tail
    assert len(f.head.encode()) <= FOLD_BYTES and len(f.tail.encode()) <= FOLD_BYTES
    assert len(f.head.encode()) + len(f.tail.encode()) + f.folded_bytes == len(data)


def test_torn_character_at_the_cap_is_dropped(tmp_path):
    p = tmp_path / "o"
    data = ("ab" + "😀" * 300000).encode()[: 1024 * 1024]  # the 1 MB cut lands mid-emoji
    p.write_bytes(data)
    f = fold_file(p, 1_200_002)
    assert "\ufffd" not in f.head + f.tail
    assert f.truncated and f.written == 1_200_002


def test_invalid_bytes_are_replaced_not_fatal(tmp_path):
    p = tmp_path / "o"
    p.write_bytes(b"before\xff\xfe\x00\x80after\n")
    f = fold_file(p)
    assert f.head.startswith("before") and "after" in f.head


def test_missing_file_is_empty(tmp_path):
    assert fold_file(tmp_path / "none").head == ""
