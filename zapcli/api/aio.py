"""The Python API for asyncio: the same verbs, parameters and results as
`zapcli.api`, as coroutines that never block the event loop.

Imports `asyncio`, `zapcli.api.verbs`, `zapcli.ops.poll`,
`zapcli.lifecycle.wake`. `wait` and `poll` wait as the CLI waits — woken at
once by an awaited subagent's end through the same inotify watch
(`lifecycle.wake.Waker`, its descriptor handed to the loop with
`add_reader`), with the CLI's 500 ms look as the fallback — and each look
(a few file reads) runs in the default thread executor. The other verbs
(spawn starts a process; kill waits for the grace period) run whole in the
executor. Cancelling a `wait` stops it at once; the subagents keep running,
as after Ctrl-C on `zapcli wait`.

    from zapcli.api import aio

    async def fan_out(tasks):
        ids = [(await aio.spawn(t, cli="sh")).id for t in tasks]
        done = await aio.wait(ids, timeout=600)
        return [await aio.output(s.id) for s in done.subagents]
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import time
from typing import Any

from zapcli.api import verbs
from zapcli.api.results import (
    CapturedOutput,
    Decision,
    KillResult,
    Listing,
    PollResult,
    Sent,
    Spawned,
    WaitResult,
)
from zapcli.errors import ZapcliError

__all__ = ["spawn", "spawn_attempts", "poll", "wait", "list", "kill", "output", "send",
           "approve", "deny"]


async def _in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))


async def _sleep(waker: Any, seconds: float) -> None:
    """Until `seconds` pass or the waker's inotify descriptor brings an
    event that wakes it (an awaited end); the loop runs meanwhile."""
    seconds = waker.nap(seconds)
    fd = waker.fileno()
    if fd is None:  # no inotify here: the interval alone
        await asyncio.sleep(seconds)
        return
    loop = asyncio.get_running_loop()
    woke = loop.create_future()

    def readable() -> None:
        if waker.woken() and not woke.done():
            woke.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await asyncio.wait_for(woke, max(seconds, 0.0))
    except asyncio.TimeoutError:
        pass
    finally:
        loop.remove_reader(fd)


def _waker(ids: builtins.list[str], wake_on: tuple[bytes, ...]) -> Any:
    from zapcli.lifecycle.wake import Waker

    return Waker(ids, wake_on)


async def spawn(task: str, **options: Any) -> Spawned:
    """`zapcli.api.spawn`, in the executor (it starts a process)."""
    return await _in_thread(verbs.spawn, task, **options)  # type: ignore[no-any-return]


async def spawn_attempts(task: str, attempts: int | None = None, **options: Any) -> tuple[Spawned, ...]:
    """`zapcli.api.spawn_attempts`, in the executor."""
    return await _in_thread(verbs.spawn_attempts, task, attempts, **options)  # type: ignore[no-any-return]


async def poll(ids: verbs.Ids, *, wait_secs: int | None = None, no_wait: bool = False) -> PollResult:
    """`zapcli.api.poll`: waits up to 5 s + `wait_secs` for them to end or
    ask for approval, without blocking the loop."""
    from zapcli.ops import poll as ops

    try:
        verbs.checked(wait_secs=wait_secs, no_wait=no_wait)
        if ids is not None and not verbs.id_list(ids):  # an empty list: none, at once
            return await _in_thread(verbs.poll, [], wait_secs=wait_secs, no_wait=no_wait)  # type: ignore[no-any-return]
        asked, budget = ops.poll_plan(verbs.id_list(ids), wait_secs=wait_secs, no_wait=no_wait)
        settings = await _in_thread(verbs.settings)
        start = time.monotonic()
        waker = _waker(asked, ops.ENDS_OR_ASKS) if budget > 0 else None
        try:
            entries, done = await _in_thread(ops.poll_look, asked, settings)
            while not done and time.monotonic() - start < budget:
                left = budget - (time.monotonic() - start)
                await _sleep(waker, min(ops.TICK_S, max(left, 0.0)))
                entries, done = await _in_thread(ops.poll_look, asked, settings)
        finally:
            if waker is not None:
                waker.close()
        res = await _in_thread(ops.poll_result, entries, time.monotonic() - start)
        return verbs.poll_result(res)
    except ZapcliError as exc:
        raise verbs.respelled(exc) from None


async def wait(ids: verbs.Ids | None = None, *, timeout: float | None = None,
               any: bool = False) -> WaitResult:  # noqa: A002 - the CLI's --any
    """`zapcli.api.wait`: until every one (`any`: one) has ended or
    `timeout` passes, woken by an end at once; the loop runs meanwhile.
    Cancelling it leaves the subagents running."""
    from zapcli.ops import poll as ops

    try:
        verbs.checked(timeout=timeout, any=any)
        given = verbs.given_ids(ids)  # None: the session's; an empty list: nothing
        if given is None:
            given = await _in_thread(ops.outstanding)
        asked = ops.wait_plan(given, timeout)
        if not asked:
            return verbs.wait_result(ops.WaitResult([], False, 0.0))
        settings = await _in_thread(verbs.settings)
        start = time.monotonic()
        seen: dict[str, Any] = {}
        gone: dict[str, Any] = {}  # removed meanwhile: counted by the end it had
        with _waker(asked, ops.ENDS) as waker:
            while True:
                views, over = await _in_thread(ops.wait_look, asked, settings, any_=any,
                                               seen=seen, gone=gone)
                elapsed = time.monotonic() - start
                if over or (timeout is not None and elapsed >= timeout):
                    removed = ops.removed_of(asked, gone)
                    return verbs.wait_result(ops.WaitResult(views, not over, elapsed, removed))
                await _sleep(waker, ops.wait_interval(timeout, elapsed))
    except ZapcliError as exc:
        raise verbs.respelled(exc) from None


async def list(**options: Any) -> Listing:  # noqa: A001 - `zapcli list`
    """`zapcli.api.list`, in the executor."""
    return await _in_thread(verbs.list_, **options)  # type: ignore[no-any-return]


async def kill(ids: verbs.Ids | None = None, **options: Any) -> KillResult:
    """`zapcli.api.kill`, in the executor (it waits up to the grace period)."""
    return await _in_thread(verbs.kill, ids, **options)  # type: ignore[no-any-return]


async def output(id: str, *, stderr: bool = False) -> CapturedOutput:  # noqa: A002
    """`zapcli.api.output`, in the executor."""
    return await _in_thread(verbs.output, id, stderr=stderr)  # type: ignore[no-any-return]


async def send(id: str, text: str) -> Sent:  # noqa: A002
    """`zapcli.api.send`, in the executor."""
    return await _in_thread(verbs.send, id, text)  # type: ignore[no-any-return]


async def approve(id: str, req: str | None = None) -> Decision:  # noqa: A002
    """`zapcli.api.approve`, in the executor."""
    return await _in_thread(verbs.approve, id, req)  # type: ignore[no-any-return]


async def deny(id: str, req: str | None = None, reason: str | None = None) -> Decision:  # noqa: A002
    """`zapcli.api.deny`, in the executor."""
    return await _in_thread(verbs.deny, id, req, reason)  # type: ignore[no-any-return]

