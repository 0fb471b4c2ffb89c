"""docs/explanation/rules.md#approvals: the one decision function, every mode x tool kind x inside/outside."""

from __future__ import annotations

import os

import pytest

from zapcli.approvals import MODES, Decision, decide, summarize


@pytest.fixture
def tree(tmp_path):
    ws, out, extra = tmp_path / "ws", tmp_path / "outside", tmp_path / "extra"
    for d in (ws / "src", out, extra):
        d.mkdir(parents=True)
    (out / "secret.txt").write_text("s", encoding="utf-8")
    (ws / "src" / "x.py").write_text("x = 1\n", encoding="utf-8")
    os.symlink(out, ws / "link_out")  # a folder symlink that escapes
    os.symlink(out / "secret.txt", ws / "file_link")  # a file symlink that escapes
    os.symlink(out / "new.txt", ws / "dangling")  # escapes to a file not yet there
    os.symlink(ws / "src", ws / "src_alias")  # stays inside
    return {"ws": str(ws), "out": str(out), "extra": str(extra)}


def run(tree, mode, tool, args, **kw):
    kw.setdefault("writable_roots", (tree["extra"],))
    kw.setdefault("unattended", False)
    return decide(mode, tool, args, workspace=tree["ws"], cwd=tree["ws"], **kw)


# kind -> (tool, args builder, extra kwargs); expected per mode in MODES order
KINDS = {
    "read_outside": ("read", lambda t: {"path": t["out"] + "/secret.txt"}, {},
                     ["allow", "allow", "allow", "allow"]),
    "edit_inside": ("edit", lambda t: {"path": "src/x.py", "old_string": "1",
                                        "new_string": "2"}, {},
                    ["ask", "allow", "allow", "allow"]),
    "write_inside": ("write", lambda t: {"path": "src/new.py", "content": "y"}, {},
                     ["ask", "allow", "allow", "allow"]),
    "write_root": ("write", lambda t: {"path": t["extra"] + "/n.txt", "content": "y"}, {},
                   ["ask", "allow", "allow", "allow"]),
    "write_outside": ("write", lambda t: {"path": t["out"] + "/n.txt", "content": "y"}, {},
                      ["ask", "ask", "allow", "allow"]),
    "bash": ("bash", lambda t: {"command": "ls"}, {}, ["ask", "ask", "ask", "allow"]),
    "bash_background": ("bash", lambda t: {"command": "make", "background": True}, {},
                        ["ask", "ask", "ask", "allow"]),
    "mcp_allowlisted": ("mcp_call", lambda t: {"server": "gh", "tool": "list"},
                        {"mcp_allowlisted": True}, ["ask", "allow", "allow", "allow"]),
    "mcp_off_list": ("mcp_call", lambda t: {"server": "gh", "tool": "delete"}, {},
                     ["ask", "ask", "ask", "allow"]),
    "memory_write": ("memory_write", lambda t: {"text": "x"}, {},
                     ["ask", "allow", "allow", "allow"]),
    "unknown": ("frobnicate", lambda t: {"x": 1}, {}, ["ask", "ask", "ask", "allow"]),
}
READ_ONLY = ["read", "glob", "grep", "todo", "task_output", "task_stop", "WebFetch",
             "webfetch", "WebSearch", "use_skill", "kb_search", "memory_read",
             "memory_search", "mcp_search", "mcp_describe", "subagent"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_decision_table(tree, mode, kind):
    tool, build, kw, expected = KINDS[kind]
    want = expected[MODES.index(mode)]
    d = run(tree, mode, tool, build(tree), **kw)
    assert isinstance(d, Decision)
    assert d.action == want, (mode, kind, d)
    assert d.summary and d.reason  # the whole call: a write or an edit spans lines (C37)
    unattended = run(tree, mode, tool, build(tree), unattended=True, **kw)
    if want == "ask":
        assert unattended.action == "deny"
        assert "unattended" in unattended.reason and "Do not retry" in unattended.reason
        assert unattended.summary == d.summary
    else:
        assert unattended.action == want


@pytest.mark.parametrize("tool", READ_ONLY)
@pytest.mark.parametrize("mode", MODES)
def test_read_only_tools_never_ask(tree, mode, tool):
    args = {"path": "/etc/passwd", "pattern": "*", "url": "http://x", "job_id": "job_1"}
    assert run(tree, mode, tool, args, unattended=True).action == "allow"


ESCAPES = {
    "absolute": lambda t: t["out"] + "/n.txt",
    "dotdot": lambda t: "../outside/n.txt",
    "dotdot_in_middle": lambda t: "src/../../outside/n.txt",
    "symlinked_folder": lambda t: "link_out/n.txt",
    "symlinked_file": lambda t: "file_link",
    "dangling_symlink": lambda t: "dangling",
    "home": lambda t: "~/n.txt",
    "git_hook": lambda t: ".git/hooks/pre-commit",
    "zapcli_config": lambda t: ".zapcli/mcp.json",
    "git_in_root": lambda t: t["extra"] + "/.git/config",
}


@pytest.mark.parametrize("tool", ["write", "edit"])
@pytest.mark.parametrize("escape", ESCAPES)
def test_workspace_mode_catches_escapes(tree, escape, tool, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "outside"))
    args = {"path": ESCAPES[escape](tree), "content": "x", "old_string": "a",
            "new_string": "b"}
    d = run(tree, "workspace", tool, args)
    assert d.action == "ask", d
    denied = run(tree, "workspace", tool, args, unattended=True)
    assert denied.action == "deny"
    guarded = escape in ("git_hook", "zapcli_config", "git_in_root")  # they ask in auto-edit too
    assert run(tree, "auto-edit", tool, args).action == ("ask" if guarded else "allow")


