"""Definitions through the real CLI (docs/explanation/rules.md#definition-format): C13/C14 at spawn, the exact tool
list and prompt sections a model receives, the agents commands, precedence,
and the frozen spawn record."""

from __future__ import annotations

import pytest

from zapcli.testing import ScriptedServer

pytestmark = pytest.mark.usefixtures("own_workspace")  # definitions the user wrote for themselves


@pytest.fixture
def server(zap):
    srv = ScriptedServer([{"turns": [{"text": "done"}], "loop": True}])
    srv.start()
    zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="session-model", OPENAI_API_KEY="sk-x-123456789")
    yield srv
    srv.stop()


def _defs(zap):
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _spawn_ok(zap, *args):
    proc = zap("spawn", *args)
    assert proc.returncode == 0, proc.err
    sid = proc.out.strip()
    assert zap("wait", sid, "--timeout", "30").returncode == 0, zap("poll", sid).out
    return sid


def test_c13_one_bad_file_does_not_hide_the_others(zap, server):
    d = _defs(zap)
    (d / "reviewer.yaml").write_text("name: reviewer\ndescription: Reviews diffs. Use when: ready\ntools: [read]\n")
    (d / "helper.yaml").write_text("name: helper\ndescription: helps\ntools: [read]\n")
    bad = zap("spawn", "--agent", "reviewer", "--", "review")
    assert bad.returncode == 1 and "Traceback" not in bad.err
    assert "reviewer.yaml:2:" in bad.err and "quote" in bad.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").glob("*.jsonl"))
    _spawn_ok(zap, "--agent", "helper", "--", "help")


@pytest.mark.parametrize("body,needle", [
    ("name: t\ndescription: d\ntools:\n\t- read\n", "tab"),
    ("name: t\ndescription: d\nmemory: no\n", "memory: none"),
    ("name: t\ndescription: d\ntools: [read]\ntools: [grep]\n", "twice"),
    ("", "empty"),
    ("name: t\ndescription: d\ntools: Read, Grep\n", "list"),
    ("name: t\ndescription: d\ntools: [Read, Serch]\n", "Serch"),
    ("name: t\ndescription: d\nallowedTools: [Read]\n", "did you mean 'tools'"),
    ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
     "d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\nname: t\ndescription: d\n", "alias"),
])
def test_c13_c14_bad_definitions_are_clear_diagnostics(zap, server, body, needle):
    (_defs(zap) / "t.yaml").write_text(body)
    proc = zap("spawn", "--agent", "t", "--", "x")
    assert proc.returncode == 1, proc.out
    assert needle in proc.err and "t.yaml:" in proc.err and "Traceback" not in proc.err
    listed = zap("agents", "list")
    assert listed.returncode == 0 and "t.yaml" in listed.out  # shown, not hidden


def test_did_you_mean_is_only_a_close_match_and_a_duplicate_name_says_where(zap):
    """new user: the unknown tool `nope` got "did you mean 'read'?" (an anagram
    of the synonym `open`), and a name defined twice was reported at line 0,
    column 0. Now: a suggestion only for a close misspelling; each file's
    `name:` line."""
    d = _defs(zap)
    (d / "t.yml").write_text("name: t\ndescription: d\ntools: [nope, grpe, Serch]\n")
    (d / "one.yml").write_text("# first\ndescription: one\nname: dup\n")
    (d / "two.yml").write_text("description: two\n\n\nname: dup\n")
    diags = {(x["file"].rsplit("/", 1)[-1], x["message"]): (x["line"], x["column"])
             for x in zap.json("agents", "list")["diagnostics"]}
    messages = [m for _, m in diags]
    assert "unknown tool 'nope'" in messages  # no did-you-mean
    assert "unknown tool 'grpe' (did you mean 'grep'?)" in messages
    assert "unknown tool 'Serch' (did you mean 'grep'?)" in messages
    (dup,) = [(f, m) for f, m in diags if "also defined" in m]
    assert dup[0] == "two.yml" and diags[dup] == (4, 1)
    assert f"also defined in {d / 'one.yml'}:3:1," in dup[1]


def test_declared_tools_are_exactly_what_the_model_receives(zap, server):
    (_defs(zap) / "narrow.yaml").write_text("name: narrow\ndescription: d\ntools: [read, GREP, Read]\n")
    _spawn_ok(zap, "--agent", "narrow", "--", "narrow job")
    req = server.requests[-1]
    assert [t["function"]["name"] for t in req["tools"]] == ["read", "grep"]
    system = req["messages"][0]["content"]
    for section in ("skill", "knowledge", "MCP", "memory"):
        assert section.lower() not in system.lower()


