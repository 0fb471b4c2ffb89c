"""`zapcli output`: the whole captured output, unfolded, optionally followed.

Imports `zapcli.lifecycle`, `zapcli.trail.store`. Yields raw byte chunks; the
CLI decides how to show them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

from zapcli.lifecycle.observe import needs_collect, observe
from zapcli.trail import store
from zapcli.trail.model import Status
from zapcli.trail.reader import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.config import Settings

FOLLOW_TICK_S = 0.25


def chunks(sid: str, *, stderr: bool = False, follow: bool = False,
           settings: Callable[[], Settings] | None = None) -> Iterator[bytes]:
    """Yield the captured bytes of `sid`; with `follow`, keep yielding new bytes
    until the subagent is terminal. Raises NotFound for an unknown id.
    `settings` gives the (leniently loaded) settings when a queued subagent
    needs a slot; the CLI's warns about an invalid config once."""
    sid = store.resolve(sid)
    if needs_collect(load(sid)):  # validates the id; a remote runner's output comes home first
        observe(sid)
    path = store.path_for(sid, ".err" if stderr else ".out")
    offset = 0
    while True:
        try:
            fd = store.open_read(path)
        except FileNotFoundError:
            fd = -1
        if fd >= 0:
            try:
                while True:
                    data = os.pread(fd, 65536, offset)
                    if not data:
                        break
                    offset += len(data)
                    yield data
            finally:
                os.close(fd)
        view = observe(sid) if follow else None
        if view is not None and view.status == Status.QUEUED:
            _kick(view.session, settings)  # an observer seeing a queued one uses a free slot (§6.4)
        if view is None or view.terminal:
            if follow and fd >= 0:
                continue_once = _drain_rest(path, offset)
                if continue_once:
                    yield continue_once
            return
        time.sleep(FOLLOW_TICK_S)


def _kick(session: str, settings: Callable[[], Settings] | None) -> None:
    from zapcli.backends.sections import OWNERS
    from zapcli.config import load_settings
    from zapcli.lifecycle import queue

    try:
        queue.drain(session, settings() if settings else load_settings(lenient=True, owners=OWNERS))
    except Exception:  # noqa: BLE001 - the queue is best effort for observers
        pass


def _drain_rest(path, offset: int) -> bytes:
    try:
        fd = store.open_read(path)
    except OSError:
        return b""
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, max(size - offset, 0), offset) if size > offset else b""
    finally:
        os.close(fd)