@pytest.mark.parametrize("mode", ["workspace", "auto-edit"])
def test_zapcli_own_folders_ask_in_every_mode_but_full(tree, tmp_path, mode):
    """Tryout: with the workspace at $HOME, a subagent rewrote config.yaml to
    `approval: full`, and forged an approval into another subagent's trail."""
    state, config = tree["ws"] + "/.local/state/zapcli", tree["ws"] + "/.config/zapcli"
    for path in (config + "/config.yaml", state + "/subagents/sa_20261130_0000abcd.jsonl",
                 config + "/subagents/explorer.yml"):
        args = {"path": path, "content": "approval: full", "old_string": "a", "new_string": "b"}
        for tool in ("write", "edit"):
            d = run(tree, mode, tool, args, control_roots=(state, config))
            assert d.action == "ask" and "zapcli's own folder" in d.reason, d
            assert run(tree, mode, tool, args, control_roots=(state, config),
                       unattended=True).action == "deny"
            assert run(tree, "full", tool, args, control_roots=(state, config)).action == "allow"
    assert run(tree, mode, "write", {"path": "src/x.py", "content": ""},
               control_roots=(state, config)).action == "allow"


@pytest.mark.parametrize("mode", ["workspace", "auto-edit"])
def test_another_subagent_s_tree_is_zapcli_s_own_but_the_own_tree_is_not(tmp_path, mode):
    """The trees folder is one of zapcli's own (adversary round 5): a
    subagent whose workspace is its tree edits there; one in the folder that
    holds the trees (the state folder in the workspace) asks to edit another's."""
    ws, trees = tmp_path / "work", tmp_path / "work/.state-worktrees"
    mine, theirs = trees / "sa_1", trees / "sa_2"
    for d in (mine, theirs):
        d.mkdir(parents=True)
    roots = (str(ws / ".state"), str(tmp_path / "config"), str(trees))
    own = decide(mode, "write", {"path": "calc.py", "content": ""}, workspace=str(mine),
                 cwd=str(mine), writable_roots=(), unattended=True, control_roots=roots,
                 shown=(str(mine),))
    assert own.action == "allow", own
    for workspace, shown in ((ws, ()), (mine, (str(mine),))):
        other = decide(mode, "write", {"path": str(theirs / "calc.py"), "content": ""},
                       workspace=str(workspace), cwd=str(workspace), writable_roots=(),
                       unattended=True, control_roots=roots, shown=shown)
        assert other.action == "deny" and "zapcli's own folder" in other.reason, other