def test_knowledge_and_memory_add_exactly_their_tools_and_sections(zap, server):
    (zap.cwd / "docs").mkdir()
    (zap.cwd / "docs" / "guide.md").write_text("# Guide\nAlways quote YAML values.\n")
    mem = zap.cwd / ".zapcli" / "agent-memory" / "kbuser"
    mem.mkdir(parents=True)
    (mem / "notes.md").write_text("Remember: the build uses make.\n")
    (_defs(zap) / "kbuser.yaml").write_text(
        "name: kbuser\ndescription: d\ntools: [read]\nknowledge:\n  - {name: docs, path: 'docs/*.md'}\nmemory: private\n")
    _spawn_ok(zap, "--agent", "kbuser", "--", "kb job")
    req = server.requests[-1]
    names = [t["function"]["name"] for t in req["tools"]]
    assert names == ["read", "kb_search", "memory_read", "memory_search", "memory_write"]
    system = req["messages"][0]["content"]
    assert "docs" in system and "Remember: the build uses make." in system


def test_model_precedence_flag_override_definition_session(zap, server):
    (_defs(zap) / "pinned.yaml").write_text("name: pinned\ndescription: d\nmodel: def-model\n")
    _spawn_ok(zap, "--agent", "pinned", "--", "p1")
    assert server.requests[-1]["model"] == "def-model"
    assert zap("agents", "model", "pinned", "override-model").returncode == 0
    _spawn_ok(zap, "--agent", "pinned", "--", "p2")
    assert server.requests[-1]["model"] == "override-model"
    _spawn_ok(zap, "--agent", "pinned", "--model", "flag-model", "--", "p3")
    assert server.requests[-1]["model"] == "flag-model"
    assert zap("agents", "model", "pinned", "--clear").returncode == 0
    (_defs(zap) / "plain.yaml").write_text("name: plain\ndescription: d\n")
    _spawn_ok(zap, "--agent", "plain", "--", "p4")
    assert server.requests[-1]["model"] == "session-model"


def test_disabled_definition_is_refused_and_switch_is_not_in_the_yaml(zap, server):
    path = _defs(zap) / "paused.yaml"
    path.write_text("name: paused\ndescription: d\n")
    before = path.read_bytes()
    assert zap("agents", "disable", "paused").returncode == 0
    proc = zap("spawn", "--agent", "paused", "--", "x")
    assert proc.returncode == 1 and "disabled" in proc.err
    assert path.read_bytes() == before
    assert zap("agents", "enable", "paused").returncode == 0
    _spawn_ok(zap, "--agent", "paused", "--", "x")


def test_editing_the_yaml_after_spawn_changes_nothing(zap, server):
    path = _defs(zap) / "frozen.yaml"
    path.write_text("name: frozen\ndescription: d\ntools: [read]\n")
    sid = _spawn_ok(zap, "--agent", "frozen", "--", "frozen job")
    path.write_text("name: frozen\ndescription: d\ntools: [bash, write]\n")
    spawn = zap.json("replay", sid)["records"][0]
    assert spawn["grant"]["tools"] == ["read"]


def test_agents_save_refuses_builtin_names_and_invalid_files(zap, tmp_path):
    good = tmp_path / "mine.yaml"
    good.write_text("name: mine\ndescription: mine\ntools: [read]\n")
    assert zap("agents", "save", str(good), "--scope", "workspace").returncode == 0
    assert (zap.cwd / ".zapcli" / "subagents").exists()
    clash = tmp_path / "clash.yaml"
    clash.write_text("name: explorer\ndescription: x\n")
    proc = zap("agents", "save", str(clash))
    assert proc.returncode != 0 and "built-in" in proc.err
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: broken\ndescription: x\nknowledge: [{name: k, path: docs}]\n")
    proc = zap("agents", "save", str(broken))
    assert proc.returncode != 0 and "read" in proc.err
    shown = zap.json("agents", "show", "mine")
    assert shown["definition"]["tools"] == ["read"]
    assert zap("agents", "delete", "mine").returncode == 0
    assert zap("agents", "show", "mine").returncode == 1


