"""`zapcli.lean`: a hot process (a runner, the CLI's commands) imports pathlib
without urllib.parse, re, fnmatch and ntpath, and everything pathlib does with
them still works. Run in a fresh interpreter without `site` (`-S`): the
editable install's import hook, which `site` runs, imports pathlib itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LATER = ("urllib.parse", "ipaddress", "re", "fnmatch", "ntpath")

PROBE = f"""
import sys
LATER = {LATER!r}
import zapcli.runner, pathlib
before = sorted(m for m in LATER if m in sys.modules)
uri = pathlib.Path("/a b/c").as_uri()
import urllib, urllib.parse
print(before, uri, urllib.parse.quote("x y"), urllib.parse.urlsplit("http://h:1/p").port,
      urllib.parse is sys.modules["urllib.parse"], urllib.parse.quote_from_bytes.__module__)
"""


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-S", "-c", code], env={"PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_runner_imports_pathlib_without_urllib_parse_and_both_still_work():
    assert _run(PROBE) == ["[]", "file:///a%20b/c", "x%20y", "1", "True", "urllib.parse"]


def test_glob_match_and_windows_paths_load_what_they_use_on_first_use(tmp_path):
    (tmp_path / "a.txt").touch()
    (tmp_path / "b.log").touch()
    code = (f"import sys; from zapcli import lean; lean.pathlib_alone(); import pathlib;"
            f"before = sorted(m for m in {LATER!r} if m in sys.modules);"
            f"found = sorted(p.name for p in pathlib.Path({str(tmp_path)!r}).glob('*.txt'));"
            "import re, fnmatch, ntpath;"
            "print(before, found, pathlib.PurePath('x/y.py').match('*.py'),"
            " pathlib.PureWindowsPath('C:/a/b').as_posix(), pathlib.PureWindowsPath('c:/A') == pathlib.PureWindowsPath('C:/a'),"
            " sys.modules['re'] is re and re.compile('a+').fullmatch('aa') is not None,"
            " fnmatch.fnmatch('ab', 'a*'), ntpath.join('a', 'b'),"
            " type(pathlib.re).__name__, pathlib.re.IGNORECASE is re.IGNORECASE)")
    assert _run(code) == ["[]", "['a.txt']", "True", "C:/a/b", "True", "True", "True", "a\\b",
                          "_Later", "True"]


def test_a_process_that_has_pathlib_already_is_left_as_it_is():
    out = _run("import sys, urllib.parse; real = sys.modules['urllib.parse']; import zapcli.runner, pathlib; "
               "print(pathlib.urlquote_from_bytes is real.quote_from_bytes)")
    assert out == ["True"]


def test_a_module_loaded_already_is_bound_itself():
    out = _run("import sys, re; from zapcli import lean; lean.pathlib_alone(); import pathlib; "
               "print(pathlib.re is re, type(pathlib.fnmatch).__name__)")
    assert out == ["True", "_Later"]


def test_the_commands_entry_imports_pathlib_alone(tmp_path):
    """`zapcli list` reaches pathlib through the entry's lean import: none of
    what pathlib binds for later is loaded by the time it has answered."""
    code = ("import sys, os; sys.argv = ['zapcli', 'list', '--all'];"
            "from zapcli.cli import entry; from zapcli.cli import fastpath;"
            "import zapcli.cli.output as out; out.emit_bytes = lambda data: None;"
            "from zapcli import lean; lean.pathlib_alone();"
            "assert fastpath.run(['list', '--all']) == 0;"
            f"print(sorted(m for m in {LATER + ('json',)!r} if m in sys.modules))")
    env = {"PYTHONPATH": str(REPO), "ZAPCLI_HOME": str(tmp_path / "state"),
           "ZAPCLI_CONFIG_HOME": str(tmp_path / "config"), "ZAPCLI_SESSION": "lean"}
    out = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]"]
