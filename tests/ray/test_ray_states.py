"""The Ray pool's own states are typed (`ray_wire.PoolState`, `EndHow`,
`NodeState`) like a subagent's status: a status line read back as plain JSON
strings and the members agree, and a word a newer pool may say parses to None
instead of failing. Runs without Ray."""

from __future__ import annotations

import json

from zapcli.executors import ray_wire as wire


def test_pool_states_read_back_from_a_status_line_are_the_members():
    line = json.dumps({"subs": {"a": [wire.PoolState.PLACING.value, 3, None],
                                "b": [wire.PoolState.LOST.value, 9, "its Ray node died"]}})
    subs = json.loads(line)["subs"]
    placing, lost = (wire.PoolState.parse(subs[k][0]) for k in ("a", "b"))
    assert placing is wire.PoolState.PLACING and placing.open and placing.unplaced
    assert lost is wire.PoolState.LOST and not lost.open
    assert subs["a"][0] == wire.PoolState.PLACING and f"{lost}" == "lost"
    assert wire.PoolState.parse("evaporated") is None and wire.NodeState.parse(None) is None


def test_open_states_are_the_ones_whose_runner_may_still_run():
    assert [s.value for s in wire.PoolState if s.open] == ["submitted", "placing", "starting",
                                                           "running"]
    assert set(wire.OPEN_STATES) < set(wire.STATES)


def test_an_end_frame_parses_to_its_typed_how():
    for how in wire.EndHow:
        n, kind, got = wire.parse_frame(wire.end_frame(7, how.value))  # type: ignore[misc]
        assert (n, kind, got) == (7, "end", how) and got is how
    assert wire.parse_frame("7 end vanished\n") is None


def test_a_frame_carries_any_bytes_and_a_damaged_one_is_none():
    import os

    for data in (b"", b"\x00\xff\n", os.urandom(1000)):
        assert wire.parse_frame(wire.frame(7, "o", 12, data)) == (7, "o", 12, data)
    good = wire.frame(1, "t", 0, b"abcd").rstrip("\n")
    for bad in (good[:-1], good + "=", good.replace("YWJj", "YW$j"), good + "==="):
        assert wire.parse_frame(bad) is None, bad
