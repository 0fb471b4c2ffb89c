"""What `zapcli/sandbox/relay.py run -- CMD` hands the program it execs (an
agent CLI in its whole-program sandbox): the signals a program starts with,
not Python's. Python ignores SIGPIPE (and SIGXFSZ), and an ignored signal
stays ignored across exec: before, `yes | head -1` under it printed "yes:
standard output: Broken pipe" and every pipeline's writer lived on."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import zapcli.sandbox

RELAY = Path(zapcli.sandbox.__file__).with_name("relay.py")


def test_the_program_it_execs_starts_with_sigpipe_and_sigxfsz_at_their_defaults(tmp_path):
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as fout, err.open("w") as ferr:
        # its listener child waits for the sandbox's end, which outside one never comes
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(RELAY), "run", "--", "sh", "-c",
             "yes | head -1 >/dev/null; grep SigIgn /proc/self/status"],
            stdout=fout, stderr=ferr, start_new_session=True)
        try:
            assert proc.wait(timeout=30) == 0
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    assert err.read_text() == "", err.read_text()
    ignored = int(out.read_text().split()[-1], 16)
    assert not ignored & (1 << (13 - 1)) and not ignored & (1 << (25 - 1)), out.read_text()  # PIPE, XFSZ
