"""The executor seam: launch, alive, signal, collect.

Imports only the standard library. An executor starts the runner of one
subagent (`zapcli run --subagent --id ID`) somewhere and answers three later
questions about it from the facts its `launch` recorded in the `process`
record: is it alive, stop it, and bring its records and output home.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Launched:
    """What `launch` found out, for the `process` record: local, `pid` and
    `create_time`; a cluster, its job id and address."""

    fields: dict[str, Any]


@dataclass(frozen=True)
class Liveness:
    """`alive` True/False, or None when it cannot be told now (the cluster is
    unreachable); `reason` says why it is dead or unknown."""

    alive: bool | None
    reason: str | None = None


@dataclass
class Signalled:
    """What `signal` did: process ids (or job ids) terminated and killed."""

    termed: list[Any] = field(default_factory=list)
    killed: list[Any] = field(default_factory=list)
    root_alive: bool = False  # the runner itself was still alive when signalled


class Executor:
    name: str = ""

    def launch(self, sid: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str,
               stderr_path: Path) -> Launched:
        """Start the runner; raise OSError (or ExecutorError) when it cannot be started."""
        raise NotImplementedError

    def alive(self, process: Mapping[str, Any]) -> Liveness:
        raise NotImplementedError

    def signal(self, process: Mapping[str, Any], grace_s: float) -> Signalled:
        """TERM the runner's whole tree, KILL what is left after `grace_s`."""
        raise NotImplementedError

    def collect(self, sid: str, process: Mapping[str, Any]) -> None:
        """Bring the runner's trail records and captured output into this
        machine's state folder (local: nothing to do)."""
