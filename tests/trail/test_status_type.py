"""`Status` (also `zapcli.api.Status`) is a str with one instance per status,
not an Enum (an Enum cost every command and runner its `enum` import): it
behaves as the `str` Enum it was wherever code or a user touches it."""

from __future__ import annotations

import copy
import json
import pickle

import orjson
import pytest

from zapcli.api import Status as Public
from zapcli.trail.model import ALL, Status


def test_a_status_is_its_string_everywhere():
    s = Status.COMPLETED
    assert s == "completed" and hash(s) == hash("completed") and {"completed": 1}[s] == 1
    assert f"{s}" == str(s) == s.value == "completed" and f"{s:>10}" == " completed"
    assert s.name == "COMPLETED" and repr(s) == "<Status.COMPLETED: 'completed'>"
    assert json.dumps({"s": s}) == '{"s": "completed"}' and orjson.loads(orjson.dumps([s])) == ["completed"]
    assert s.terminal and not s.live and Status.RUNNING.live and not Status.QUEUED.terminal


def test_one_instance_per_status_and_nothing_else():
    assert [str(s) for s in Status] == list(ALL) and len(Status) == len(ALL)
    assert all(Status(v) is getattr(Status, v.upper()) for v in ALL)
    assert pickle.loads(pickle.dumps(Status.LOST)) is Status.LOST
    assert copy.deepcopy(Status.TIMEOUT) is Status.TIMEOUT
    assert Status.parse("nope") is None and Status.parse(3) is None and Status.parse("failed") is Status.FAILED
    with pytest.raises(ValueError, match="not a valid Status"):
        Status("nope")
    assert Public is Status
