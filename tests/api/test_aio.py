"""`zapcli.api.aio` with real subagents: the event loop keeps running while
`wait` and `poll` wait (a coroutine that runs only if the loop does is what
lets the subagent end), the end wakes them through inotify (with the
fallback look pushed out of reach), and cancelling leaves the subagent
running."""

from __future__ import annotations

import asyncio

import pytest

import zapcli
from zapcli.api import Status, aio

GATED = "while [ ! -e go ]; do sleep 0.05; done; echo went"


async def _open_the_gate_while(waiting: asyncio.Task, zap, ticks: int = 25) -> int:
    """Tick on the loop while `waiting` runs, then let the subagent end."""
    ran = 0
    for _ in range(ticks):
        await asyncio.sleep(0.02)
        assert not waiting.done()
        ran += 1
    (zap.cwd / "go").write_text("")
    return ran


def test_the_loop_runs_while_wait_waits(zap, monkeypatch):
    """If aio.wait blocked the loop, the gate would never open: the wait
    would time out instead of seeing the subagent complete."""
    monkeypatch.setattr("zapcli.ops.poll.TICK_S", 30.0)  # no fallback look: only the inotify wake

    async def main():
        sid = (await aio.spawn(GATED, cli="sh", cwd=zap.cwd)).id
        waiting = asyncio.create_task(aio.wait([sid], timeout=20))
        ran = await _open_the_gate_while(waiting, zap)
        return ran, await waiting, sid

    ran, done, sid = asyncio.run(main())
    assert ran == 25
    assert not done.timed_out and done.subagents[0].status is Status.COMPLETED, done
    assert done.waited_s < 20
    assert zapcli.output(sid).text == "went\n"


def test_the_loop_runs_while_poll_waits(zap, monkeypatch):
    monkeypatch.setattr("zapcli.ops.poll.TICK_S", 30.0)

    async def main():
        sid = (await aio.spawn(GATED, cli="sh", cwd=zap.cwd)).id
        polling = asyncio.create_task(aio.poll(sid, wait_secs=30))
        await _open_the_gate_while(polling, zap)
        return await polling

    res = asyncio.run(main())
    assert res.waited_s < 25  # woken by the end, not by the (30 s) fallback look
    (sub,) = res.subagents
    assert sub.status is Status.COMPLETED and sub.output is not None and sub.output.text == "went\n"


def test_cancelling_a_wait_leaves_the_subagent_running(zap):
    async def main():
        sid = (await aio.spawn("sleep 60", cli="sh")).id
        waiting = asyncio.create_task(aio.wait(sid))
        await asyncio.sleep(0.3)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        still = (await aio.poll(sid, no_wait=True)).subagents[0]
        killed = await aio.kill([sid], grace=1)
        return still, killed, await aio.list()

    still, killed, listed = asyncio.run(main())
    assert still.status is Status.RUNNING
    assert killed.subagents[0].stopped
    assert listed.subagents[0].status is Status.CANCELLED


def test_many_waits_at_once_on_one_loop(zap):
    async def main():
        ids = [(await aio.spawn(f"sleep 0.{n}; echo {n}", cli="sh")).id for n in range(1, 5)]
        results = await asyncio.gather(*(aio.wait([sid], timeout=30) for sid in ids))
        outs = await asyncio.gather(*(aio.output(sid) for sid in ids))
        return results, outs

    results, outs = asyncio.run(main())
    assert all(r.all_completed for r in results)
    assert [o.text for o in outs] == ["1\n", "2\n", "3\n", "4\n"]


def test_errors_arrive_as_the_same_family(zap):
    async def main():
        with pytest.raises(zapcli.NotFound):
            await aio.wait(["sa_20260101_0badc0de"])
        with pytest.raises(zapcli.UsageError) as exc:
            await aio.poll(["sa_20260101_0badc0de"], wait_secs=-1)
        return str(exc.value)

    assert "`wait_secs`" in asyncio.run(main())
