"""`zapcli top` driven in-process by Textual's headless pilot (`App.run_test`),
over REAL subagents the test spawns with the CLI.

`top_session(zap, scenario)` runs `scenario(top)` inside the app: `top.press`
types keys as a person would, `top.until(cond)` waits (never a bare sleep),
`top.table_text()` is the table as drawn and `top.peek_text()` the peek
pane's text. Tests skip, saying why, when Textual is not installed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

textual = pytest.importorskip("textual", reason="the tui extra is not installed: "
                              "pip install -e '.[tui]' (make install does it)")


class Top:
    """The running app and its pilot, with the words a test needs."""

    def __init__(self, app: Any, pilot: Any):
        self.app, self.pilot = app, pilot

    @property
    def screen(self) -> Any:
        return self.app.fleet

    async def press(self, *keys: str) -> None:
        await self.pilot.press(*keys)
        await self.pilot.pause()

    async def type(self, text: str) -> None:
        await self.press(*[{" ": "space", "/": "slash"}.get(c, c) for c in text])

    async def click(self, selector: str, **kw: Any) -> None:
        """Click `selector` once it is on screen and laid out (a widget just shown has no region
        until the next layout: a click then lands elsewhere); the click must land on it."""
        await self.until(lambda: self.app.screen.query_one(selector).region.area > 0, 10,
                         f"{selector} drawn")
        await self.pilot.pause()
        assert await self.pilot.click(selector, **kw), f"the click missed {selector}"

    async def until(self, cond: Callable[[], object], timeout: float = 30.0, what: str = "") -> Any:
        end = time.monotonic() + timeout
        while True:
            value = cond()
            if value:
                return value
            if time.monotonic() > end:
                raise AssertionError(f"not within {timeout}s: {what or cond}\n--- table ---\n"
                                     f"{self.table_text()}\n--- peek ---\n{self.peek_text()}")
            await self.pilot.pause(0.05)

    def table_text(self) -> str:
        table = self.screen.table
        return "\n".join(table.render_line(y).text.rstrip() for y in range(max(len(table.lines), 1) + 1))

    def peek_text(self) -> str:
        from textual.widgets import Static

        parts = []
        for w in self.screen.peek.query(Static):
            if w.display and (w.parent is None or w.parent.display):
                parts.append(str(w.content))
        return "\n".join(parts)

    def ask_text(self) -> str:
        from textual.widgets import Static

        box = self.screen.peek.query_one("#ask")
        if not box.has_class("on"):
            return ""
        return str(self.screen.peek.query_one("#ask-text", Static).content)

    def row(self, sid: str) -> Any:
        return self.screen.rows.get(sid)

    def status(self, sid: str) -> str | None:
        row = self.row(sid)
        return str(row.view.status) if row is not None else None


def run_top(scenario: Callable[[Top], Awaitable[None]], *, size: tuple[int, int] = (160, 48),
            **options: Any) -> None:
    """Run `scenario` inside `zapcli top` (this process's environment: the
    `zap` fixture's state folder and session)."""
    from zapcli.cli.settings import for_observers
    from zapcli.tui.app import TopApp

    async def main() -> None:
        app = TopApp(for_observers(), **options)
        async with app.run_test(size=size, notifications=True) as pilot:
            top = Top(app, pilot)
            await top.until(lambda: app.fleet.loaded, 30, "the first look")
            await scenario(top)

    asyncio.run(main())
