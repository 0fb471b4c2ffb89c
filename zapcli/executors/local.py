"""The local executor: the runner is a detached process on this machine.

Imports `zapcli.supervisor` (psutil only where a kill needs it). Its
`process` record fields are `pid` and `create_time`; liveness is `kill -0`
plus the create time (a reused pid is not ours, a zombie is dead).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from zapcli.executors.base import Collected, Executor, Launched, Liveness, Signalled

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


FOREIGN_SLACK_S = 10.0  # as the observer's deadline slack
FOREIGN_LATE = ("its runner ran in another pid namespace (a container?) and did not end by its "
                "deadline; zapcli cannot see it from here")


def _foreign(process: Mapping[str, Any]) -> bool:
    """Launched from another pid namespace than this process's."""
    from zapcli.supervisor.procfs import pid_namespace

    recorded = process.get("pidns")
    here = pid_namespace() if isinstance(recorded, int) else None
    return here is not None and recorded != here


class LocalExecutor(Executor):
    name = "local"
    summary = "this machine"

    def launch(self, sid: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str,
               stderr_path: Path) -> Launched:
        from zapcli.supervisor.launch import launch_detached
        from zapcli.supervisor.procfs import pid_namespace

        pid, ctime = launch_detached(argv, env=env, cwd=cwd, stderr_path=stderr_path)
        return Launched({"pid": pid, "create_time": ctime, "pidns": pid_namespace()})

    def alive(self, process: Mapping[str, Any]) -> Liveness:
        from zapcli.supervisor.liveness import is_alive

        if _foreign(process):  # its pid means another process here: it cannot be told
            late = process.get("deadline_mono")
            if isinstance(late, (int, float)) and time.monotonic() > late + FOREIGN_SLACK_S:
                return Liveness(False, FOREIGN_LATE)
            return Liveness(None, "its runner runs in another pid namespace (a container?)")
        return Liveness(is_alive(process.get("pid"), process.get("create_time")))

    def signal(self, process: Mapping[str, Any], grace_s: float) -> Signalled:
        """TERM+CONT the runner's tree, KILL what is left after `grace_s`. When
        the runner itself is already dead, end what is left of its process
        group (its work, re-parented to init), never a stranger's."""
        pid, ctime = process.get("pid"), process.get("create_time")
        if not isinstance(pid, int) or not isinstance(ctime, (int, float)) or _foreign(process):
            return Signalled()  # a pid of another namespace is never signalled here
        from zapcli.supervisor.kill import kill_orphans, kill_tree
        from zapcli.supervisor.liveness import is_alive

        if is_alive(pid, ctime):
            report = kill_tree(pid, float(ctime), grace_s)
        else:
            report = kill_orphans(pid, float(ctime), grace_s, leader_ctime=float(ctime))
        return Signalled(report.termed, report.killed, root_alive=report.root_alive)

    def collect(self, sid: str, process: Mapping[str, Any]) -> Collected:
        """Nothing to bring home: the runner writes this machine's state folder."""
        return Collected(ended=True)
