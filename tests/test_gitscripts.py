"""`zapcli.gitscripts` (through `zapcli.gitruns.found`): what a script a git
setting runs reads as code is held with it — Python's imports (the folder
a name is looked up in whole below the top, each spelling of it at the
top), what a shell script sources or runs, a node script's requires; a
computed import holds the script's folder whole, and at the top is
`listed` (the sandbox refuses the root). Real files, never run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zapcli.gitruns import found


def _tree(top: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text)


def _held(top: Path, value: str, key: str = "core.fsmonitor") -> list[str]:
    return sorted({os.path.relpath(p, top) for p in found(key, value, str(top)).paths})


def test_a_python_script_that_imports_holds_its_folder(tmp_path):
    _tree(tmp_path, {"tools/fsmonitor.py": "import watch\n", "tools/watch.py": "import json\n"})
    assert _held(tmp_path, "python3 tools/fsmonitor.py") == ["tools", "tools/fsmonitor.py"]


def test_a_python_script_that_imports_only_builtins_holds_itself(tmp_path):
    _tree(tmp_path, {"tools/fsmonitor.py": "import sys\nsys.exit(1)\n"})
    assert _held(tmp_path, "python3 tools/fsmonitor.py") == ["tools/fsmonitor.py"]


def test_at_the_top_each_spelling_of_an_imported_name_is_held(tmp_path):
    _tree(tmp_path, {"fsmon.py": "import os, sys, watch\nfrom lib import x\n", "watch.py": "",
                     "lib/__init__.py": "import sys\n", "lib/x.py": ""})
    held = _held(tmp_path, "python3 fsmon.py")
    for name in ("watch", "watch.py", "watch.pyc", "watch.so", "watch.abi3.so", "__pycache__",
                 "lib", "lib.py", "fsmon.py"):
        assert name in held, held
    assert "lib/x.py" not in held  # inside lib, held whole
    assert "os.py" not in held and "sys" not in held  # imported before the top is on the path


def test_a_module_run_with_dash_m_looks_names_up_at_the_top(tmp_path):
    _tree(tmp_path, {"tools/__init__.py": "", "tools/fsmonitor.py": "from lib import watch\n",
                     "lib/__init__.py": "", "lib/watch.py": "from . import helper\n",
                     "lib/helper.py": ""})
    held = _held(tmp_path, "python3 -m tools.fsmonitor")
    assert "lib" in held and "tools/fsmonitor.py" in held, held


@pytest.mark.parametrize("text", [
    "import importlib\nimportlib.import_module('wat' + 'ch')\n",
    "import os, sys\nsys.path.insert(0, os.environ['LIB'])\nimport x\n",
    "__import__(name)\n",
])
def test_a_computed_import_holds_the_folder_and_says_so(tmp_path, text):
    _tree(tmp_path, {"tools/sub/fsmonitor.py": text})
    got = found("core.fsmonitor", "python3 tools/sub/fsmonitor.py", str(tmp_path))
    assert str(tmp_path / "tools" / "sub") in got.paths
    assert got.said == ["tools/sub/fsmonitor.py imports what its code computes: "
                        "tools/sub/ is kept read-only whole"]
    assert got.listed == []


def test_a_computed_import_at_the_top_is_listed(tmp_path):
    _tree(tmp_path, {"fsmon.py": "import importlib\nimportlib.import_module(x)\n"})
    got = found("alias.x", "!python3 fsmon.py", str(tmp_path))
    assert got.listed == [("fsmon.py imports what its code computes, found in", str(tmp_path), "")]


@pytest.mark.parametrize("line", [
    '. "$(dirname "$0")/lib.sh"',
    'source "${0%/*}/lib.sh"',
    'DIR=$(cd "$(dirname "$0")" && pwd)\n. "$DIR/lib.sh"',
    '"$(dirname -- "${BASH_SOURCE[0]}")"/lib.sh',
    ". tools/lib.sh",
])
def test_what_a_shell_script_sources_or_runs_by_its_folder_is_held(tmp_path, line):
    _tree(tmp_path, {"tools/fsmon.sh": f"#!/bin/sh\n{line}\ncat README\nmain\n",
                     "tools/lib.sh": "main() { exit 1; }\n", "README": ""})
    assert _held(tmp_path, "tools/fsmon.sh") == ["tools/fsmon.sh", "tools/lib.sh"]


def test_a_shell_script_sourcing_what_is_not_known_holds_its_folder(tmp_path):
    _tree(tmp_path, {"tools/fsmon.sh": '#!/bin/sh\n. "$CONF_DIR/lib.sh"\n'})
    got = found("core.fsmonitor", "tools/fsmon.sh", str(tmp_path))
    assert str(tmp_path / "tools") in got.paths and got.said, got.said


def test_what_a_sourced_file_runs_is_read_on(tmp_path):
    _tree(tmp_path, {"tools/a.sh": '. "$(dirname "$0")/b.sh"\n',
                     "tools/b.sh": "tools/deep/c.sh\n", "tools/deep/c.sh": "exit 1\n"})
    assert "tools/deep/c.sh" in _held(tmp_path, "sh tools/a.sh")


def test_a_node_script_holds_the_folder_it_requires_from(tmp_path):
    _tree(tmp_path, {"tools/fsmon.js": "const l = require('./lib');\nrequire('fs')\n",
                     "tools/lib.js": "module.exports = require('../shared/x.js')\n",
                     "shared/x.js": ""})
    held = _held(tmp_path, "node tools/fsmon.js")
    assert held == ["shared/x.js", "tools", "tools/fsmon.js"]  # `../shared/x.js`: that file


def test_data_a_script_reads_is_not_held(tmp_path):
    _tree(tmp_path, {"tools/fsmon.sh": "grep x README > out.txt\nrm -f build/*\n",
                     "README": "", "build/a": ""})
    assert _held(tmp_path, "tools/fsmon.sh") == ["tools/fsmon.sh"]


def test_a_script_never_read_past_the_bound(tmp_path):
    files = {f"tools/m{i}.py": f"import m{i + 1}\n" for i in range(80)}
    _tree(tmp_path, files)
    got = found("core.fsmonitor", "python3 tools/m0.py", str(tmp_path))
    assert str(tmp_path / "tools") in got.paths


@pytest.mark.parametrize("line", ["require(name)", "import(`./${x}.js`)", "require( './' + x )"])
def test_a_computed_require_holds_the_folder(tmp_path, line):
    _tree(tmp_path, {"tools/fsmon.js": f"{line}\n"})
    got = found("core.fsmonitor", "node tools/fsmon.js", str(tmp_path))
    assert str(tmp_path / "tools") in got.paths and got.said, got.said


def test_a_package_a_node_script_requires_is_held_in_each_node_modules(tmp_path):
    _tree(tmp_path, {"a/b/fsmon.js": "const _ = require('lodash/fp');\nimport x from '@s/p';\n"})
    held = _held(tmp_path, "node a/b/fsmon.js")
    for name in ("a/b/node_modules", "a/node_modules", "node_modules/lodash", "node_modules/@s/p"):
        assert name in held, held


@pytest.mark.parametrize("change", [
    "sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))",
    "sys.path.append(str(Path(__file__).resolve().parent.parent / 'lib'))",
    "sys.path.insert(0, 'lib')",  # from the top, where git runs it
])
def test_a_folder_put_on_sys_path_by_a_known_path_is_looked_up(tmp_path, change):
    _tree(tmp_path, {"tools/fsmon.py": f"import os, sys\n{change}\nimport lint\n",
                     "lib/lint.py": "import helper\n", "lib/helper.py": ""})
    got = found("core.fsmonitor", "python3 tools/fsmon.py", str(tmp_path))
    assert str(tmp_path / "lib") in got.paths and got.said == [], got.said


def test_a_module_a_shell_script_runs_is_read_from_the_top(tmp_path):
    _tree(tmp_path, {"hooks/pre-commit": "#!/bin/sh\nexec python3 -m tools.check \"$@\"\n",
                     "tools/__init__.py": "", "tools/check.py": "import rules\n", "rules.py": ""})
    held = _held(tmp_path, "hooks/pre-commit")
    assert "tools/check.py" in held and "rules.py" in held and "tools" in held, held


@pytest.mark.timeout(10)
def test_a_fifo_in_a_scripts_place_is_not_waited_on(tmp_path):
    """What a script imports is read at every sandbox start: a FIFO put in
    a module's place between the look and the read (by earlier work) never
    blocks it."""
    from zapcli.gitscripts import _read

    os.mkfifo(tmp_path / "watch.py")
    assert _read(str(tmp_path / "watch.py")) == ""
