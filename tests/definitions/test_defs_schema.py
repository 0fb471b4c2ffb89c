"""Strict validation (docs/explanation/rules.md#definition-format): every problem named at file:line:col, nothing defaulted."""

from __future__ import annotations

import pytest

from zapcli.definitions import Definition, parse_definition
from zapcli.definitions.yamlload import MAX_ALIASES

FULL = """\
name: full-agent
description: Does everything.
tools: [read, grep]
skills: [pdf, pdf, charts]
mcp:
  servers: [github]
knowledge:
  - {name: docs, path: "docs/**/*.md"}
memory: private
maxTurns: 12
model: gpt-test
env: [GITHUB_TOKEN]
prompt: |
  Line one.
  Line two.
"""


def diags_of(text: str) -> list[str]:
    definition, diags = parse_definition(text, "f.yaml")
    assert definition is None, "expected the definition to be refused"
    return [str(d) for d in diags]


def test_full_definition_loads_every_dimension() -> None:
    d, diags = parse_definition(FULL, "f.yaml")
    assert diags == []
    assert d.name == "full-agent" and d.skills == ("pdf", "charts")
    assert d.mcp_servers == ("github",) and d.knowledge[0].path == "docs/**/*.md"
    assert (d.memory, d.max_turns, d.model, d.env) == ("private", 12, "gpt-test", ("GITHUB_TOKEN",))
    assert d.prompt == "Line one.\nLine two.\n"


def test_defaults_when_keys_are_absent() -> None:
    d, _ = parse_definition("name: a\ndescription: b\n", "f.yaml")
    assert (d.tools, d.skills, d.mcp_servers, d.knowledge) == ((), (), (), ())
    assert (d.memory, d.max_turns, d.model, d.prompt) == ("none", 40, None, "")


def test_round_trip_through_the_spawn_record() -> None:
    d, _ = parse_definition(FULL, "f.yaml", layer="system")
    again = Definition.from_dict(d.to_dict())
    assert again == d


def test_missing_required_keys() -> None:
    out = diags_of("tools: [read]\n")
    assert any("missing required key 'name'" in o for o in out)
    assert any("missing required key 'description'" in o for o in out)


@pytest.mark.parametrize("body, expected", [
    ("name: Bad_Name\n", "f.yaml:1:7: name 'Bad_Name' is not valid"),
    ("name: 123\n", "`name` must be text, not the number 123"),
    ("maxTurns: yes\n", "`maxTurns` must be a whole number"),
    ("maxTurns: 0\n", "`maxTurns` must be a whole number"),
    ("memory: maybe\n", "`memory` must be one of none, private, shared"),
    ("memory: on\n", "`memory: on` is YAML's boolean true"),
    ("skills: pdf\n", "`skills` must be a list"),
    ("env: {A: b}\n", "`env` must be a list"),
    ("env: [has-dash]\n", "'has-dash' is not a valid name in `env`"),
    ("mcp: [github]\n", "`mcp` must be a mapping"),
    ("mcp: {server: [a]}\n", "unknown key 'server' (did you mean 'servers'?)"),
    ("knowledge: [{name: k, path: /etc/*}]\n", "it is an absolute path"),
    ("knowledge: [{name: k, path: '../up/*.md'}]\n", "it escapes the workspace"),
    ("knowledge: [{name: k, path: 'a/../../b'}]\n", "it escapes the workspace"),
    ("knowledge: [{name: k}]\n", "knowledge entry lacks path"),
    ("knowledge: [{name: k, path: a, extra: 1}]\n", "unknown key 'extra'"),
    ("prompt:\n", "`prompt` must be text, not nothing (null)"),
    ("model: ''\n", "`model` is empty"),
    ("max_turns: 3\n", "unknown key 'max_turns' (did you mean 'maxTurns'?)"),
    ("descripton: x\n", "unknown key 'descripton' (did you mean 'description'?)"),
    ("<<: {tools: [read]}\n", "merge keys (<<) are not supported"),
    ("tools: [[read]]\n", "each entry of `tools` must be a name, not a list"),
    ("skills: [" + ", ".join(f"s{i}" for i in range(17)) + "]\n", "at most 16"),
])
def test_wrong_values_are_diagnostics(body: str, expected: str) -> None:
    out = diags_of("name: a\ndescription: d\n" + body if not body.startswith("name") else
                   body + "description: d\n")
    assert any(expected in o for o in out), out


def test_every_problem_is_reported_at_its_position() -> None:
    out = diags_of("name: a\ndescription: d\ntools: [Serch]\nmemory: no\nfoo: 1\n")
    assert [o.split(": ")[0] for o in out] == ["f.yaml:3:9", "f.yaml:4:9", "f.yaml:5:1"]


def test_not_a_mapping() -> None:
    assert "must be a mapping" in diags_of("- name: a\n")[0]


def test_two_documents() -> None:
    assert "more than one YAML document" in diags_of("name: a\ndescription: b\n---\nname: c\n")[0]


def test_only_comments_is_empty() -> None:
    assert "the file is empty" in diags_of("# nothing here\n\n")[0]


def test_tab_after_a_key_is_named() -> None:
    out = diags_of("name: a\ndescription:\tb\n")
    assert out[0].startswith("f.yaml:2:13: a tab character")


def test_value_starting_with_star_gets_quote_hint() -> None:
    out = diags_of("name: a\ndescription: *important*\n")
    assert 'quote the value: description: "*important*"' in out[0]


def test_backtick_value_gets_quote_hint() -> None:
    out = diags_of("name: a\ndescription: `code` helper\n")
    assert 'quote the value: description: "`code` helper"' in out[0]


