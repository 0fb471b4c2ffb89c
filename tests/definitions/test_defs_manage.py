"""`zapcli agents ...` at the library level (docs/explanation/rules.md#managing-definitions)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from zapcli.definitions import discover, effective_model, parse_definition, resolve
from zapcli.definitions.manage import (
    copy_agent,
    delete_agent,
    disable_agent,
    enable_agent,
    list_agents,
    save_agent,
    set_agent_model,
    show_agent,
)
from zapcli.errors import UsageError, ZapcliError

GOOD = "# my reviewer\nname: critic\ndescription: Critiques.\ntools: [read]\nmodel: m-def\n"


def test_list_shows_every_layer_and_broken_files(ws: Path, write) -> None:
    write(ws / ".zapcli" / "subagents", "critic.yml", GOOD)
    write(ws / ".zapcli" / "subagents", "broken.yml", "name: broken\n")
    rows = {r.name: r for r in list_agents(ws, session_default="m-session").rows}
    assert rows["general"].layer == "builtin" and rows["general"].model == "m-session"
    assert rows["general"].model_origin == "session"
    assert rows["critic"].model == "m-def" and rows["critic"].model_origin == "definition"
    assert rows["critic"].enabled and rows["critic"].valid
    assert not rows["broken"].valid
    assert "missing required key 'description'" in rows["broken"].diagnostics[0]


def test_save_validates_and_keeps_the_text(ws: Path, tmp_path: Path, write) -> None:
    src = write(tmp_path, "draft.yml", GOOD)
    result = save_agent(src, "workspace", ws)
    target = ws / ".zapcli" / "subagents" / "critic.yml"
    assert result.path == str(target) and not result.replaced
    assert target.read_text() == GOOD  # comments kept
    assert resolve("critic", ws).description == "Critiques."


def test_save_refuses_invalid_file_with_diagnostics(ws: Path, tmp_path: Path, write) -> None:
    src = write(tmp_path, "bad.yml", "name: bad\ndescription: d\ntools: [Serch]\n")
    with pytest.raises(ZapcliError) as info:
        save_agent(src, "workspace", ws)
    assert "bad.yml:3:9: unknown tool 'Serch'" in info.value.message
    assert not (ws / ".zapcli" / "subagents" / "bad.yml").exists()


def test_save_refuses_builtin_name(ws: Path, tmp_path: Path, write) -> None:
    src = write(tmp_path, "g.yml", "name: general\ndescription: mine\n")
    with pytest.raises(ZapcliError, match="built-in"):
        save_agent(src, "system", ws)


def test_save_refuses_knowledge_without_read(ws: Path, tmp_path: Path, write) -> None:
    src = write(tmp_path, "k.yml", "name: k\ndescription: d\ntools: [grep]\n"
                "knowledge: [{name: docs, path: docs}]\n")
    with pytest.raises(ZapcliError, match="read"):
        save_agent(src, "workspace", ws)


def test_save_bad_scope(ws: Path, tmp_path: Path, write) -> None:
    with pytest.raises(UsageError):
        save_agent(write(tmp_path, "x.yml", GOOD), "global", ws)


def test_save_reports_cross_layer_duplicates(ws: Path, tmp_path: Path, write) -> None:
    save_agent(write(tmp_path, "a.yml", GOOD), "system", ws)
    result = save_agent(write(tmp_path, "b.yml", GOOD), "workspace", ws)
    assert result.duplicates and result.duplicates[0].startswith("system:")


def test_renaming_in_place_removes_the_old_file(ws: Path, write) -> None:
    sub = ws / ".zapcli" / "subagents"
    old = write(sub, "critic.yml", GOOD)
    old.write_text(GOOD.replace("name: critic", "name: judge"))
    result = save_agent(old, "workspace", ws)
    assert result.path == str(sub / "judge.yml")
    assert result.removed == (str(old),)
    assert not old.exists() and discover(ws).get("critic") is None


def test_renaming_an_outside_source_removes_the_previous_save(ws: Path, tmp_path: Path,
                                                               write) -> None:
    src = write(tmp_path, "draft.yml", GOOD)
    save_agent(src, "system", ws)
    src.write_text(GOOD.replace("name: critic", "name: judge"))
    result = save_agent(src, "system", ws)
    system = Path(result.path).parent
    assert (system / "judge.yml").exists() and not (system / "critic.yml").exists()


def test_save_replaces_other_spelling_in_same_scope(ws: Path, tmp_path: Path, write) -> None:
    write(ws / ".zapcli" / "subagents", "critic.yaml", GOOD)
    result = save_agent(write(tmp_path, "d.yml", GOOD), "workspace", ws)
    assert result.removed == (str(ws / ".zapcli" / "subagents" / "critic.yaml"),)
    assert not any("also defined" in d.message for d in discover(ws).diagnostics)


def test_delete(ws: Path, tmp_path: Path, write) -> None:
    save_agent(write(tmp_path, "a.yml", GOOD), "system", ws)
    save_agent(write(tmp_path, "a.yml", GOOD), "workspace", ws)
    first = delete_agent("critic", ws)
    assert first.layer == "workspace" and first.now_effective.startswith("system:")
    second = delete_agent("critic", ws)
    assert second.layer == "system" and second.now_effective is None
    with pytest.raises(ZapcliError):
        delete_agent("critic", ws)


def test_delete_builtin_is_refused(ws: Path) -> None:
    with pytest.raises(ZapcliError, match="read-only"):
        delete_agent("general", ws)


def test_enable_disable_are_machine_local(ws: Path, isolated: Path, write) -> None:
    path = write(ws / ".zapcli" / "subagents", "critic.yml", GOOD)
    assert disable_agent("critic", ws).changed
    assert not disable_agent("critic", ws).changed
    assert path.read_text() == GOOD  # never written into YAML
    with pytest.raises(ZapcliError, match="disabled"):
        resolve("critic", ws)
    assert enable_agent("critic", ws).changed
    assert resolve("critic", ws).name == "critic"
    db = isolated / "state" / "zapcli.db"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"definition_switches", "definition_saved"} <= tables
    assert oct(db.stat().st_mode & 0o777) == "0o600"


def test_enable_unknown(ws: Path) -> None:
    with pytest.raises(ZapcliError, match="did you mean 'general'"):
        enable_agent("generl", ws)


def test_model_override_on_a_builtin(ws: Path) -> None:
    result = set_agent_model("general", "m-local", ws)
    assert (result.model, result.previous) == ("m-local", None)
    shown = show_agent("general", ws, session_default="m-session")
    assert shown.model_override == "m-local" and shown.row.model == "m-local"
    assert shown.row.model_origin == "override"
    cleared = set_agent_model("general", None, ws)
    assert (cleared.model, cleared.previous) == (None, "m-local")
    assert show_agent("general", ws).model_override is None


def test_model_precedence() -> None:
    d, _ = parse_definition("name: a\ndescription: d\nmodel: m-def\n", "a.yml")
    plain, _ = parse_definition("name: a\ndescription: d\n", "a.yml")
    over = {"a": "m-over"}
    assert effective_model("m-flag", d, over, "m-sess") == "m-flag"
    assert effective_model(None, d, over, "m-sess") == "m-over"
    assert effective_model(None, d, {}, "m-sess") == "m-def"
    assert effective_model(None, plain, {}, "m-sess") == "m-sess"
    assert effective_model("", plain, {}, None) is None


def test_copy_carries_every_dimension(ws: Path, write) -> None:
    text = ("name: full\ndescription: All of it.\ntools: [read, grep]\nskills: [pdf]\n"
            "mcp: {servers: [github]}\nknowledge: [{name: docs, path: 'docs/*.md'}]\n"
            "memory: shared\nmaxTurns: 7\nmodel: m\nenv: [TOKEN_X]\nprompt: |\n  one\n  two\n")
    write(ws / ".zapcli" / "subagents", "full.yml", text)
    result = copy_agent("full", ws, to="system")
    copied, diags = parse_definition(Path(result.path).read_text(), result.path, layer="system")
    original = discover(ws).entry("full")
    assert diags == []
    assert copied.to_file_dict() == original.definition.to_file_dict()
    with pytest.raises(ZapcliError, match="already exists"):
        copy_agent("full", ws, to="system")


def test_copy_builtin_needs_a_new_name(ws: Path) -> None:
    with pytest.raises(ZapcliError, match="built-in"):
        copy_agent("explorer", ws)
    result = copy_agent("explorer", ws, new_name="my-explorer")
    assert discover(ws).get("my-explorer").tools == ("read", "glob", "grep")
    assert Path(result.path).name == "my-explorer.yml"


def test_show_broken(ws: Path, write) -> None:
    write(ws / ".zapcli" / "subagents", "b.yml", "name: b\ndescription: x\nmemory: no\n")
    shown = show_agent("b", ws)
    assert shown.definition is None and "boolean false" in shown.diagnostics[0].message
