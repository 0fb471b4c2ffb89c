"""A stderr spinner for waits on a terminal; does nothing otherwise.

Imports rich only when enabled, so scripts and pipes pay nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


class Spinner:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._status: Any = None

    def __enter__(self) -> Spinner:
        if self.enabled:
            from rich.console import Console

            self._status = Console(stderr=True).status("waiting…")
            self._status.__enter__()
        return self

    def update(self, text: str) -> None:
        if self._status is not None:
            self._status.update(text)

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.__exit__(None, None, None)