def test_a_few_aliases_are_fine() -> None:
    d, diags = parse_definition("name: a\ndescription: &d the same\nprompt: *d\n", "f.yaml")
    assert diags == [] and d.prompt == "the same"


def test_alias_budget() -> None:
    many = "x: &x [read]\n" + "".join(f"y{i}: *x\n" for i in range(MAX_ALIASES + 1))
    out = diags_of("name: a\ndescription: d\n" + many)
    assert "alias" in out[0] and "refused" in out[0]


def test_wide_alias_expansion_is_refused() -> None:
    # Few aliases, but each level multiplies: 1000 * 10 * 10 values.
    text = "name: a\ndescription: d\nl0: &l0 [" + ", ".join(["v"] * 1000) + "]\n"
    text += "l1: &l1 [" + ", ".join(["*l0"] * 10) + "]\n"
    text += "l2: &l2 [" + ", ".join(["*l1"] * 10) + "]\n"
    assert "expand to more than" in diags_of(text)[0]


def test_recursive_alias_is_refused() -> None:
    assert "recursive alias" in diags_of("name: a\ndescription: d\nskills: &s [*s]\n")[0]


def test_not_utf8() -> None:
    from zapcli.definitions.yamlload import read_text

    _, diags = read_text(b"name: a\ndescription: \xff\n", "f.yaml")
    assert str(diags[0]).startswith("f.yaml:2:14: the file is not UTF-8")


def test_huge_file_is_refused() -> None:
    out = diags_of("name: a\ndescription: d\nprompt: " + "x" * 300_000 + "\n")
    assert "larger than" in out[0]


def test_a_diagnostic_never_quotes_a_whole_file():
    """Tryout: a definition symlinked to /etc/passwd printed the file in `agents list`."""
    long_text = "root:x:0:0:root:/root:/bin/bash " * 40
    diags = diags_of(long_text)
    assert diags and all(len(d) <= 240 + len("f.yaml:1:1: ") for d in diags)
    assert long_text[:120] not in " ".join(diags)  # a short quote, not the content


def test_an_unclosed_bracket_is_pointed_at_where_it_opened():
    """Tryout: the hint said to quote the next line's value, which fixes nothing."""
    diags = diags_of("name: bad3\ndescription: [unclosed\nprompt: hi\n")
    text = "\n".join(diags)
    assert "close the bracket opened at line 2, column 14" in text
    assert 'prompt: "hi"' not in text


def test_sandbox_loads_and_round_trips() -> None:
    d, diags = parse_definition("name: a\ndescription: b\nsandbox: {network: true, writable: [., /srv/cache]}\n",
                                "f.yaml")
    assert diags == [] and d.sandbox is not None
    assert (d.sandbox.network, d.sandbox.writable) == (True, (".", "/srv/cache"))
    assert Definition.from_dict(d.to_dict()).sandbox == d.sandbox
    assert d.to_file_dict()["sandbox"] == {"network": True, "writable": [".", "/srv/cache"]}
    bare, _ = parse_definition("name: a\ndescription: b\n", "f.yaml")
    assert bare.sandbox is None and "sandbox" not in bare.to_dict()  # undeclared: nothing frozen
    more, diags = parse_definition("name: a\ndescription: b\nsandbox: {sockets: [/run/x.sock, "
                                   "~/.ssh/agent], scratch_size: 2G}\n", "f.yaml")
    assert diags == [] and more.sandbox is not None
    assert more.sandbox.sockets == ("/run/x.sock", "~/.ssh/agent")
    assert more.sandbox.scratch_size == 2 << 30
    assert Definition.from_dict(more.to_dict()).sandbox == more.sandbox
    plain, _ = parse_definition("name: a\ndescription: b\nsandbox: {scratch_size: 1048576}\n", "f")
    assert plain.sandbox is not None and plain.sandbox.scratch_size == 1 << 20


@pytest.mark.parametrize("text,expected", [
    ("sandbox: {netwrk: true}", "f.yaml:3:11: unknown key 'netwrk' (did you mean 'network'?)"),
    ("sandbox: {writeable: [a]}", "unknown key 'writeable' (did you mean 'writable'?)"),
    ("sandbx: {network: true}", "unknown key 'sandbx' (did you mean 'sandbox'?)"),
    ("sandbox: {network: \"yes\"}", "`sandbox.network` must be true or false, not the text 'yes'"),
    ("sandbox: {writable: build}", "`sandbox.writable` must be a list of folders, not the text"),
    ("sandbox: {writable: [3]}", "each entry of `sandbox.writable` must be a folder, not the number 3"),
    ("sandbox: off", "`sandbox` must be a mapping of keys, not the boolean false"),
    ("sandbox: {sockets: /run/x.sock}", "`sandbox.sockets` must be a list of unix sockets"),
    ("sandbox: {sockets: [docker.sock]}", "`sandbox.sockets` takes absolute paths; 'docker.sock'"),
    ("sandbox: {scratch_size: lots}", "`sandbox.scratch_size`: expected a size such as 512M"),
    ("sandbox: {scratch_size: -5}", "`sandbox.scratch_size`: expected a size such as 512M"),
    ("sandbox: {scratch_size: [1]}", "`sandbox.scratch_size`: expected a size such as 512M, 2G "
                                     "or 1073741824 (bytes), got a list"),
])
def test_sandbox_mistakes_are_named_where_they_are(text: str, expected: str) -> None:
    found = diags_of(f"name: a\ndescription: b\n{text}\n")
    assert any(expected in d for d in found), found