def test_save_never_deletes_a_hand_written_file_of_the_same_name(zap, tmp_path):
    """new user: `agents save mine-new.yml` deleted `mine2.yaml`, written by hand
    with the same `name: mine`. The save is refused, naming that file and the
    way out, and nothing is written; zapcli's own unchanged copies still go."""
    theirs = _defs(zap) / "mine2.yaml"
    theirs.write_text("name: mine\ndescription: by hand\ntools: [read]\n")
    new = zap.cwd / "mine-new.yml"
    new.write_text("name: mine\ndescription: new\ntools: [read, grep]\n")
    proc = zap("agents", "save", str(new))
    assert proc.returncode == 1 and "Traceback" not in proc.err
    assert str(theirs) in proc.err and "Remove or rename it yourself" in proc.err
    assert theirs.read_text() == "name: mine\ndescription: by hand\ntools: [read]\n"
    assert sorted(p.name for p in _defs(zap).iterdir()) == ["mine2.yaml"]
    # zapcli's own save, unchanged, is replaced on a rename; edited by hand, it is kept.
    new.write_text("name: first\ndescription: new\ntools: [read]\n")
    assert zap("agents", "save", str(new)).returncode == 0
    new.write_text("name: second\ndescription: new\ntools: [read]\n")
    assert "removed old file" in zap("agents", "save", str(new), check=True).out
    assert sorted(p.name for p in _defs(zap).iterdir()) == ["mine2.yaml", "second.yml"]
    with (_defs(zap) / "second.yml").open("a") as f:
        f.write("# my note\n")
    new.write_text("name: third\ndescription: new\ntools: [read]\n")
    proc = zap("agents", "save", str(new))
    assert proc.returncode == 1 and str(_defs(zap) / "second.yml") in proc.err
    assert sorted(p.name for p in _defs(zap).iterdir()) == ["mine2.yaml", "second.yml"]


def test_a_workspace_definition_replacing_a_builtin_is_announced(zap, server):
    (_defs(zap) / "explorer.yml").write_text("name: explorer\ndescription: mine\ntools: [read, bash]\n")
    proc = zap("spawn", "--agent", "explorer", "--", "x")
    assert proc.returncode == 0
    assert "replaces the built-in" in proc.err and "explorer.yml" in proc.err
    assert "shadows builtin:explorer.yml" in zap("agents", "list").out


def test_grant_diagnostics_are_shown_at_spawn(zap, server):
    (_defs(zap) / "kbonly.yaml").write_text(
        "name: kbonly\ndescription: d\ntools: [glob]\nskills: [nosuch-skill]\n")
    proc = zap("spawn", "--agent", "kbonly", "--", "x")
    assert proc.returncode == 0 and "nosuch-skill" in proc.err


def test_agents_show_reports_what_a_spawn_would_drop(zap):
    (_defs(zap) / "kbnoread.yaml").write_text(
        "name: kbnoread\ndescription: d\ntools: [glob]\nknowledge:\n  - {name: docs, path: '*.md'}\n")
    (zap.cwd / "a.md").write_text("x\n")
    doc = zap.json("agents", "show", "kbnoread")
    assert any(g["dimension"] == "knowledge" and "read" in g["message"] for g in doc["grant_diagnostics"])
    assert "knowledge" in zap("agents", "show", "kbnoread").out


def test_invalid_definitions_are_named_as_invalid_everywhere(zap, tmp_path):
    """#14.5: `agents show` does not say `enabled: True` for a file spawn would
    refuse; doctor's definitions line names the invalid ones; `agents save`
    names the definition by its `name:`, not by the file's stem."""
    d = _defs(zap)
    (d / "bad.yml").write_text("name: bad\ndescription: x\ntools: [rread]\n")
    (d / "worse.yml").write_text("name: worse\ndescripton: x\n")
    shown = zap("agents", "show", "bad").out
    assert "enabled" not in shown and "invalid: not loaded, spawn refuses it" in shown
    assert "  enabled   model:" in zap("agents", "show", "explorer").out
    assert zap("agents", "disable", "explorer").returncode == 0
    assert "disabled (zapcli agents enable explorer)" in zap("agents", "show", "explorer").out
    head = next(x for x in zap("doctor").out.splitlines() if x.startswith("FAIL definitions"))
    assert head.startswith("FAIL definitions: 2 invalid, not loaded (spawn --agent refuses them): "
                           "bad, worse; "), head
    (tmp_path / "b1.yml").write_text("name: realname\ndescription: y\nmemory: no\n")
    res = zap("agents", "save", "../b1.yml")
    assert res.returncode == 1 and "'realname' is invalid" in res.err and "'b1'" not in res.err, res.err


def test_show_says_a_definition_works_the_board(zap):
    """new user, round 6: docs/how-to/teams.md declares `team: true` then runs
    `agents show worker` — which listed `tools: read, grep` and nothing of the
    board and message tools the definition gets, nor the task labels it serves."""
    (_defs(zap) / "worker.yml").write_text("name: worker\ndescription: d\ntools: [read, grep]\n"
                                           "team: true\nboard: {labels: [review]}\n")
    zap("trust", check=True)
    shown = zap("agents", "show", "worker", check=True).out
    assert "  team: board and message tools (team: true); serves task labels: review\n" in shown, shown
    assert "team:" not in zap("agents", "show", "explorer", check=True).out
