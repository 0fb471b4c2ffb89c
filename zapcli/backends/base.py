"""The backend seam: what a runner runs, and how its work becomes records.

Imports `zapcli.trail.model` and, for types only, the writer and capture.
A backend gets a `RunContext` — the frozen spawn record, the task, the
trail writer, the capped stdout/stderr files, the deadline and the SIGTERM
event — and returns the `Outcome` its runner records. It never writes the
terminal status itself; the runner ends the subagent.
"""

from __future__ import annotations

from collections.abc import Callable

from zapcli.plain import plain
from zapcli.trail.model import Outcome, SpawnRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading

    from zapcli.supervisor.capture import CappedFile
    from zapcli.trail.writer import TrailWriter


@plain
class RunContext:
    """Everything a backend may use. `stop_grace()` is the grace (seconds)
    the work gets after a SIGTERM: the one a `zapcli kill --grace` asked for,
    else the spawn's `kill_grace_s`."""

    sid: str
    spawn: SpawnRecord
    task: str
    writer: TrailWriter
    out: CappedFile
    err: CappedFile
    deadline_mono: float
    terminated: threading.Event
    stop_grace: Callable[[], float]


class Backend:
    """One kind of work. `in_process` backends run inside the runner's own
    interpreter (the built-in agent), so the runner also arms its watchdog
    and the SIGALRM backstop; the others run a child process the backend
    itself ends at the deadline."""

    name: str = ""
    in_process: bool = False

    def run(self, ctx: RunContext) -> Outcome:
        raise NotImplementedError
