"""`zapcli.sandbox.policy.resolve`: what each approval mode lets a sandboxed
command write, and that a definition's `sandbox.writable` chooses inside
that, never past it (SPEC §18). Pure: paths only, no process."""

from __future__ import annotations

import pytest

from zapcli.sandbox.policy import Policy, resolve


@pytest.fixture
def tree(tmp_path):
    ws = tmp_path / "ws"
    for d in ("ws/.git", "ws/.zapcli", "ws/build", "roots/cache", "elsewhere", "state/subagents/x.tmp",
              "config"):
        (tmp_path / d).mkdir(parents=True)
    return tmp_path, ws


def _resolve(tree, mode, **kw):
    tmp, ws = tree
    kw.setdefault("writable_roots", (str(tmp / "roots/cache"),))
    return resolve(mode, workspace=str(ws), scratch=str(tmp / "state/subagents/x.tmp"),
                   hidden=(str(tmp / "state"), str(tmp / "config")), **kw)


def test_undeclared_means_the_workspace_and_writable_roots_with_git_read_only(tree):
    tmp, ws = tree
    policy, notes = _resolve(tree, "workspace")
    assert policy.writable == (str(ws), str(tmp / "roots/cache")) and not notes
    assert set(policy.readonly) == {str(ws / ".git"), str(ws / ".zapcli")}
    assert policy.hidden == (str(tmp / "state"), str(tmp / "config"))
    assert policy.network is False  # undeclared means unreachable


@pytest.mark.parametrize("mode", ["confirm", "workspace"])
def test_a_definition_cannot_widen_what_the_mode_forbids(tree, mode):
    tmp, ws = tree
    policy, notes = _resolve(tree, mode, writable=["build", str(tmp / "elsewhere"), "/", ".git",
                                                   str(tmp / "state")])
    assert policy.writable == (str(ws / "build"),)
    assert len(notes) == 4
    assert f"{mode} mode lets commands write only in the workspace" in notes[0]
    assert "only a person may change" in notes[2] and "only in the workspace" in notes[3]


def test_auto_edit_may_name_any_folder_but_git_and_zapcli_state(tree):
    tmp, ws = tree
    policy, notes = _resolve(tree, "auto-edit", writable=[str(tmp / "elsewhere"), ".git", "nope"])
    assert policy.writable == (str(tmp / "elsewhere"),)
    assert [n.split(":")[1].strip().split(",")[0] for n in notes] == [
        "it is inside .git/.zapcli/", "it does not exist; it stays read-only"]


def test_full_mode_leaves_git_writable_but_never_zapcli_s_own_folders(tree):
    tmp, ws = tree
    policy, notes = _resolve(tree, "full", writable=[".", str(tmp / "state" / "subagents")])
    assert policy.writable == (str(ws),) and policy.readonly == ()
    assert len(notes) == 1 and "zapcli's own folders" in notes[0]
    assert policy.hidden  # trails, approvals and the MCP token stay out of reach


def test_the_frozen_form_round_trips(tree):
    policy, _ = _resolve(tree, "workspace", network=True)
    assert Policy.from_dict(policy.to_dict()) == policy


def test_an_unknown_mode_is_refused(tree):
    with pytest.raises(ValueError, match="unknown approval mode"):
        _resolve(tree, "yolo")
