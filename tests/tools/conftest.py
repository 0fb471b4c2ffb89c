"""Fixtures for the built-in tool tests: a workspace context and a polling wait."""

from __future__ import annotations

import os
import time

import pytest

from zapcli.agent.types import ToolContext
from zapcli.tools.env import scrubbed_env


@pytest.fixture
def ctx(tmp_path) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ToolContext(workspace=str(ws), cwd=str(ws), env=scrubbed_env(os.environ))


@pytest.fixture
def wait_until():
    def _wait(condition, timeout: float = 10.0, interval: float = 0.05) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if condition():
                return True
            time.sleep(interval)
        return bool(condition())
    return _wait
