"""Tool arguments are held to the WHOLE JSON Schema a tool declares (#31.7:
jsonschema instead of a hand-written subset): a plugin's `pattern`, nested
objects and array bounds hold too, while the leniency models need stays
("5" for 5, "true" for true, null for not given)."""

from __future__ import annotations

import pytest

from zapcli.agent.arguments import ArgumentError, check_args
from zapcli.agent.types import ToolSpec

PLUGIN = ToolSpec("deploy", "A plugin's tool with a richer schema.", {
    "type": "object", "additionalProperties": False, "required": ["name", "hosts"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$", "maxLength": 20},
        "hosts": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "opts": {"type": "object", "additionalProperties": False,
                 "properties": {"depth": {"type": "integer", "minimum": 1}}},
        "dry_run": {"type": ["boolean", "null"]},
        "retries": {"type": "integer", "maximum": 5},
    }})


@pytest.mark.parametrize("args, needle", [
    ({"name": "Bad Name!", "hosts": ["a"]}, "argument `name`: 'Bad Name!' does not match"),
    ({"name": "x" * 30, "hosts": ["a"]}, "argument `name`: "),
    ({"name": "ok", "hosts": []}, "argument `hosts`: [] should be non-empty"),
    ({"name": "ok", "hosts": ["a"], "opts": {"depth": "deep"}},
     "argument `opts.depth` must be a whole number, got 'deep'"),
    ({"name": "ok", "hosts": ["a"], "opts": {"depth": 0}}, "argument `opts.depth` must be at least 1"),
    ({"name": "ok", "hosts": ["a"], "opts": {"color": "red"}}, "argument `opts`: "),
    ({"name": "ok", "hosts": ["a", 7]}, "argument `hosts` must be a list of strings (item 1 is 7)"),
    ({"name": "ok", "hosts": ["a"], "retries": "9"}, "argument `retries` must be at most 5, got 9"),
    ({"name": "ok", "hosts": ["a"], "dry_run": "perhaps"}, "argument `dry_run` must be true or false"),
    ({"hosts": ["a"]}, "missing required argument(s) name for `deploy`"),
    ({"name": "ok", "hosts": ["a"], "force": True}, "unknown argument(s) force for `deploy`"),
])
def test_every_keyword_of_the_schema_holds(args, needle):
    with pytest.raises(ArgumentError) as exc:
        check_args(PLUGIN, args)
    assert needle in str(exc.value)


def test_what_models_often_slip_on_is_taken_as_meant():
    got = check_args(PLUGIN, {"name": "web-1", "hosts": ["h"], "retries": "3", "dry_run": "true",
                              "opts": None})
    assert got == {"name": "web-1", "hosts": ["h"], "retries": 3, "dry_run": True}
    assert check_args(PLUGIN, {"name": "a", "hosts": ["h"], "retries": 2.0})["retries"] == 2
    assert isinstance(check_args(PLUGIN, {"name": "a", "hosts": ["h"], "retries": 2.0})["retries"], int)


def test_a_schema_jsonschema_cannot_apply_is_said_not_raised():
    broken = ToolSpec("odd", "d", {"type": "object", "properties": {"x": {"type": "colour"}}})
    with pytest.raises(ArgumentError) as exc:
        check_args(broken, {"x": 1})
    assert "cannot be applied" in str(exc.value)
