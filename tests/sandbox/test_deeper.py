"""`zapcli.sandbox.deeper` through `zapcli.sandbox.policy.resolve`: the
control files that exist below a writable root's top are held where they
are (never a placeholder deeper), the walk's pruning (links, bulky folders,
what is held already), and its bound: past it, a note says what was not
looked at. Paths and real git (a nested repository's config is asked); the
sandbox's outside effects are `tests/redteam/test_adv7_nested_existing.py`'s."""

from __future__ import annotations

import subprocess

from zapcli.sandbox.deeper import Walk
from zapcli.sandbox.policy import resolve


def _repo(path):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def _resolve(tmp_path, ws, **kw):
    return resolve("workspace", workspace=str(ws), scratch=str(tmp_path / "scratch"),
                   hidden=(str(tmp_path / "state"),), **kw)


def test_what_exists_below_the_top_is_held_where_it_is_and_nothing_is_made_there(tmp_path):
    ws = _repo(tmp_path / "ws")
    _repo(ws / "a")
    (ws / "a/.vscode").mkdir()  # no tasks.json in it: none is made
    (ws / "b/c").mkdir(parents=True)
    (ws / "b/c/.envrc").write_text("use nix\n")
    policy, notes = _resolve(tmp_path, ws)
    assert {str(ws / "a/.git"), str(ws / "b/c/.envrc")} <= set(policy.readonly)
    assert not [p for p in policy.placeholders if p.startswith(str(ws / "a") + "/")]
    assert not [p for p in policy.placeholders if p.startswith(str(ws / "b") + "/")]
    assert not notes


def test_links_bulky_folders_and_hidden_ones_are_not_walked_but_a_repository_named_so_is(tmp_path):
    ws = _repo(tmp_path / "ws")
    elsewhere = _repo(tmp_path / "elsewhere")
    (ws / "linked").symlink_to(elsewhere)  # not followed: nothing of elsewhere is held
    _repo(ws / "node_modules/pkg")  # a package's own .git: tools' output, not walked
    (ws / ".venv/lib").mkdir(parents=True)
    (ws / ".venv/lib/.envrc").write_text("x\n")
    _repo(ws / "target")  # a checkout named like cargo's output: walked
    (tmp_path / "state/x").mkdir(parents=True)
    policy, notes = _resolve(tmp_path, ws)
    held = set(policy.readonly)
    assert str(ws / "target/.git") in held
    assert not [p for p in held if "elsewhere" in p or "node_modules" in p or ".venv" in p]
    assert not notes


def test_a_control_name_below_the_top_that_is_a_link_is_noted(tmp_path):
    ws = _repo(tmp_path / "ws")
    (ws / "a").mkdir()
    (tmp_path / "shared.env").write_text("A=1\n")
    (ws / "a/.env").symlink_to(tmp_path / "shared.env")
    policy, notes = _resolve(tmp_path, ws)
    assert any(f"{ws / 'a/.env'} is a symbolic link" in n for n in notes)
    assert str(ws / "a/.env") not in policy.placeholders


def test_past_the_bound_nothing_more_is_held_and_a_note_says_what_was_not_looked_at(tmp_path):
    ws = _repo(tmp_path / "ws")
    for i in range(30):
        (ws / f"d{i:02}").mkdir()
    _repo(ws / "d29/deep/repo")
    held = set(_resolve(tmp_path, ws)[0].readonly)
    assert str(ws / "d29/deep/repo/.git") in held  # within the default bound
    policy, notes = _resolve(tmp_path, ws, walk=31)  # the top's 31 entries, no more
    assert str(ws / "d29/deep/repo/.git") not in policy.readonly
    said = [n for n in notes if "was not looked at" in n]
    assert len(said) == 1 and "first 31 folder entries" in said[0]
    assert f"what lies in {ws / 'd29'} (and below)" in said[0]


def test_past_the_repositories_git_is_asked_about_a_note_names_them(tmp_path):
    ws = tmp_path / "ws"
    for name in ("a", "b", "c"):
        _repo(ws / name)
    walk = Walk((".git",), [str(ws)], (), asked=1)
    walk.root(str(ws))
    assert {str(ws / n / ".git") for n in "abc"} <= set(walk.found)  # held whole all the same
    said = walk.said()
    assert len(said) == 1 and "2 repositories" in said[0] and "not asked" in said[0]
