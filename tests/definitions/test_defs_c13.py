"""C13 — one bad file does not hide the others (CASES.md), at the library level.

`resolve` is what `spawn --agent NAME` calls before anything is created.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zapcli.definitions import discover, resolve
from zapcli.errors import ZapcliError

HELPER = "name: helper\ndescription: Helps with things.\ntools: [read]\nprompt: Be helpful.\n"
REVIEWER = "name: reviewer\ndescription: Reviews diffs. Use when: ready\ntools: [read, grep]\n"

BOMB = "name: bomb\ndescription: lol\nlol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10))

BAD = {
    "tabbed.yaml": ("name: tabbed\ndescription: x\ntools:\n\t- read\n",
                    "tabbed.yaml:4:1:", "tab"),
    "memno.yaml": ("name: memno\ndescription: x\nmemory: no\n",
                   "memno.yaml:3:9:", "boolean false"),
    "twice.yaml": ("name: twice\ndescription: x\ntools: [read]\ntools: [grep]\n",
                   "twice.yaml:4:1:", "given twice"),
    "empty.yaml": ("", "empty.yaml:1:1:", "empty"),
    "stringtools.yaml": ("name: stringtools\ndescription: x\ntools: Read, Grep\n",
                         "stringtools.yaml:3:8:", "must be a list"),
    "bomb.yaml": (BOMB, "bomb.yaml:", "alias"),
}


@pytest.fixture
def folder(ws: Path, write) -> Path:
    sub = ws / ".zapcli" / "subagents"
    write(sub, "reviewer.yaml", REVIEWER)
    write(sub, "helper.yaml", HELPER)
    for name, (text, _, _) in BAD.items():
        write(sub, name, text)
    return sub


def test_reviewer_fails_with_file_line_column_and_quote_hint(ws: Path, folder: Path) -> None:
    with pytest.raises(ZapcliError) as info:
        resolve("reviewer", ws)
    message = info.value.message
    assert info.value.exit_code == 1
    assert f"{folder / 'reviewer.yaml'}:2:37:" in message
    assert 'quote the value: description: "Reviews diffs. Use when: ready"' in message


def test_helper_still_works(ws: Path, folder: Path) -> None:
    helper = resolve("helper", ws)
    assert helper.name == "helper" and helper.tools == ("read",)
    assert helper.layer == "workspace" and helper.source == str(folder / "helper.yaml")


@pytest.mark.parametrize("file", sorted(BAD))
def test_each_bad_file_is_one_clear_diagnostic(ws: Path, folder: Path, file: str) -> None:
    _, where, words = BAD[file]
    catalog = discover(ws)
    mine = [d for d in catalog.diagnostics if d.file == str(folder / file)]
    assert len(mine) == 1, mine
    assert str(mine[0]).startswith(str(folder / where)), str(mine[0])
    assert words in str(mine[0]).lower()
    stem = file.split(".")[0]
    assert catalog.get(stem) is None  # never loaded with defaults
    with pytest.raises(ZapcliError) as info:
        resolve(stem, ws)
    assert where in info.value.message


def test_bad_files_hide_nothing(ws: Path, folder: Path) -> None:
    catalog = discover(ws)
    assert "helper" in catalog.names()
    assert {"general", "explorer", "code-reviewer", "test-runner", "fixer"} <= set(catalog.names())
    assert len(catalog.diagnostics) == 1 + len(BAD)


def test_alias_bomb_is_refused_without_expanding(ws: Path, folder: Path) -> None:
    # 9**9 values if expanded; the refusal is by count, so this is instant.
    bad = [d for d in discover(ws).diagnostics if d.file.endswith("bomb.yaml")][0]
    assert "refused" in bad.message and "alias" in bad.message
