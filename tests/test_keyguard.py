"""`zapcli.keyguard.seal` (docs/explanation/rules.md#sandbox): a process started with keys in its
environment keeps none in the block /proc/<pid>/environ shows, stays
readable there otherwise (the subagent marker after a key is still found),
keeps the keys for itself and its children, and is non-dumpable."""

from __future__ import annotations

import subprocess
import sys

import psutil

from tests.conftest import REPO

CHILD = """
import ctypes, os, subprocess, sys
from zapcli import keyguard
keyguard.seal()
print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0), flush=True)  # PR_GET_DUMPABLE
print(os.environ["MY_TOKEN"], subprocess.run(["sh", "-c", "echo $MY_TOKEN"], capture_output=True,
      text=True).stdout.strip(), flush=True)
sys.stdin.read()
"""


def test_a_sealed_process_shows_no_key_and_keeps_it():
    key = "sk-keyguard-0123456789abcdef"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "BEFORE": "1", "MY_TOKEN": key,
           "ZAPCLI_SUBAGENT_ID": "sa_20260101_0123abcd", "AFTER": "2"}
    proc = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        dumpable = proc.stdout.readline().strip()  # type: ignore[union-attr]
        own, child = proc.stdout.readline().split()  # type: ignore[union-attr]
        block = open(f"/proc/{proc.pid}/environ", "rb").read()  # noqa: SIM115 - read once
        seen = psutil.Process(proc.pid).environ()
    finally:
        proc.kill()
        proc.wait()
    assert dumpable == "0"
    assert own == key and child == key  # its own copy, and what its children inherit
    assert key.encode() not in block and b"MY_TOKEN=" + b"*" * len(key) in block
    assert seen["ZAPCLI_SUBAGENT_ID"] == "sa_20260101_0123abcd" and seen["AFTER"] == "2"
