"""The dispatcher enforces exactly the schema MCP publishes (#31.7: both
come from the declaration, the check is jsonschema's): for every action and
parameter, a value is taken by `dispatch.check` if and only if the
published `action_schema` accepts it (parameters whose values the action
checks itself, the backend names, aside)."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from zapcli.errors import UsageError
from zapcli.toolapi import dispatch
from zapcli.toolapi.schema import action_schema
from zapcli.toolapi.spec import ACTIONS

VALUES = [1, 2.5, "x", True, ["a"], [1], {"type": "object"}, "workspace", "running"]
FILLER = {"string": "x", "array": ["a"], "integer": 1, "number": 1, "boolean": True}


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.name)
def test_the_check_and_the_published_schema_agree(action):
    published = Draft202012Validator(action_schema(action))
    base = {p.name: (p.enum[0] if p.enum and not p.checked_by_action else FILLER[p.type])
            for p in action.params if p.required}
    for p in action.params:
        if p.checked_by_action:
            continue
        for value in VALUES:
            args = {**base, p.name: value}
            if p.type == "array" and isinstance(value, str):
                continue  # one id for a list of one: the dispatcher's leniency, on purpose
            accepted = published.is_valid(args)
            try:
                dispatch.check(action.name, args)
                took = True
            except UsageError as exc:
                took = False
                why = exc.message
            assert took == accepted, (action.name, p.name, value, None if took else why)


def test_an_unknown_parameter_and_a_wrong_type_are_named_as_the_caller_spelled_them():
    with pytest.raises(UsageError) as exc:
        dispatch.check("poll", {"ids": ["a"], "wait": 3})
    assert "`wait` is not a parameter of poll (its parameters: ids, wait_secs, no_wait)" in exc.value.message
    with pytest.raises(UsageError) as exc:
        dispatch.check("poll", {"ids": ["a"], "wait_secs": True})
    assert "`wait_secs` of poll must be an integer, got the boolean true" in exc.value.message
    with pytest.raises(UsageError) as exc:
        dispatch.check("list", {"status": "asleep"})
    assert "`status` of list must be one of queued, running" in exc.value.message
    assert dispatch.check("poll", {"ids": "abc", "wait_secs": 3.0})[1]["ids"] == ["abc"]
