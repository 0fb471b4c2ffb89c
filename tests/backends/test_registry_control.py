"""The one list of control files reaches every backend's own names (claude's
`.claude`, opencode's `opencode.json`, a plugin's), and is kept in the state
folder until a built-in backend's source or a plugin folder changes."""

from __future__ import annotations

import json

from zapcli import control
from zapcli.backends import registry


def test_every_backend_adds_its_project_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(registry, "_control", [])
    names = registry.control_files()
    assert names[:len(control.BASE)] == control.BASE
    for backend in registry.every().values():
        assert set(backend.control_files) <= set(names), backend.name
    for own in (".claude", ".codex", ".gemini", ".qwen", "opencode.json", ".opencode", ".pi"):
        assert own in names


def test_the_list_is_kept_until_what_it_is_made_from_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(registry, "_control", [])
    first = registry.control_files()
    cache = tmp_path / "state" / registry.CONTROL_CACHE
    saved = json.loads(cache.read_text())
    assert saved["names"] == list(first)
    cache.write_text(json.dumps({"key": saved["key"], "names": [".git", ".from-cache"]}))
    monkeypatch.setattr(registry, "_control", [])
    assert registry.control_files() == (".git", ".from-cache")  # kept: nothing changed
    cache.write_text(json.dumps({"key": "made from something else", "names": [".git"]}))
    monkeypatch.setattr(registry, "_control", [])
    assert registry.control_files() == first  # made again
