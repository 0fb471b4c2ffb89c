"""`make test`'s second look at what failed: a test of real processes,
servers and clusters on a shared 2-core machine can lose a race once in
many runs. When a run fails on at most `MOST` tests, each is run again,
alone and without workers; the run passes only if every one passes then,
and the failures stay in the log above with a FLAKY block naming them (so
they reach the people who fix them). More failures than that, or a run that
failed before it could say what failed, is a break: nothing runs again.
CPython's test runner does the same (`regrtest --rerun`).

Usage: python tests/again.py FAILED_LIST [pytest options...]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MOST = 3


def main(argv: list[str]) -> int:
    listed, opts = Path(argv[0]), argv[1:]
    try:
        failed = [line for line in listed.read_text(encoding="utf-8").splitlines() if line.strip()]
    except FileNotFoundError:
        print(f"again: pytest said nothing of what failed ({listed} missing): not run again")
        return 1
    if not failed:
        print("again: pytest failed without a failing test (collection, an internal error): not run again")
        return 1
    if len(failed) > MOST:
        print(f"again: {len(failed)} tests failed, more than {MOST}: a break, not a flake; not run again")
        return 1
    print(f"\nagain: {len(failed)} test(s) failed; each runs again alone, to tell a lost race from a break:")
    for nodeid in failed:
        print(f"  {nodeid}")
    env = {k: v for k, v in os.environ.items() if k != "ZAPCLI_TESTS_FAILED"}
    res = subprocess.run([sys.executable, "-m", "pytest", "--no-header", "-p", "no:xdist", *opts, *failed],
                         env=env, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        print("again: failed again: a break")
        return res.returncode
    print("\n" + "=" * 30 + " FLAKY " + "=" * 30)
    for nodeid in failed:
        print(f"FLAKY (failed, then passed alone): {nodeid}")
    print("=" * 67)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
