"""Valid definitions kept by their bytes (`zapcli.definitions.kept`), and the
plugin scan that skips importlib.metadata: what a spawn resolves is what the
files say now, whatever was kept before."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from zapcli.definitions import discover, resolve
from zapcli.definitions import kept as kept_mod
from zapcli.definitions.layers import PLUGIN_GROUP
from zapcli.errors import ZapcliError
from zapcli.paths import state_dir
from zapcli.plugins import may_declare as _may_declare


def agent(name: str, tools: str = "read") -> str:
    return f"name: {name}\ndescription: Deploys things.\ntools: [{tools}]\n"


def test_an_edit_of_the_same_size_is_read_again_and_a_broken_one_refused(ws: Path, write) -> None:
    path = write(ws / ".zapcli" / "subagents", "deployer.yml", agent("deployer", "read"))
    assert discover(ws).get("deployer").tools == ("read",)
    kept = json.loads((state_dir() / "cache" / "definitions.json").read_text())
    assert any("deployer.yml" in key for key in kept["files"])  # it was kept
    path.write_text(agent("deployer", "grep"))  # same length, same second
    assert discover(ws).get("deployer").tools == ("grep",)
    path.write_text("name: deployer\ndescription: Deploys things.\ntools: [rread]\n")
    with pytest.raises(ZapcliError) as info:
        resolve("deployer", ws)
    assert info.value.code == "definition_invalid"
    assert "deployer.yml:3:" in info.value.message and "unknown tool 'rread'" in info.value.message


def _poison(files: dict, code: str) -> None:
    where = state_dir() / "cache" / "definitions.json"
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps({"v": kept_mod.VERSION, "code": code, "files": files}))


def test_a_kept_copy_counts_only_for_the_same_bytes_and_the_same_code(ws: Path) -> None:
    real = discover(ws).get("general")
    assert real is not None
    text = (Path(kept_mod.__file__).parent / "builtin" / "general.yml").read_text()
    other = {**real.to_dict(), "description": "KEPT"}
    key = "builtin\0builtin:general.yml\0builtin:general.yml"
    stamp = kept_mod._stamp()

    _poison({key: {"text": text + "\n", "definition": other}}, stamp)  # other bytes
    assert discover(ws).get("general").description == real.description
    _poison({key: {"text": text, "definition": other}}, stamp + " edited")  # other code
    assert discover(ws).get("general").description == real.description
    _poison({key: {"text": text, "definition": other}}, stamp)  # the same: the copy is what counts
    assert discover(ws).get("general").description == "KEPT"


def test_a_kept_copy_that_is_not_a_regular_file_is_not_read(ws: Path, tmp_path: Path) -> None:
    discover(ws)
    where = state_dir() / "cache" / "definitions.json"
    elsewhere = tmp_path / "elsewhere.json"
    where.rename(elsewhere)
    where.symlink_to(elsewhere)
    assert kept_mod.Kept().files == {}


def test_the_plugin_scan_sees_what_importlib_metadata_would(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "other-1.0.dist-info").mkdir(parents=True)
    (site / "other-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n")
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing")])
    assert _may_declare(PLUGIN_GROUP) is False
    info = site / "Zapplug-1.0.DIST-INFO"  # any case, as importlib.metadata matches
    info.mkdir()
    (info / "entry_points.txt").write_text(f"[ {PLUGIN_GROUP} ]\nacme = m:F\n")
    assert _may_declare(PLUGIN_GROUP) is True
    info.joinpath("entry_points.txt").unlink()
    archive = tmp_path / "plugins.zip"  # importlib.metadata reads inside an archive: so must it
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zapplug-1.0.dist-info/entry_points.txt", f"[{PLUGIN_GROUP}]\nacme = m:F\n")
    monkeypatch.setattr(sys, "path", [str(site), str(archive)])
    assert _may_declare(PLUGIN_GROUP) is True
