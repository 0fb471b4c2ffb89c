"""Session membership markers: `spawn` writes the marker just before the trail,
so a marker without a trail is a spawn in progress until it is old."""

from __future__ import annotations

import os
import time

import pytest

from tests.conftest import isolate
from zapcli.config import Settings
from zapcli.lifecycle import queue
from zapcli.lifecycle import session as sessions
from zapcli.paths import state_dir


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)


def test_a_fresh_marker_without_a_trail_survives_a_drain():
    sessions.add("s1", "sa_20261130_0000aaaa")
    assert queue.drain("s1", Settings()) == []
    assert sessions.active("s1") == ["sa_20261130_0000aaaa"]
    assert sessions.members("s1") == ["sa_20261130_0000aaaa"]


def test_an_old_marker_without_a_trail_is_dropped():
    sessions.add("s1", "sa_20261130_0000bbbb")
    old = time.time_ns() - int(120e9)
    for kind in ("all", "active"):
        folder = state_dir() / "sessions" / sessions.key("s1") / kind
        (name,) = os.listdir(folder)
        os.rename(folder / name, folder / f"{old:020d}_{name.partition('_')[2]}")
    queue.drain("s1", Settings())
    assert sessions.active("s1") == [] and sessions.members("s1") == []
