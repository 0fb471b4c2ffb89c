"""A FIFO or a socket planted in the state folder in place of a trail, of an
`.out` or of an `.err` (#12.2, docs/explanation/rules.md#ids-and-sessions): no reader hangs on it and each
answers — `list --all`, `gc`, `poll`, `kill`, `output`, `replay` — while the
other subagents' answers stay right."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TIMEOUT = 20  # a hang fails the test (subprocess.TimeoutExpired), it never blocks the suite


@contextmanager
def _planted(path: Path, kind: str) -> Iterator[None]:
    """Replace `path` by a FIFO or a bound unix socket for the block."""
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path, 0o600)
        yield
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    short = tempfile.mkdtemp()  # a socket path is limited to ~108 bytes: bind here, then move
    try:
        sock.bind(os.path.join(short, "s"))
        os.rename(os.path.join(short, "s"), path)
        yield
    finally:
        sock.close()
        os.rmdir(short)


def _answers(zap, *args: str) -> str:
    res = zap(*args, timeout=TIMEOUT)
    assert "Traceback" not in res.err, (args, res.err)
    assert res.returncode in (0, 1), (args, res.returncode, res.out, res.err)
    assert (res.out + res.err).strip(), (args, "no answer at all")
    return res.out + res.err


@pytest.mark.timeout(240)
@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_no_reader_hangs_on_a_fifo_or_socket_in_the_store(zap, kind):
    good = zap.spawn_sh("echo good; echo ge >&2")
    trail_id = zap.spawn_sh("echo t; echo te >&2")
    out_id = zap.spawn_sh("echo o; echo oe >&2")
    err_id = zap.spawn_sh("echo e; echo ee >&2")
    assert zap("wait", good, trail_id, out_id, err_id, timeout=60).returncode == 0
    every = (good, trail_id, out_id, err_id)
    with _planted(zap.trail(trail_id), kind), \
            _planted(zap.trail(out_id).with_suffix(".out"), kind), \
            _planted(zap.trail(err_id).with_suffix(".err"), kind):
        listing = _answers(zap, "list", "--all", "--long")
        assert f"{good}: completed" in listing
        _answers(zap, "gc", "--dry-run")
        polled = _answers(zap, "poll", "--no-wait", *every)
        assert f"{good}: completed" in polled
        assert f"{out_id}: completed" in polled and f"{err_id}: completed" in polled
        assert f"{trail_id}: completed" not in polled  # its trail is not a file: it is not read
        assert polled.count("not a regular file") == 2  # the trail's id, and out_id's output
        for sid, args in ((trail_id, ()), (out_id, ()), (err_id, ("--stderr",))):
            assert "not a regular file" in zap("output", *args, sid, timeout=TIMEOUT).err
        for sid in every:
            _answers(zap, "output", sid)
            _answers(zap, "output", "--stderr", sid)
            _answers(zap, "replay", sid)
        assert zap("output", good, timeout=TIMEOUT).out == "good\n"
        assert zap("output", "--stderr", out_id, timeout=TIMEOUT).out == "oe\n"
        assert zap("output", err_id, timeout=TIMEOUT).out == "e\n"
        assert "echo t" not in zap("replay", trail_id, timeout=TIMEOUT).out
        killed = _answers(zap, "kill", *every)
        assert f"{good}: already completed" in killed
        _answers(zap, "list", "--all")
        _answers(zap, "gc")
        assert zap("output", good, timeout=TIMEOUT).out == "good\n"
