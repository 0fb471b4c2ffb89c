"""Processes this process starts that may outlive it — MCP servers, the
commands the agent runs — in their own process groups. Imports nothing of
zapcli.

Whoever starts one calls `started(pid, name)`; the runner `listen`s and
records each in its trail (pid, create time, process group) before it is
used, so that if the runner dies without cleaning up (SIGKILL, OOM) the
observer that records `lost` can find them and end them (C17).
"""

from __future__ import annotations

from collections.abc import Callable

_listeners: list[Callable[[int, str], None]] = []


def listen(fn: Callable[[int, str], None]) -> None:
    _listeners.append(fn)


def started(pid: int, name: str) -> None:
    """Tell the listeners; a listener's failure never fails the start."""
    for fn in list(_listeners):
        try:
            fn(pid, name)
        except Exception:  # noqa: BLE001 - recording is best effort
            pass
