"""Discovery in layers (docs/explanation/rules.md#definition-layers) and resolution by name."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from zapcli.definitions import discover, resolve
from zapcli.definitions.manage import disable_agent
from zapcli.errors import ZapcliError

BUILTINS = ["code-reviewer", "explorer", "fixer", "general", "test-runner"]


def agent(name: str, desc: str = "d", extra: str = "") -> str:
    return f"name: {name}\ndescription: {desc}\n{extra}"


def test_builtins_only(ws: Path) -> None:
    catalog = discover(ws)
    assert sorted(catalog.names()) == BUILTINS
    assert catalog.diagnostics == []
    assert all(d.layer == "builtin" and d.source.startswith("builtin:") for d in catalog.all())


def test_default_is_general(ws: Path) -> None:
    assert resolve(None, ws).name == "general"
    assert resolve("", ws).name == "general"


def test_layers_shadow_in_order(ws: Path, isolated: Path, write) -> None:
    system = isolated / "config" / "subagents"
    write(system, "explorer.yml", agent("explorer", "system explorer"))
    write(system, "mine.yaml", agent("mine", "system mine"))
    write(ws / ".zapcli" / "subagents", "mine.yml", agent("mine", "workspace mine"))
    catalog = discover(ws)
    assert catalog.get("explorer").description == "system explorer"
    assert catalog.get("explorer").layer == "system"
    assert catalog.get("mine").description == "workspace mine"
    assert [e.layer for e in catalog.shadowed("mine")] == ["system"]
    assert [e.layer for e in catalog.shadowed("explorer")] == ["builtin"]


def test_broken_override_shadows_and_is_never_replaced_silently(ws: Path, write) -> None:
    write(ws / ".zapcli" / "subagents", "general.yml", "name: general\ndescription: [oops\n")
    catalog = discover(ws)
    assert catalog.get("general") is None
    with pytest.raises(ZapcliError) as info:
        resolve(None, ws)
    assert "general.yml:3:1: YAML syntax error" in info.value.message
    assert "starts at line 2, column 14" in info.value.message
    assert "explorer" in catalog.names()


def test_only_yml_and_yaml_files(ws: Path, write) -> None:
    sub = ws / ".zapcli" / "subagents"
    write(sub, "a.yml", agent("a"))
    write(sub, "b.yaml", agent("b"))
    write(sub, "c.txt", agent("c"))
    write(sub, "d.json", agent("d"))
    names = discover(ws).names()
    assert "a" in names and "b" in names and "c" not in names and "d" not in names


@pytest.mark.parametrize("files, winner, loser", [
    (("one.yml", "two.yml"), "one.yml", "two.yml"),  # neither is named after it: file order
    (("bar.yml", "foo.yml"), "foo.yml", "bar.yml"),  # tryout: bar.yml used to beat foo.yml
])
def test_same_name_twice_in_one_layer(ws: Path, write, files, winner, loser) -> None:
    sub = ws / ".zapcli" / "subagents"
    for file in files:
        write(sub, file, agent("foo", f"from {file}"))
    catalog = discover(ws)
    assert catalog.get("foo").description == f"from {winner}"
    assert catalog.shadowed("foo") == []  # not shadowing: `agents list` must not say so
    assert [e.file for e in catalog.ignored("foo")] == [str(sub / loser)]
    assert any(d.file.endswith(loser) and (d.line, d.column) == (1, 1)  # each file's `name:`
               and f"{winner}:1:1, which is the one used" in d.message for d in catalog.diagnostics)


def test_unknown_name_suggests(ws: Path) -> None:
    with pytest.raises(ZapcliError) as info:
        resolve("explorr", ws)
    assert "no subagent definition named 'explorr' (did you mean 'explorer'?)" in info.value.message
    assert info.value.code == "definition_unknown" and info.value.exit_code == 1


def test_unknown_name_points_at_a_broken_file_with_that_stem(ws: Path, write) -> None:
    write(ws / ".zapcli" / "subagents", "critic.yml", "description: no name line: here\n")
    with pytest.raises(ZapcliError) as info:
        resolve("critic", ws)
    assert "critic.yml:1:" in info.value.message


def test_disabled(ws: Path) -> None:
    disable_agent("explorer", ws)
    with pytest.raises(ZapcliError) as info:
        resolve("explorer", ws)
    assert info.value.code == "definition_disabled"
    assert "zapcli agents enable explorer" in info.value.message


def test_unreadable_definitions_folder_is_not_fatal(ws: Path) -> None:
    sub = ws / ".zapcli" / "subagents"
    sub.rmdir()
    sub.write_text("not a folder")
    assert "general" in discover(ws).names()


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    info = site / "zapplug-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zapplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [zapcli.subagents]
        acme = zapplug_defs:FOLDER
        broken = zapplug_defs:explode
        """))
    (site / "zapplug_defs.py").write_text(textwrap.dedent("""\
        from pathlib import Path
        FOLDER = Path(__file__).parent / "acme"
        def explode():
            raise RuntimeError("plugin exploded")
        """))
    (site / "acme").mkdir()
    (site / "acme" / "deploy.yml").write_text(agent("deploy", "Deploys things.", "tools: [bash]\n"))
    (site / "acme" / "bad.yml").write_text("name: bad\n")
    monkeypatch.syspath_prepend(str(site))
    return site


def test_plugins_are_namespaced(ws: Path, plugin_site: Path) -> None:
    catalog = discover(ws)
    deploy = catalog.get("acme:deploy")
    assert deploy is not None and deploy.layer == "plugin" and deploy.tools == ("bash",)
    assert resolve("acme:deploy", ws).name == "acme:deploy"
    messages = [str(d) for d in catalog.diagnostics]
    assert any("plugin exploded" in m for m in messages)
    assert any("bad.yml" in m and "missing required key 'description'" in m for m in messages)
    with pytest.raises(ZapcliError) as info:
        resolve("deploy", ws)
    assert "did you mean 'acme:deploy'?" in info.value.message


def test_a_disabled_definition_is_not_offered_as_available(ws: Path, tmp_path: Path) -> None:
    from zapcli.definitions.store import Switches

    switches = Switches(tmp_path / "switches.db")
    switches.set_enabled("fixer", False)
    with pytest.raises(ZapcliError) as info:
        resolve("nosuch", ws, switches=switches)
    assert "available:" in info.value.message and "fixer" not in info.value.message
