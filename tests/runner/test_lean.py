"""`zapcli.runner.lean`: a runner imports pathlib without urllib.parse, and
both still work. Run in a fresh interpreter without `site` (`-S`): the
editable install's import hook, which `site` runs, imports pathlib itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import sys
import zapcli.runner, pathlib
before = sorted(m for m in ("urllib.parse", "ipaddress") if m in sys.modules)
uri = pathlib.Path("/a b/c").as_uri()
import urllib, urllib.parse
print(before, uri, urllib.parse.quote("x y"), urllib.parse.urlsplit("http://h:1/p").port,
      urllib.parse is sys.modules["urllib.parse"], urllib.parse.quote_from_bytes.__module__)
"""


def test_a_runner_imports_pathlib_without_urllib_parse_and_both_still_work():
    out = subprocess.run([sys.executable, "-S", "-c", PROBE], env={"PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "file:///a%20b/c", "x%20y", "1", "True", "urllib.parse"]


def test_a_process_that_has_pathlib_already_is_left_as_it_is():
    out = subprocess.run([sys.executable, "-S", "-c", "import sys, urllib.parse; real = "
                          "sys.modules['urllib.parse']; import zapcli.runner, pathlib; "
                          "print(pathlib.urlquote_from_bytes is real.quote_from_bytes)"],
                         env={"PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
