"""`zapcli.sandbox.policy.resolve`: what each approval mode lets a sandboxed
command write, and that a definition's `sandbox.writable` chooses inside
that, never past it (docs/explanation/rules.md#sandbox). Pure: paths only, no process."""

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
        "it is inside .git", "it does not exist; it stays read-only"]


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


def test_every_control_file_of_every_root_is_held_existing_or_not(tree):
    """The one list, backends' names included: what exists is bound read-only,
    for what does not the first missing part of its path is a placeholder."""
    tmp, ws = tree
    (ws / ".vscode").mkdir()
    (ws / ".envrc").write_text("use nix\n")
    names = (".git", ".zapcli", ".envrc", ".vscode/tasks.json", ".claude", "opencode.json",
             ".devcontainer/devcontainer.json")
    policy, notes = _resolve(tree, "workspace", control=names)
    assert set(policy.readonly) == {str(ws / ".git"), str(ws / ".zapcli"), str(ws / ".envrc")}
    cache = tmp / "roots/cache"
    assert set(policy.placeholders) == {
        str(ws / ".vscode/tasks.json"), str(ws / ".claude"), str(ws / "opencode.json"),
        str(ws / ".devcontainer"), *(str(cache / n) for n in (".git", ".zapcli", ".envrc", ".vscode",
                                                               ".claude", "opencode.json",
                                                               ".devcontainer"))}
    assert not notes
    assert not any(p.startswith(str(tmp / "state")) for p in policy.placeholders)  # scratch: none
    assert _resolve(tree, "full", control=names)[0].placeholders == ()


def test_a_file_where_a_control_folder_is_named_is_held_and_a_link_is_named(tree):
    tmp, ws = tree
    (ws / ".vscode").write_text("not a folder")  # removable, then a folder made: held as it is
    (tmp / "elsewhere" / "claude").mkdir()
    (ws / ".claude").symlink_to(tmp / "elsewhere" / "claude")
    policy, notes = _resolve(tree, "workspace", writable_roots=(),
                             control=(".vscode/tasks.json", ".claude"))
    assert str(ws / ".vscode") in policy.readonly and not policy.placeholders
    assert len(notes) == 1 and ".claude is a symbolic link" in notes[0]


def test_the_trees_folder_is_hidden_but_the_subagent_s_own_tree(tmp_path):
    """The trees folder beside the state folder is one of zapcli's own: a
    subagent's tree is writable to it (the rest of its tree in view when it
    works in a subfolder), no other tree is (adversary round 5)."""
    trees = tmp_path / "ws/.state-worktrees"
    for d in ("ws/.state", "ws/.state-worktrees/sa_1/sub", "ws/.state-worktrees/sa_2"):
        (tmp_path / d).mkdir(parents=True)
    mine, other = trees / "sa_1", trees / "sa_2"
    hidden = (str(tmp_path / "ws/.state"), str(trees))

    def policy(workspace, **kw):
        return resolve("workspace", workspace=str(workspace), scratch="", hidden=hidden,
                       shown=(str(mine),), **kw)

    whole, _ = policy(mine)
    assert whole.writable == (str(mine),) and str(trees) in whole.hidden
    assert str(mine) not in whole.readonly
    part, _ = policy(mine / "sub")
    assert part.writable == (str(mine / "sub"),) and str(mine) in part.readonly
    around, notes = policy(tmp_path / "ws", writable=[".", str(other)])
    assert around.writable == (str(tmp_path / "ws"),) and "zapcli's own folders" in notes[0]
