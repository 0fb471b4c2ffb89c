"""`zapcli list --watch` as a person runs it: on a terminal (a pty), until
Ctrl-C. `list_watch(zap)` runs one for the length of a `with` block, its
screen drained (and kept in `screen`) so it never blocks on a full pty."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Screen:
    def __init__(self) -> None:
        self.data = bytearray()

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


@contextmanager
def list_watch(zap, *args: str, env: dict[str, str] | None = None) -> Iterator[Screen]:
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "list", "--watch", *args],
                            env={**zap.env, "COLUMNS": "160", "LINES": "60", **(env or {})},
                            cwd=zap.cwd, stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    screen = Screen()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            screen.data += chunk

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        yield screen
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        reader.join(timeout=5)
        os.close(master)