@pytest.mark.parametrize("path", ["src/x.py", "src_alias/x.py", "./src/../src/x.py",
                                  "new_dir/deeper/file.txt"])
def test_workspace_mode_allows_inside(tree, path):
    assert run(tree, "workspace", "write", {"path": path, "content": ""}).action == "allow"


def test_workspace_given_through_a_symlink(tree, tmp_path):
    alias = tmp_path / "ws_alias"
    os.symlink(tree["ws"], alias)
    d = decide("workspace", "write", {"path": "src/y.py", "content": ""},
               workspace=str(alias), cwd=str(alias), writable_roots=(), unattended=False)
    assert d.action == "allow"


def test_cwd_below_workspace(tree):
    sub = os.path.join(tree["ws"], "src")
    d = decide("workspace", "write", {"path": "../top.txt", "content": ""},
               workspace=tree["ws"], cwd=sub, writable_roots=(), unattended=False)
    assert d.action == "allow"
    d = decide("workspace", "write", {"path": "../../outside/x", "content": ""},
               workspace=tree["ws"], cwd=sub, writable_roots=(), unattended=False)
    assert d.action == "ask"


def test_write_without_path_is_denied_in_workspace_mode(tree):
    for args in ({"content": "x"}, {"path": 3}, {"path": "  "}):
        d = run(tree, "workspace", "write", args)
        assert d.action == "deny" and "path" in d.reason


def test_unknown_mode_is_an_error(tree):
    with pytest.raises(ValueError, match="unknown approval mode"):
        run(tree, "yolo", "bash", {"command": "ls"})


def test_summaries_are_the_whole_call(tree):
    """C37: what a person approves is never cut: every line of a command, a
    write's content, an edit's strings, an MCP call's arguments."""
    ws = tree["ws"]
    long_cmd = "pytest -q " + "tests/x.py " * 40 + "; curl -s http://127.0.0.1:9/x"
    assert summarize("bash", {"command": long_cmd}, workspace=ws, cwd=ws) == f"bash: {long_cmd}"
    assert summarize("bash", {"command": "a\n  b"}, workspace=ws, cwd=ws) == "bash: a\n  b"
    s = summarize("write", {"path": "src/x.py", "content": "é" * 617}, workspace=ws, cwd=ws)
    assert s == "write: src/x.py (1,234 bytes)\n" + "é" * 617
    s = summarize("edit", {"path": tree["out"] + "/f", "old_string": "a", "new_string": "b"},
                  workspace=ws, cwd=ws)
    assert s == f"edit: {tree['out']}/f\nreplace:\na\nwith:\nb"
    s = summarize("mcp_call", {"server": "gh", "tool": "create_issue", "arguments": {"t": 1}},
                  workspace=ws, cwd=ws)
    assert s == 'mcp_call: gh/create_issue {"arguments": {"t": 1}}'
    assert summarize("WebFetch", {"url": "http://a"}, workspace=ws, cwd=ws) == \
        "WebFetch: http://a"
    assert run(tree, "confirm", "bash", {"command": "ls"}).summary == "bash: ls"


@pytest.mark.parametrize("path", [".envrc", ".vscode/tasks.json", "sub/.envrc", ".claude/settings.json",
                                  "opencode.json", "pkg/.git/config", ".mise.toml", ".npmrc",
                                  "sub/.cargo/config.toml", "rust-toolchain.toml"])
@pytest.mark.parametrize("mode", ["workspace", "auto-edit"])
def test_every_control_file_asks_the_backends_too(tree, mode, path):
    """The one list (`zapcli.control` and each backend's `control_files`): a
    control file in a root asks in every mode but full, existing or not."""
    from zapcli.backends.registry import control_files

    args = {"path": path, "content": "x"}
    d = run(tree, mode, "write", args, control=control_files())
    assert d.action == "ask" and "control file" in d.reason, d
    assert run(tree, "full", "write", args, control=control_files()).action == "allow"
    if path.startswith((".claude", "opencode")):  # a backend's own name: only the full list has it
        assert run(tree, mode, "write", args).action == "allow"
