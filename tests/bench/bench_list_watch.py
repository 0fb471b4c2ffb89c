"""CPU per refresh of `list --watch` at 1,000 subagents on disk (issue 29:
goal <= half of today's).

Usage: .venv/bin/python tests/bench/bench_list_watch.py [--refreshes 20] [--finished 1000] [--running 20]

From a compiled, non-editable copy, state in a temp folder: `--finished`
finished subagents made with the store API (`_fixtures.make_finished`) and
`--running` real `sleep` sh subagents, one session. Then, in this process,
one refresh of the watch's frame (the list, its lines, the rich Texts the
live table draws) timed with `time.process_time`:

- today: `list_subagents` each refresh (what `list --watch` did: every
  listed subagent observed, its trail read again);
- feed: `ops.listing.Watch.refresh` with the change feed's answer
  (`lifecycle.feed.Feed.changes`), which re-reads only changed trails.

Each for the default list (the 20 newest), `--limit 0` (every one) and
`--all --limit 0`, and once more with two running trails growing before
every refresh. The two ways alternate refresh by refresh; the figure is
the median CPU ms per refresh and the ratio feed / today (goal <= 0.5).
"""

from __future__ import annotations

import argparse
import statistics
import time

import _install


def frame_cost(render, res) -> None:
    """What `list --watch` draws from a result, short of the terminal."""
    from rich.console import Group
    from rich.text import Text

    lines = render.lines(res) + [("dim", "(updated 12:00:00; Ctrl-C to stop)")]
    Group(*(Text(text, style=style or "") for style, text in lines))


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--refreshes", type=int, default=20)
    ap.add_argument("--finished", type=int, default=1000)
    ap.add_argument("--running", type=int, default=20)
    opts = ap.parse_args()
    inst = _install.build()
    running: list[str] = []
    try:
        home = inst.new_home("watch")
        inst.use_in_process(home, "bench-watch")
        import _fixtures

        env = inst.env(home, session="bench-watch")
        _fixtures.make_finished("bench-watch", opts.finished, cwd=str(inst.scratch))
        running = [inst.run(inst.zapcli("spawn", "--cli", "sh", "--timeout", "600", "--", "sleep 300"),
                            env).stdout.decode().strip() for _ in range(opts.running)]
        time.sleep(1.0)  # their starts land
        print(f"# {opts.finished} finished + {opts.running} running subagents on disk; "
              f"{opts.refreshes} refreshes each, alternating")
        for label, kw in (("default", {}), ("limit0", {"limit": 0}),
                          ("all_limit0", {"limit": 0, "all_sessions": True})):
            measure(label, kw, opts.refreshes, [])
        measure("default_2_growing", {}, opts.refreshes, running[:2])
    finally:
        if running:
            inst.run(inst.zapcli("kill", "--grace", "1", *running), inst.env(home, session="bench-watch"),
                     check=False, timeout=120)
        inst.cleanup()
    return 0


def measure(label: str, kw: dict, refreshes: int, growing: list[str]) -> None:
    from zapcli.cli.settings import for_observers
    from zapcli.lifecycle.feed import Feed
    from zapcli.ops.listing import Watch, list_subagents
    from zapcli.render import listing as render
    from zapcli.trail import store

    settings = for_observers()
    watch = Watch(settings, **kw)
    today_ms, feed_ms = [], []
    with Feed(session=None if kw.get("all_sessions") else watch.session, suffixes=(".jsonl",)) as feed:
        frame_cost(render, watch.refresh(None))  # the watch's first refresh reads what it shows
        frame_cost(render, list_subagents(settings, **kw))
        for n in range(refreshes + 2):
            for sid in growing:
                store.append(store.path_for(sid), "diagnostic",
                             {"dimension": "bench", "name": "tick", "message": f"refresh {n}"})
            time.sleep(0.05)  # the kernel's events arrive
            t0 = time.process_time()
            frame_cost(render, watch.refresh(feed.changes(0)))
            t1 = time.process_time()
            frame_cost(render, list_subagents(settings, **kw))
            t2 = time.process_time()
            if n >= 2:  # warm-up
                feed_ms.append((t1 - t0) * 1000)
                today_ms.append((t2 - t1) * 1000)
    today, fed = statistics.median(today_ms), statistics.median(feed_ms)
    print(f"list_watch_cpu_ms_per_refresh_{label} feed {fed:.2f}  today {today:.2f}  "
          f"ratio_feed_vs_today {_install.fmt_ratio(fed, today)}  (goal <= 0.5)")


if __name__ == "__main__":
    raise SystemExit(main())
