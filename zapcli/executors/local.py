"""The local executor: the runner is a detached process on this machine.

Imports `zapcli.supervisor` (psutil only where a kill needs it). Its
`process` record fields are `pid` and `create_time`; liveness is `kill -0`
plus the create time (a reused pid is not ours, a zombie is dead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from zapcli.executors.base import Collected, Executor, Launched, Liveness, Signalled

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


class LocalExecutor(Executor):
    name = "local"

    def launch(self, sid: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str,
               stderr_path: Path) -> Launched:
        from zapcli.supervisor.launch import launch_detached

        pid, ctime = launch_detached(argv, env=env, cwd=cwd, stderr_path=stderr_path)
        return Launched({"pid": pid, "create_time": ctime})

    def alive(self, process: Mapping[str, Any]) -> Liveness:
        from zapcli.supervisor.liveness import is_alive

        return Liveness(is_alive(process.get("pid"), process.get("create_time")))

    def signal(self, process: Mapping[str, Any], grace_s: float) -> Signalled:
        """TERM+CONT the runner's tree, KILL what is left after `grace_s`. When
        the runner itself is already dead, end what is left of its process
        group (its work, re-parented to init), never a stranger's."""
        pid, ctime = process.get("pid"), process.get("create_time")
        if not isinstance(pid, int) or not isinstance(ctime, (int, float)):
            return Signalled()
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
